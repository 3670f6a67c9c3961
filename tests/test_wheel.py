"""The wheel carries everything the code needs at run time, and a non-editable install of it
simulates the default model bit-exactly.

The wheel is built (``pip wheel --no-deps --no-build-isolation``) from a copy of the project's
pyproject.toml, README and package folders (building writes ``build/`` and ``*.egg-info`` next
to the sources, never into the checkout) by a fresh venv (``--without-pip``) that sees the site-packages of the interpreter running the
tests through a ``.pth`` file: their pip, setuptools and the project's dependencies are
importable, but the ``.pth`` files there are not run, so the editable install of the checkout
(a finder that a ``.pth`` file installs) cannot shadow the wheel. This works whether the tests
run in the system interpreter or in a venv of their own (``--system-site-packages`` would see
only the base interpreter's packages).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CFG = tomllib.loads((ROOT / "pyproject.toml").read_text())
PACKAGE_DIRS = CFG["tool"]["setuptools"]["package-dir"]


def _env(venv: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(venv)
    return env


def _run(cmd, cwd, env, timeout=600):
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} (exit {r.returncode}):\n" \
                              f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def package_files() -> dict[str, Path]:
    """Every file of the package folders (no caches), by its path inside the wheel."""
    out = {}
    for pkg, d in PACKAGE_DIRS.items():
        base = ROOT / d
        for f in sorted(base.rglob("*")):
            rel = f.relative_to(base)
            if f.is_dir() or "__pycache__" in rel.parts or f.suffix == ".pyc":
                continue
            # the folders of subpackages mapped elsewhere are not under this one
            out["/".join([*pkg.split("."), *rel.parts])] = f
    return out


@pytest.fixture(scope="module")
def venv_and_wheel(tmp_path_factory):
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for d in set(PACKAGE_DIRS.values()):
        shutil.copytree(ROOT / d, src / d, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], base, _env(venv))
    py = venv / "bin" / "python"
    own = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
               base, _env(venv)).stdout.strip()
    host = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (Path(own) / "_host_site.pth").write_text("".join(f"{p}\n" for p in host))
    env = _env(venv)
    _run([py, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
          base / "dist", src], base, env)
    wheels = sorted((base / "dist").glob("pycde_accel-*.whl"))
    assert len(wheels) == 1, wheels
    return py, env, wheels[0], base


def test_the_wheel_holds_every_package_file(venv_and_wheel):
    """Every file of the package folders, .py or not (SV, the native harness's C++ ...), is in
    the wheel, and nothing else but its metadata: a subpackage missing from ``packages`` or a
    data file missing from ``package-data`` fails here."""
    _py, _env, wheel, _base = venv_and_wheel
    with zipfile.ZipFile(wheel) as z:
        names = {n for n in z.namelist() if ".dist-info/" not in n}
    want = set(package_files())
    assert "pycde_accel/sim/native/main.cpp" in want
    assert sorted(want - names) == [], "left out of the wheel"
    assert sorted(names - want) == [], "in the wheel but not in the package folders"


@pytest.mark.slow
def test_installed_wheel_simulates_the_default_model(venv_and_wheel):
    """``pip install`` of the wheel (not editable) into the fresh venv, then ``python -m
    pycde_accel sim`` in a folder outside the checkout, with an empty Verilator cache so that
    the default (native) engine compiles the harness from the installed files: exit 0 means
    bit-exact against the integer reference."""
    py, env, wheel, base = venv_and_wheel
    _run([py, "-m", "pip", "install", "--no-deps", "--ignore-installed", "-q", wheel], base, env)
    work = base / "run"
    work.mkdir()
    env = dict(env, PYCDE_ACCEL_CACHE=str(base / "cache"))
    where = _run([py, "-c", "import pycde_accel, pycde_accel.sim.fast as f; "
                  "print(pycde_accel.__file__); print(f.HERE)"], work, env).stdout.split()
    site = (base / "venv").resolve()
    for p in where:
        assert Path(p).resolve().is_relative_to(site), f"{p} is not the installed wheel's"
    r = _run([py, "-m", "pycde_accel", "sim", "--out", "out"], work, env, timeout=1800)
    assert "bit-exact with the integer reference: yes" in r.stdout, r.stdout[-2000:]
    plan = json.loads((work / "out" / "sim" / "run" / "plan.json").read_text())
    assert plan["engine"] == "native"   # sim/native/main.cpp, compiled from the installed copy
    assert list((base / "cache").glob("accel_sim_top-native-*"))
