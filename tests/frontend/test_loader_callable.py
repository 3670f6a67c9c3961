"""MODEL as an importable callable, ``package.module:callable`` with ``--input-shape``: loading,
torchvision's own model code, the one-line errors, and the CLI path (spec recorded with its
shape)."""

import json
import subprocess
import sys

import pytest
import torch

from pycde_accel import cli
from pycde_accel.errors import UserError
from pycde_accel.frontend import loader
from pycde_accel.frontend.loader import callable_spec, is_callable_spec, load_model

PKG = """\
import torch
from torch import nn


def small():
    return nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 3))


def not_a_module():
    return 42


def needs_args(width):
    return nn.Linear(width, 2)


VALUE = 3
"""


@pytest.fixture
def pkg(tmp_path, monkeypatch):
    """An importable package ``fe_models`` with a module ``nets`` (on sys.path for this test)."""
    root = tmp_path / "pkgroot"
    (root / "fe_models").mkdir(parents=True)
    (root / "fe_models" / "__init__.py").write_text("")
    (root / "fe_models" / "nets.py").write_text(PKG)
    monkeypatch.syspath_prepend(str(root))
    yield root
    for k in [k for k in sys.modules if k.startswith("fe_models")]:
        del sys.modules[k]


def test_spec_forms():
    assert is_callable_spec("torchvision.models:resnet18")
    assert is_callable_spec("torchvision.models:resnet18 --input-shape 1x3x32x32")
    assert is_callable_spec("pkg:f")
    for spec in ("mlp", "model.py:build", "examples/lenet5.py", "a.b:c()", "a.b:c; import os",
                 "a.b:", ":f", "a..b:f", None):
        assert not is_callable_spec(spec), spec
    assert callable_spec("a.b:f", "1X3x32x32") == "a.b:f --input-shape 1x3x32x32"
    assert callable_spec("a.b:f", "2x8", "float32") == "a.b:f --input-shape 2x8"
    assert callable_spec("a.b:f", "2x8", "float64") == "a.b:f --input-shape 2x8 --input-dtype float64"
    assert callable_spec("examples/mlp.py", None, None) == "examples/mlp.py"


def test_loads_a_callable_with_a_seeded_input(pkg):
    spec = callable_spec("fe_models.nets:small", "2x8", "float64")
    m = load_model(spec)
    assert isinstance(m.module, torch.nn.Sequential) and not m.module.training
    assert m.name == "small" and m.spec == spec and m.file is None and not m.builtin
    (x,) = m.example_inputs
    assert x.shape == (2, 8) and x.dtype == torch.float64
    again = load_model(spec)                              # the same model and input every time
    assert torch.equal(again.example_inputs[0], x)
    assert torch.equal(again.module[0].weight, m.module[0].weight)
    assert m.fallback_source == "nets.py:5"      # the callable (nn.Sequential is torch's)


def test_torchvision_model_code_loads():
    """torchvision's CUDA build imports through the compatibility step (docs/toolchain.md)."""
    m = load_model(callable_spec("torchvision.models:resnet18", "1x3x32x32"))
    assert type(m.module).__name__ == "ResNet"
    assert m.fallback_source.startswith("torchvision/models/resnet.py:")
    assert m.example_inputs[0].shape == (1, 3, 32, 32)
    assert m.example_inputs[0].dtype == torch.float32


def test_torchvision_import_in_a_fresh_process():
    code = ("from pycde_accel.frontend.loader import import_module\n"
            "m = import_module('torchvision.models')\n"
            "print(type(m.squeezenet1_1()).__name__)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "SqueezeNet"


def test_import_module_passes_other_errors_through(pkg):
    (pkg / "fe_models" / "broken.py").write_text("raise RuntimeError('something else')\n")
    with pytest.raises(RuntimeError, match="something else"):
        loader.import_module("fe_models.broken")


@pytest.mark.parametrize("spec, expect", [
    ("no_such_pkg_fe.mod:f --input-shape 1x8",
     "model no_such_pkg_fe.mod:f: module no_such_pkg_fe.mod is not importable: "
     "ModuleNotFoundError: No module named 'no_such_pkg_fe'"),
    ("fe_models.nets:absent --input-shape 1x8",
     "model fe_models.nets:absent: module fe_models.nets has no attribute 'absent'"),
    ("fe_models.nets:VALUE --input-shape 1x8",
     "model fe_models.nets:VALUE: VALUE is a int, not a callable"),
    ("fe_models.nets:not_a_module --input-shape 1x8",
     "model fe_models.nets:not_a_module: fe_models.nets:not_a_module() returned a int, "
     "not a torch.nn.Module"),
    ("fe_models.nets:needs_args --input-shape 1x8",
     "model fe_models.nets:needs_args: fe_models.nets:needs_args() raised TypeError: "),
    ("fe_models.nets:small",
     "model fe_models.nets:small: a package.module:callable model needs --input-shape "
     "(e.g. --input-shape 1x3x32x32)"),
    ("fe_models.nets:small --input-shape 1xeight", "--input-shape '1xeight': expected positive "
                                                   "dimensions joined by x, e.g. 1x3x32x32"),
    ("fe_models.nets:small --input-shape 1x8 --input-dtype int8",
     "--input-dtype 'int8': expected a floating-point torch dtype"),
])
def test_errors_are_one_line(pkg, spec, expect):
    with pytest.raises(UserError) as e:
        load_model(spec)
    assert str(e.value).startswith(expect), str(e.value)
    assert "\n" not in str(e.value)


def _run(capsys, argv):
    code = cli.main(argv)
    return code, capsys.readouterr()


@pytest.mark.parametrize("argv, expect", [
    (["gen", "fe_models.nets:small"], "needs --input-shape"),
    (["gen", "fe_models.nets:small", "--input-shape", "0x8"], "--input-shape '0x8'"),
    (["gen", "mlp", "--input-shape", "1x8"], "apply to a package.module:callable MODEL only"),
    (["gen", "--input-dtype", "float64"], "apply to a package.module:callable MODEL only"),
    (["gen", "fe_models.nets:small", "--input-dtype", "float64"], "needs --input-shape too"),
    (["sim", "fe_models.nets:small"], "needs --input-shape"),
    (["dse", "fe_models.nets:small"], "needs --input-shape"),
    (["report", "fe_models.nets:nope", "--input-shape", "1x8"], "has no attribute 'nope'"),
])
def test_cli_errors(pkg, tmp_path, capsys, argv, expect):
    out = tmp_path / "out"
    code, cap = _run(capsys, argv + ["--out", str(out)])
    assert code == 2
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expect in lines[0], cap.err
    assert not out.exists()


def test_cli_gen_records_the_shape(pkg, tmp_path, capsys):
    out = tmp_path / "out"
    code, cap = _run(capsys, ["gen", "fe_models.nets:small", "--input-shape", "2x8",
                              "--out", str(out)])
    assert code == 0, cap.err
    design = json.loads((out / "design.json").read_text())
    assert design["model"] == {"name": "small", "spec": "fe_models.nets:small --input-shape 2x8"}
    # report/sim without MODEL load the model the folder holds, shape included
    assert cli._held_model(out) == "fe_models.nets:small --input-shape 2x8"
