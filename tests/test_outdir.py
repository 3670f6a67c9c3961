"""staged_output: the output folder appears whole, or the old one stays untouched."""

import pytest

from pycde_accel.errors import UserError
from pycde_accel.outdir import staged_output


def test_success_replaces_the_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    with staged_output(out) as stage:
        (stage / "new.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]   # no staging folder left


def test_failure_leaves_nothing_behind(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(RuntimeError):
        with staged_output(out) as stage:
            (stage / "half.txt").write_text("half")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_failure_keeps_the_previous_output(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("keep")
    with pytest.raises(UserError):
        with staged_output(out):
            raise UserError("bad model")
    assert (out / "keep.txt").read_text() == "keep"
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
