"""Output folders: staged_output appears whole or not at all, only ever replaces a folder this
tool wrote (or an empty one), and refuses the folders no output may take (check_out)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pycde_accel import cli, proc
from pycde_accel.errors import UserError
from pycde_accel.outdir import MARKER, check_out, staged_output


def _tree(root: Path) -> dict:
    """Every file under ``root`` with its bytes (what 'left as it was' means)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _earlier_output(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / MARKER).write_text("x")
    (path / "design.json").write_text("{}\n")
    (path / "sv").mkdir()
    (path / "sv" / "top.sv").write_text("module top; endmodule\n")
    return path


def test_success_replaces_an_earlier_output(tmp_path):
    out = _earlier_output(tmp_path / "out")
    with staged_output(out) as stage:
        (stage / "new.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]   # no staging folder left


def test_an_empty_folder_is_taken(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with staged_output(out) as stage:
        (stage / "a").write_text("a")
    assert (out / "a").read_text() == "a" and (out / MARKER).is_file()


def test_update_carries_the_earlier_output(tmp_path):
    out = _earlier_output(tmp_path / "out")
    (out / "sim").mkdir()
    (out / "sim" / "old.json").write_text("old")
    with staged_output(out, update=True, drop=("sim",)) as stage:
        assert (stage / "sv" / "top.sv").is_file() and not (stage / "sim").exists()
        (stage / "sim").mkdir()
        (stage / "sim" / "result.json").write_text("new")
    assert (out / "sv" / "top.sv").read_text() == "module top; endmodule\n"
    assert sorted(p.name for p in (out / "sim").iterdir()) == ["result.json"]


def test_failure_leaves_nothing_behind_and_creates_no_parent(tmp_path):
    out = tmp_path / "a" / "b" / "out"
    with pytest.raises(RuntimeError):
        with staged_output(out) as stage:
            (stage / "half.txt").write_text("half")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_success_creates_the_parents(tmp_path):
    out = tmp_path / "a" / "b" / "out"
    with staged_output(out) as stage:
        (stage / "f").write_text("f")
    assert (out / "f").read_text() == "f"
    assert [p.name for p in tmp_path.iterdir()] == ["a"]
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == ["out"]


def test_failure_keeps_the_previous_output(tmp_path):
    out = _earlier_output(tmp_path / "out")
    before = _tree(out)
    for exc in (UserError("bad model"), KeyboardInterrupt()):
        with pytest.raises(type(exc)):
            with staged_output(out, update=True) as stage:
                (stage / "design.json").write_text("half")     # the copy, not the original
                raise exc
        assert _tree(out) == before
        assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_out_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UserError, match="not a folder"):
        with staged_output(f):
            pass
    assert f.read_text() == "x"


def test_unwritable_parent_is_one_clear_error(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UserError, match="cannot write"):
        with staged_output(f / "sub" / "out"):
            pass


def test_user_files_are_never_replaced(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    (mine / "sub").mkdir()
    (mine / "sub" / "data.csv").write_text("1,2\n")
    before = _tree(mine)
    with pytest.raises(UserError, match="not an output of pycde-accel"):
        with staged_output(mine):
            raise AssertionError("the block must not run")
    assert _tree(mine) == before
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]


@pytest.mark.parametrize("out, why", [
    ("", "is empty"),
    (".", "is the current folder"),
    ("..", "holds the current folder"),
    ("./", "is the current folder"),
    ("sub/..", "is the current folder"),
    ("/", "is the filesystem root"),
    ("~", "is the home folder"),
    ("models", "holds the model file"),
    ("models/../models/", "holds the model file"),
])
def test_dangerous_out_is_refused(tmp_path, monkeypatch, out, why):
    work = tmp_path / "work"
    (work / "models").mkdir(parents=True)
    (work / "sub").mkdir()
    (work / "models" / "net.py").write_text("# the user's model\n")
    (work / MARKER).write_text("x")    # even a folder that looks like an output
    monkeypatch.chdir(work)
    before = _tree(tmp_path)
    with pytest.raises(UserError, match=why):
        check_out(out, model="models/net.py:build")
    with pytest.raises(UserError, match=why):
        with staged_output(out, model="models/net.py"):
            raise AssertionError("the block must not run")
    assert _tree(tmp_path) == before


def test_the_repository_is_refused(tmp_path, monkeypatch):
    repo = Path(cli.__file__).resolve().parent.parent
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match="repository"):
        check_out(repo)


