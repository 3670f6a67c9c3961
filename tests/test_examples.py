"""Every model file in examples/ goes through the frontend and the back end, bit-exact."""

from pathlib import Path

import numpy as np
import pytest

from pycde_accel import frontend
from pycde_accel.backend import cmdexec, compile_program, executor
from pycde_accel.config import AccelConfig
from pycde_accel.frontend import reference

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_compiles_bit_exact(path):
    fe = frontend.run(str(path), seed=0, eval_batches=10)
    assert fe.accuracy["top1_agreement"] >= 0.9
    compiled = compile_program(fe.quantized, AccelConfig(rows=4, cols=4, axi_data_width=32))
    x = reference.quantize_inputs(
        fe.quantized, [t.detach().double().numpy() for t in fe.model.example_inputs])
    want = reference.run(fe.quantized, x)
    for run in (executor.run, cmdexec.run):        # the layer descriptors and the commands
        got, _ = run(compiled, x)
        assert len(got) == len(want.outputs) >= 1
        for o, r in zip(got, want.outputs):
            assert o.shape == r.shape and np.array_equal(o, r)


# ---- the examples gallery through the CLI: gen, then sim on the Verilator model ------------
GALLERY = ["mlp", "lenet5", "resblock", "tiny_attention", "transformer", "lstm"]
EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"


def test_gallery_is_there():
    assert {p.stem for p in EXAMPLES} >= set(GALLERY)


# mlp is the built-in default that tests/test_cli.py (gen) and tests/test_sim.py (sim) already run
# from the CLI, and resblock runs in tests/test_sim.py and tests/sim/test_fast_sim.py, so their
# copies here are slow-only (each case is ~1 min: gen, then sim's own emit); transformer's 81
# layers take about 2 minutes; lstm's 73 layers run in Verilator in tests/ops/test_rnn.py at a
# smaller size, so its CLI run is slow-only too.
SLOW_GALLERY = ("mlp", "resblock", "transformer", "lstm")


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_GALLERY
                                  else n for n in GALLERY])
def test_example_gen_and_sim_from_the_cli(tmp_path, tmp_path_factory, name):
    """``gen`` writes the whole output folder (SV, design.json, host/) and ``sim`` runs the
    example bit-exact; all at the default 8x8 array, so every example (and tests/test_sim.py)
    shares one Verilator build."""
    import json
    import os
    import subprocess
    import sys

    from pycde_accel.sim.runner import pytest_cache_root
    env = dict(os.environ, PYCDE_ACCEL_CACHE=str(pytest_cache_root(tmp_path_factory)))
    model, out = str(EXAMPLES_DIR / f"{name}.py"), tmp_path / "out"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "pycde_accel", *args, model, "--out", str(out)],
                              capture_output=True, text=True, env=env, timeout=1200)
    g = cli("gen")
    assert g.returncode == 0, g.stderr
    design = json.loads((out / "design.json").read_text())
    assert design["model"]["spec"] == f"{name}.py:build" and design["top"] == "pycde_accel_top"
    listed = (out / "sv" / "filelist.f").read_text().split()
    assert listed and all((out / "sv" / f).is_file() for f in listed)
    assert {p.name for p in (out / "host").iterdir()} >= {"accel_csr.h", "accel_program.h",
                                                         "accel_driver.py", "io.npz"}
    s = cli("sim")
    assert s.returncode == 0, s.stdout + s.stderr
    assert "bit-exact with the integer reference: yes" in s.stdout
    result = json.loads((out / "sim" / "result.json").read_text())
    assert result["bit_exact"] and len(result["layers"]) == len(design["program"]["layer_commands"])
    assert all(l["cycles"] > 0 for l in result["layers"])
