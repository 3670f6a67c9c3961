"""The CLI's output folders with relative ``--out`` paths (spaces, ``..``): ``sim`` runs there
(the native harness gets absolute paths whatever folder it runs in), ``report`` without a model
reports the design the folder holds, reusing its simulation and keeping what was there."""

import json

import pytest

from pycde_accel import cli
from pycde_accel.errors import UserError
from pycde_accel.outdir import MARKER
from pycde_accel.sim import runner

TINY = """\
import torch
from torch import nn


def build():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU()), (torch.randn(1, 8),)
"""


def test_sim_then_report_with_a_relative_out(tmp_path, tmp_path_factory, monkeypatch, capsys):
    monkeypatch.setenv("PYCDE_ACCEL_CACHE", str(runner.pytest_cache_root(tmp_path_factory)))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.py").write_text(TINY)
    (tmp_path / "a b").mkdir()
    out = "a b/../out dir/net"
    assert cli.main(["sim", "tiny.py", "--out", out]) == 0, capsys.readouterr().err
    assert "bit-exact with the integer reference: yes" in capsys.readouterr().out
    final = tmp_path / "out dir" / "net"
    result = json.loads((final / "sim" / "result.json").read_text())
    assert result["bit_exact"] and (final / MARKER).is_file()
    plan = (final / "sim" / "run" / "plan.json").read_text()
    assert str(tmp_path) not in plan                       # relative to its folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a b", "out dir", "tiny.py"]

    # no MODEL: the model the folder holds; its simulation is reused, sim/ is kept
    (final / "sim" / "keep.txt").write_text("kept")
    assert cli.main(["report", "--out", out]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "tiny.py:build on 8x8" in printed
    assert "tiny.py:build" in (final / "report.json").read_text()
    assert (final / "sim" / "keep.txt").read_text() == "kept"
    assert (final / "report.md").is_file() and (final / "report.html").is_file()
    assert sorted(p.name for p in (tmp_path / "out dir").iterdir()) == ["net"]


def test_report_names_a_held_model_file_that_is_not_here(tmp_path, monkeypatch):
    out = tmp_path / "out"
    (out / "sim").mkdir(parents=True)
    (out / MARKER).write_text("x")
    (out / "sim" / "result.json").write_text(json.dumps({"model": "gone.py:build"}))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match="name its model file"):
        cli._held_model(out)
    (out / "design.json").write_text(json.dumps({"model": {"name": "lenet5", "spec": "lenet5"}}))
    assert cli._held_model(out) == "lenet5"
    assert cli._held_model(tmp_path / "absent") is None
