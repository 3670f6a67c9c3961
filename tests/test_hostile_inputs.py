"""Hostile inputs, one test each: every one ends with a single ``error:`` line on stderr naming
the problem, exit code 2, no traceback, no warning (numpy's or torch's) before it, and no output
folder (nor staging folder) left behind. All of them are refused before any lowering, so none
of these runs Verilator or CIRCT."""

from __future__ import annotations

import tempfile
import warnings

import pytest

from pycde_accel import cli
from pycde_accel.frontend import sanity

HEAD = """\
import torch
from torch import nn


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
"""

MODELS = {
    "inf_weight": """
def build():
    m = mlp()
    with torch.no_grad():
        m[0].weight[0, 0] = float("inf")
    return m, (torch.randn(1, 4),)
""",
    "nan_weight": """
def build():
    m = mlp()
    with torch.no_grad():
        m[0].weight[0, 0] = float("nan")
    return m, (torch.randn(1, 4),)
""",
    "nan_input": """
def build():
    x = torch.randn(1, 4)
    x[0, 1] = float("nan")
    return mlp(), (x,)
""",
    "inf_input": """
def build():
    x = torch.randn(2, 4)
    x[1, 2] = -float("inf")
    return mlp(), (x,)
""",
    "dict_output": """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return {"y": self.fc(x)}


def build():
    return Net(), (torch.randn(1, 4),)
""",
    "float_output": """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return float(self.fc(x).sum())


def build():
    return Net(), (torch.randn(1, 4),)
""",
    "float64_model": """
def build():
    return mlp().double(), (torch.randn(1, 4, dtype=torch.float64),)
""",
    "zero_d_input": """
def build():
    return mlp(), (torch.tensor(1.0),)
""",
    "empty_input": """
def build():
    return mlp(), (torch.randn(1, 0),)
""",
    "batch_0": """
def build():
    return mlp(), (torch.randn(0, 4),)
""",
    "memory_error": """
def build():
    raise MemoryError()
""",
    "nan_float_output": """
def build():
    m = mlp()
    with torch.no_grad():
        m[2].weight.fill_(3e38)            # finite weights, an output that overflows float32
    return m, (torch.randn(1, 4) + 5,)
""",
    "huge_linear": """
def build():
    # on the meta device: the refusal must come from the shapes alone, before any value
    return nn.Sequential(nn.Linear(20000, 20000, device="meta")), (torch.randn(1, 20000),)
""",
}


def run_cli(tmp_path, capfd, argv, *, files=None):
    """cli.main(argv) with ``{d}`` in argv the test folder; returns (code, stderr lines,
    warnings) after checking that nothing new is left in the folder."""
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    argv = [a.format(d=tmp_path) for a in argv]
    before = sorted(p.name for p in tmp_path.iterdir())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = cli.main(argv)
    err = capfd.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "an output folder was left"
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert not [str(w.message) for w in caught], [str(w.message) for w in caught]
    return lines[0]


def gen_model(tmp_path, capfd, name, **kw):
    return run_cli(tmp_path, capfd, ["gen", "{d}/m.py", "--out", "{d}/out", *kw.get("args", [])],
                   files={"m.py": HEAD + MODELS[name]})


def test_inf_weight(tmp_path, capfd):
    line = gen_model(tmp_path, capfd, "inf_weight")
    assert "weight 0.weight holds inf (1 of 32 values): weights must be finite" in line


def test_nan_weight_is_not_blamed_on_the_accumulators(tmp_path, capfd):
    line = gen_model(tmp_path, capfd, "nan_weight")
    assert "weight 0.weight holds NaN (1 of 32 values)" in line and "accumulator" not in line


def test_nan_input(tmp_path, capfd):
    assert "example input 0 holds NaN (1 of 4 values): inputs must be finite" in \
        gen_model(tmp_path, capfd, "nan_input")


def test_inf_input(tmp_path, capfd):
    assert "example input 0 holds inf (1 of 8 values)" in gen_model(tmp_path, capfd, "inf_input")