# ---- through the CLI ------------------------------------------------------------------------
DANGEROUS = ["", ".", "..", "models", "mine"]


@pytest.mark.parametrize("out", DANGEROUS)
def test_gen_with_dangerous_out_deletes_nothing(tmp_path, out):
    """Each --out that used to be emptied: exit 2, one error line, every file still there."""
    work = tmp_path / "work"
    (work / "models").mkdir(parents=True)
    (work / "models" / "tiny.py").write_text(
        "import torch\nfrom torch import nn\n\n\ndef build():\n"
        "    return nn.Sequential(nn.Linear(4, 4)), (torch.randn(1, 4),)\n")
    (work / "mine").mkdir()
    (work / "mine" / "notes.txt").write_text("mine")
    before = _tree(tmp_path)
    p = subprocess.run([sys.executable, "-m", "pycde_accel", "gen", "models/tiny.py", "--out", out],
                       cwd=work, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONSAFEPATH": "1"})
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --out"), p.stderr
    assert _tree(tmp_path) == before
    assert sorted(q.name for q in work.iterdir()) == ["mine", "models"]


# ---- interrupts -----------------------------------------------------------------------------
def _ours(tag: str) -> list[str]:
    """Processes whose environment holds ``tag`` (the run's own XDG_CACHE_HOME): what is left
    of that run."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            env = (d / "environ").read_bytes()
            stat = (d / "stat").read_text()
        except OSError:
            continue
        if tag.encode() in env and stat[stat.rfind(")") + 2] != "Z":
            cmdline = (d / "cmdline").read_bytes().replace(b"\0", b" ")[:200]
            found.append(f"{d.name} {cmdline.decode(errors='replace')}")
    return found


def _interrupt(cmd: list[str], cwd: Path, tag: str, when, timeout: float = 600) -> str:
    """Start ``cmd`` (own XDG_CACHE_HOME ``tag``), send SIGINT once ``when()`` holds, and wait;
    return its stderr."""
    env = {**os.environ, "PYTHONSAFEPATH": "1", "XDG_CACHE_HOME": tag}
    env.pop("PYCDE_ACCEL_CACHE", None)
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        deadline = time.monotonic() + timeout
        while not when():
            assert p.poll() is None, f"finished before the interrupt: {p.communicate()}"
            assert time.monotonic() < deadline, "the moment to interrupt never came"
            time.sleep(0.2)
        p.send_signal(signal.SIGINT)
        _out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1] == "error: interrupted", err
    return err


def _children_named(tag: str, names: tuple[str, ...]) -> bool:
    return any(any(n in line for n in names) for line in _ours(tag))


def test_sigint_during_gen_leaves_nothing(tmp_path):
    """SIGINT while gen's lowering workers run: no output, no stage, no parent, no process."""
    work = tmp_path / "work"
    work.mkdir()
    tag = str(tmp_path / "cache")
    _interrupt([sys.executable, "-m", "pycde_accel", "gen", "--out", "out/net"], work, tag,
               lambda: _children_named(tag, ("pycde_accel.lowering.worker",)))
    assert list(work.iterdir()) == []
    time.sleep(0.5)
    assert _ours(tag) == []


def test_sigint_during_sim_leaves_the_earlier_output(tmp_path):
    """SIGINT while Verilator builds the accelerator (a cold build cache): the earlier output in
    --out is byte for byte as it was, nothing else appears, and no verilator, make or compiler
    of that run is left."""
    work = tmp_path / "work"
    old = _earlier_output(work / "out" / "net")
    before = _tree(work)
    tag = str(tmp_path / "cache")
    _interrupt([sys.executable, "-m", "pycde_accel", "sim", "--out", "out/net"], work, tag,
               lambda: _children_named(tag, ("verilator", "make", "cc1plus")))
    assert _tree(work) == before
    assert sorted(p.name for p in (work / "out").iterdir()) == ["net"]
    assert old.is_dir()
    time.sleep(0.5)
    assert _ours(tag) == []


def test_end_group_ends_grandchildren(tmp_path):
    flag = tmp_path / "alive"
    code = ("import subprocess, sys, time; "
            f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            f"open({str(flag)!r}, 'w').close(); time.sleep(60)")
    p = proc.spawn([sys.executable, "-c", code])
    while not flag.exists():
        time.sleep(0.05)
    pgid = os.getpgid(p.pid)
    assert pgid != os.getpgrp()
    proc.end_group(p)
    time.sleep(0.2)
    assert not proc._group_alive(pgid)      # (zombies waiting for init to reap them aside)
