"""Bad input on every subcommand that takes a model (gen, sim, synth, report): one ``error:``
line on stderr, exit code 2, no traceback, and no output folder (nor staging folder) left."""

import pytest

from pycde_accel import cli

OK = """\
import torch
from torch import nn


def build():
    return nn.Sequential(nn.Linear(4, 8)), (torch.randn(1, 4),)


def wrong():
    return nn.Sequential(nn.Linear(4, 8)), [1, 2]
"""

UNSUPPORTED = """\
import torch
from torch import nn


class CumSum(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 1)


def build():
    return nn.Sequential(nn.Linear(4, 8), CumSum()), (torch.randn(1, 4),)
"""

SUBCOMMANDS = ("gen", "sim", "synth", "report")

CASES = {
    # name: (files to write, argv after the subcommand (OUT = the output folder), expected text)
    "missing_model_file": ({}, ["{d}/absent.py"], "model file {d}/absent.py does not exist"),
    "no_function": ({"m.py": OK}, ["{d}/m.py:nothing"], "model file m.py has no function 'nothing'"),
    "wrong_types": ({"m.py": OK}, ["{d}/m.py:wrong"],
                    "m.py:wrong() must return (torch.nn.Module, tuple_of_example_tensors), got a "
                    "int as example input 0"),
    "unsupported_op": ({"m.py": UNSUPPORTED}, ["{d}/m.py"], "unsupported op aten.cumsum"),
    "array_0x8": ({}, ["--array", "0x8"], "--array 0x8: rows and cols must be >= 1"),
    "unknown_target": ({}, ["--target", "virtex9000"], "unknown target 'virtex9000'; known targets: "),
    "out_under_a_file": ({"afile": "x"}, ["--out", "{d}/afile/out"], "--out {d}/afile/out: cannot write there"),
    "out_is_a_file": ({"afile": "x"}, ["--out", "{d}/afile"], "--out {d}/afile: exists and is not a folder"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_bad_input(tmp_path, capsys, command, case):
    files, args, expect = CASES[case]
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    out = tmp_path / "out"
    argv = [a.format(d=tmp_path) for a in args]
    if "--out" not in argv:
        argv += ["--out", str(out)]
    before = sorted(p.name for p in tmp_path.iterdir())
    code = cli.main([command, *argv])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    assert expect.format(d=tmp_path) in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before       # nothing created
    assert (tmp_path / "afile").is_file() if "afile" in files else True


def test_unknown_schedule_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["gen", "--schedule", "systolic"])
    assert e.value.code == 2
    assert "invalid choice: 'systolic'" in capsys.readouterr().err


def test_help_of_every_subcommand_has_examples(capsys):
    for command in ("gen", "sim", "synth", "report"):
        with pytest.raises(SystemExit) as e:
            cli.main([command, "--help"])
        assert e.value.code == 0
        text = capsys.readouterr().out
        assert "examples:" in text and f"python -m pycde_accel {command}" in text
        for flag in ("--out", "--array", "--target", "--schedule", "--seed", "--debug"):
            assert flag in text, (command, flag)
        if command in ("sim", "report"):
            assert "--waves" in text
