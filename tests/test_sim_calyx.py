"""``sim --schedule calyx``: the accelerator with its post-op kernels lowered through calyx
(lowering/pipeline.py, STATIC_LIMIT) runs the built-in models and the examples bit-exact in
Verilator. lenet5 and resblock run in the default suite; mlp and the examples are slow-only
(transformer takes minutes). The examples named after a built-in (mlp, lenet5, resblock: other
sizes of the built-ins' op families, which the built-ins already take down the calyx route)
are left out."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pycde_accel.sim.runner import pytest_cache_root

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _sim_calyx(model, tmp_path, tmp_path_factory):
    env = dict(os.environ, PYCDE_ACCEL_CACHE=str(pytest_cache_root(tmp_path_factory)))
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "pycde_accel", "sim", model, "--schedule", "calyx",
                        "--out", str(out)], capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "bit-exact with the integer reference: yes" in r.stdout
    res = json.loads((out / "sim" / "result.json").read_text())
    assert res["config"]["schedule"] == "calyx" and res["bit_exact"] is True
    # every post-op kernel of the design went down the calyx route to SV
    kernels = sorted((out / "sim" / "kernels").iterdir())
    assert kernels
    for k in kernels:
        stages = {p.name for p in (k / "ir").iterdir()}
        assert any(s.endswith("_calyx_opt.mlir") for s in stages), (k.name, stages)
        assert any(s.endswith("_sv.mlir") for s in stages), (k.name, stages)


# lenet5 and resblock: about 18 s each on a quiet machine (the accelerator's Verilator build
# cached); mlp about a minute, so slow-only
@pytest.mark.parametrize("model", [pytest.param("mlp", marks=pytest.mark.slow), "lenet5",
                                   "resblock"])
def test_builtin_sim_calyx_bit_exact(model, tmp_path, tmp_path_factory):
    _sim_calyx(model, tmp_path, tmp_path_factory)


#: examples named after a built-in and made of its op families (not the same sizes)
BUILTIN_AGAIN = ("mlp", "lenet5", "resblock")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.py")
                                         if p.stem not in BUILTIN_AGAIN))
def test_example_sim_calyx_bit_exact(name, tmp_path, tmp_path_factory):
    _sim_calyx(str(EXAMPLES / f"{name}.py"), tmp_path, tmp_path_factory)
