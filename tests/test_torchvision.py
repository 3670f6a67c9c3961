"""torchvision's classification models as their authors wrote them (random init, batch 1),
through the CLI as a user types it: ``python -m pycde_accel sim torchvision.models:NAME
--input-shape ...`` on the default config, exit 0 only when the Verilator run is bit-exact with
the integer reference. Slow: each is a whole frontend, back end and simulation (vgg11 carries
133 M parameters)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pycde_accel.sim import runner

#: resnet18 runs as the README prints it (tests/test_documented_commands.py: the same command,
#: ``sim`` exits 1 unless bit-exact), not a second time here
MODELS = [("mobilenet_v2", "1x3x32x32"), ("squeezenet1_1", "1x3x64x64"), ("vgg11", "1x3x32x32")]
README_RUN = "python -m pycde_accel sim torchvision.models:resnet18 --input-shape 1x3x32x32 --out "


def test_the_readme_simulates_resnet18():
    from pathlib import Path
    assert README_RUN in (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _run(*args, cwd, tmp_path_factory):
    env = {**os.environ, "PYCDE_ACCEL_CACHE": str(runner.pytest_cache_root(tmp_path_factory))}
    p = subprocess.run([sys.executable, "-m", "pycde_accel", *args], capture_output=True,
                       text=True, cwd=cwd, timeout=3000, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


@pytest.mark.slow
@pytest.mark.parametrize("name,shape", MODELS, ids=[m for m, _ in MODELS])
def test_torchvision_model_simulates_bit_exact(name, shape, tmp_path, tmp_path_factory):
    out = tmp_path / name
    p = _run("sim", f"torchvision.models:{name}", "--input-shape", shape, "--out", str(out),
             cwd=tmp_path, tmp_path_factory=tmp_path_factory)
    assert "bit-exact with the integer reference: yes" in p.stdout
    res = json.loads((out / "sim" / "result.json").read_text())
    assert res["bit_exact"] is True
    # the figures are the model's MACs; the array's (channel padding included) are apart
    assert 0 < res["macs"] <= res["array_macs"]
    assert abs(res["predicted_cycles"] - res["total_cycles"]) <= 0.02 * res["total_cycles"]


@pytest.mark.slow
def test_resnet18_gen_folder_is_small(tmp_path, tmp_path_factory):
    """The IR files do not carry the weights inline: the whole gen folder of ResNet-18 (11.7 M
    parameters, so dram.bin and weights.npz are 11 MB each) stays under 40 MB."""
    out = tmp_path / "r"
    _run("gen", "torchvision.models:resnet18", "--input-shape", "1x3x32x32", "--out", str(out),
         cwd=tmp_path, tmp_path_factory=tmp_path_factory)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    assert size < 40 * 2 ** 20, size
    assert "torchvision.models:resnet18" in json.dumps(json.loads((out / "design.json").read_text())["model"])
