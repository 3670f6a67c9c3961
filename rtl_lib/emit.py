"""Emit PyCDE modules as SystemVerilog that Verilator and Yosys both accept.

``emit_module(top, sv_dir)`` runs PyCDE/CIRCT on any top module class in a private temp folder
and copies only the SV into ``sv_dir``, with a complete ``filelist.f`` (paths relative to
``sv_dir``, compile order). ``emit_core(config, sv_dir)`` does it for the systolic core.

The lowering options (DESIGN.md, toolchain facts) are set on the MLIR module:
``disallowLocalVariables`` (Yosys rejects ``automatic logic`` in always_ff),
``locationInfoStyle=none`` and ``omitVersionComment`` (no machine paths or versions in the
files). The same module gives byte-identical files.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..config import AccelConfig
from ..errors import UserError

LOWERING_OPTIONS = "disallowLocalVariables,locationInfoStyle=none,omitVersionComment"


@dataclass(frozen=True)
class EmittedSV:
    """What an emit wrote: the top module name, the SV files in compile order, the filelist."""

    top: str
    files: list[Path]
    filelist: Path


def _pycde_dir() -> Path:
    import pycde
    return Path(pycde.__file__).resolve().parent


def emit_module(top, sv_dir: Path) -> EmittedSV:
    """Generate PyCDE module class ``top`` (and all it instantiates) into ``sv_dir``."""
    from pycde import System
    from pycde.circt import ir

    sv_dir = Path(sv_dir)
    sv_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pycde_accel_emit_") as tmp:
        out = Path(tmp) / "out"
        system = System([top], name="top", output_directory=str(out))
        top_name = top._builder.name
        with system.mod.context:
            system.mod.operation.attributes["circt.loweringOptions"] = \
                ir.StringAttr.get(LOWERING_OPTIONS)
        try:
            system.compile()
        except Exception as e:  # CIRCT reports failures as RuntimeError with no context
            raise UserError(f"CIRCT could not lower {top.__name__}: {e}".splitlines()[0]) from e
        hw = out / "hw"
        listed = []
        flist = hw / "filelist.f"
        if flist.exists():
            listed = [ln.strip() for ln in flist.read_text().splitlines() if ln.strip()]
        names = [n for n in listed if n.endswith((".sv", ".v"))]
        for f in sorted(hw.iterdir()):
            if f.suffix in (".sv", ".v") and f.name not in names:
                names.append(f.name)
        # Compile order: the files the top depends on first, the top's own file last.
        top_file = f"{top.__name__}.sv"
        names = sorted(n for n in names if n != top_file) + \
            ([top_file] if top_file in names else [])
        texts = {n: (hw / n).read_text() for n in names}
        # ESI channel buffers instantiate modules that live in pycde's ESIPrimitives.sv.
        if any(re.search(r"\bESI_PipelineStage\b", t) for t in texts.values()):
            names.insert(0, "ESIPrimitives.sv")
            texts["ESIPrimitives.sv"] = (_pycde_dir() / "ESIPrimitives.sv").read_text()
        files = []
        for n in names:
            dst = sv_dir / n
            dst.write_text(texts[n])
            files.append(dst)
    filelist = sv_dir / "filelist.f"
    filelist.write_text("".join(f"{f.name}\n" for f in files))
    return EmittedSV(top=top_name, files=files, filelist=filelist)


def emit_core(config: AccelConfig, sv_dir: Path) -> EmittedSV:
    """Emit the systolic core for ``config`` into ``sv_dir`` (ConfigError for a bad config)."""
    from .systolic import make_systolic_core

    return emit_module(make_systolic_core(config), Path(sv_dir))
