"""The README's first command, as a user runs it: ``python -m pycde_accel gen`` with no
arguments writes build/ in the current folder and says what it wrote."""

import subprocess
import sys

from pycde_accel import cli


def test_readme_gen_command(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pycde_accel", "gen"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "build"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build"]   # nothing else, no staging
    listed = (out / "sv" / "filelist.f").read_text().split()
    assert listed and all((out / "sv" / f).is_file() for f in listed)
    assert "top pycde_accel_top" in r.stdout and "mlp" in r.stdout
    assert r.stderr == ""        # progress goes to a terminal only


def test_help_shows_examples(capsys):
    try:
        cli.main(["--help"])
    except SystemExit as e:
        assert e.code == 0
    text = capsys.readouterr().out
    assert "examples:" in text and "gen" in text and "synth" in text and "ir" in text