def test_forward_returning_a_dict(tmp_path, capfd):
    assert "the model's forward returns a dict: it must return a tensor or a tuple of tensors" \
        in gen_model(tmp_path, capfd, "dict_output")


def test_forward_returning_a_python_float(tmp_path, capfd):
    line = gen_model(tmp_path, capfd, "float_output")
    assert "the model's forward returns a float" in line and "dynamic" not in line


def test_float64_model(tmp_path, capfd):
    assert "weight 0.weight is float64: only float32 models are supported (convert it with " \
           "model.float())" in gen_model(tmp_path, capfd, "float64_model")


def test_0d_input(tmp_path, capfd):
    assert "example input 0 is 0-d (a scalar)" in gen_model(tmp_path, capfd, "zero_d_input")


def test_empty_input(tmp_path, capfd):
    assert "example input 0 of shape [1, 0] has no elements" in gen_model(tmp_path, capfd, "empty_input")


def test_batch_0_input(tmp_path, capfd):
    assert "example input 0 has batch size 0 (shape [0, 4])" in gen_model(tmp_path, capfd, "batch_0")


def test_memory_error_in_build(tmp_path, capfd):
    assert "m.py:build() ran out of memory (MemoryError)" in gen_model(tmp_path, capfd, "memory_error")


def test_float_output_already_inf(tmp_path, capfd):
    line = gen_model(tmp_path, capfd, "nan_float_output")
    assert "the model's float output 0 on its example input holds inf" in line


def test_model_too_large_for_the_machine_is_refused_up_front(tmp_path, capfd, monkeypatch):
    monkeypatch.setattr(sanity, "available_bytes", lambda: 8 << 30)
    line = gen_model(tmp_path, capfd, "huge_linear")
    assert "the model has 400,020,000 weights: compiling it needs about 24.4 GB of memory, and " \
           "8.0 GB are available" in line


def test_negative_seed(tmp_path, capfd):
    assert "--seed must be >= 0, got -1" in run_cli(
        tmp_path, capfd, ["gen", "--seed", "-1", "--out", "{d}/out"])


def test_folder_named_like_a_model_file(tmp_path, capfd):
    (tmp_path / "x.py").mkdir()
    assert f"model file {tmp_path}/x.py is a folder, not a Python file" in run_cli(
        tmp_path, capfd, ["gen", "{d}/x.py", "--out", "{d}/out"])


def test_dse_rows_0_is_blamed_on_rows(tmp_path, capfd):
    line = run_cli(tmp_path, capfd, ["dse", "--rows", "0", "--confirm", "0", "--out", "{d}/out"])
    assert "dse: --rows 0: every value must be >= 1" in line and "cols" not in line


def test_out_in_a_read_only_folder_names_the_parent(tmp_path, capfd, monkeypatch):
    """A writable --out whose parent refuses new folders (root ignores permission bits, so the
    refusal is the OS's answer itself, raised where the staging folder is made)."""
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "out").mkdir()

    def refuse(*a, **kw):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    line = run_cli(tmp_path, capfd, ["ir", "--stage", "00_linalg", "--out", "{d}/ro/out"])
    assert f"its parent folder {tmp_path}/ro refuses a new folder (Permission denied)" in line
    assert not list((tmp_path / "ro" / "out").iterdir())


def test_ir_unknown_kernel_leaves_no_folder(tmp_path, capfd):
    assert "--kernel nonsense: unknown; one of requantize" in run_cli(
        tmp_path, capfd, ["ir", "--kernel", "nonsense", "--stage", "00_linalg", "--out", "{d}/ir"])


@pytest.mark.parametrize("args,expect", [
    (["{d}/m.py"], "weight 0.weight holds NaN"),
    (["--axi-pause", "2"], "--axi-pause must be in [0, 1), got 2.0"),
])
def test_report_refusals_leave_no_folder(tmp_path, capfd, args, expect):
    assert expect in run_cli(tmp_path, capfd, ["report", *args, "--out", "{d}/rep"],
                             files={"m.py": HEAD + MODELS["nan_weight"]})
