"""``python -m pycde_accel gen``: the frontend's part of the output, and every user error as one
stderr line, exit code 2, no traceback and no output folder left behind."""

import json
import subprocess
import sys

import pytest

from pycde_accel import cli

OK = """\
import torch
from torch import nn


def build():
    return nn.Sequential(nn.Linear(4, 3)), (torch.randn(1, 4),)


def make():
    return nn.Sequential(nn.Linear(4, 3)), torch.randn(1, 4)      # inputs not a tuple
"""


def _run(capsys, argv):
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.err


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    return lines[0]


def test_unsupported_op_subprocess(tmp_path, model_file, unsupported_line):
    """Through a real process, so that nothing else (warnings, tracebacks) reaches stderr."""
    model = model_file("net", model_file.sources["unsupported"])
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "pycde_accel", "gen", f"{model}", "--out", str(out)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode == 2, p.stderr
    line = _one_error_line(p.stderr)
    assert "unsupported op aten.cumsum" in line
    assert "features.3 (CumSum)" in line
    assert f"net.py:{unsupported_line}" in line                  # return torch.cumsum(x, 1)
    assert "supported: Linear, Conv2d" in line and "MaxPool2d" in line
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["net.py"]    # no staging folder either


@pytest.mark.parametrize("case, text, spec, expect", [
    ("dynamic", "dynamic", "{f}", "dynamic shapes are not supported"),
    ("wrong_types", OK, "{f}:make", "m.py:make() must return (torch.nn.Module, tuple_of_example_tensors), "
                                    "got a torch.Tensor as the example inputs"),
    ("no_function", OK, "{f}:nothing", "model file m.py has no function 'nothing'"),
    ("missing_file", None, "{d}/absent.py", "model file {d}/absent.py does not exist"),
    ("import_raises", "import torch\nraise RuntimeError('broken model file')\n", "{f}",
     "model file m.py raised on import: RuntimeError: broken model file"),
    ("unknown_builtin", None, "mlpx", "model 'mlpx': not a built-in (lenet5, mlp, resblock)"),
    ("acc_overflow", "import torch\nfrom torch import nn\n\n\ndef build():\n    m = nn.Linear(4, 1)\n"
                     "    with torch.no_grad():\n        m.weight.fill_(1e-6)\n        m.bias.fill_(1.0)\n"
                     "    return m, (torch.randn(1, 4),)\n", "{f}",
     "the int8 model needs wider than int32 accumulators: linear: accumulator leaves int32"),
])
def test_user_errors(tmp_path, capsys, model_file, case, text, spec, expect):
    f = tmp_path / "m.py"
    if text is not None:
        f.write_text(model_file.sources.get(text, text))
    spec = spec.format(f=f, d=tmp_path)
    out = tmp_path / "out"
    code, err = _run(capsys, ["gen", spec, "--out", str(out)])
    assert code == 2, err
    line = _one_error_line(err)
    assert expect.format(d=tmp_path) in line
    assert not out.exists()


def test_build_returning_a_non_module(tmp_path, capsys):
    f = tmp_path / "m.py"
    f.write_text("import torch\n\n\ndef build():\n    return 'model', (torch.randn(1),)\n")
    code, err = _run(capsys, ["gen", str(f), "--out", str(tmp_path / "out")])
    assert code == 2
    assert "got a str as the module" in _one_error_line(err)
    assert not (tmp_path / "out").exists()


def test_gen_writes_the_frontend_results(tmp_path, capsys):
    out = tmp_path / "out"
    code, err = _run(capsys, ["gen", "--out", str(out)])     # the default model
    assert code == 0, err
    design = json.loads((out / "design.json").read_text())
    assert {"config", "model", "graph", "quantization", "accuracy", "ir"} <= set(design)
    assert design["model"]["name"] == "mlp"
    assert design["accuracy"]["top1_agreement"] >= 0.95 and design["accuracy"]["num_rows"] >= 100
    assert (out / "weights.npz").is_file() and (out / "ir" / "00_linalg.mlir").is_file()
    assert (out / "ir" / "00_linalg_float.mlir").is_file()
    assert (out / "sv").is_dir()


@pytest.mark.slow
def test_gen_is_byte_identical_and_path_free(tmp_path, capsys):
    """The whole output (design.json, weights, IR, SV) twice from a model file: same bytes, and
    the model's folder appears nowhere in design.json."""
    model = tmp_path / "src" / "tiny.py"
    model.parent.mkdir()
    model.write_text(OK)
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        code, err = _run(capsys, ["gen", str(model), "--out", str(out), "--seed", "5"])
        assert code == 0, err
    files = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(outs[1]) for p in outs[1].rglob("*") if p.is_file())
    for f in files:
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes(), f
    text = (outs[0] / "design.json").read_text()
    assert str(tmp_path) not in text
    assert json.loads(text)["model"] == {"name": "tiny.py", "spec": "tiny.py:build"}
