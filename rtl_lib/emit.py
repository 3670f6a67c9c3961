"""Emit PyCDE modules as SystemVerilog that Verilator and Yosys both accept.

``emit_module(top, sv_dir)`` runs PyCDE/CIRCT on any top module class in a private temp folder
and copies only the SV into ``sv_dir``, with a complete ``filelist.f`` (paths relative to
``sv_dir``, compile order). ``emit_core(config, sv_dir)`` does it for the systolic core; the
whole accelerator, whose post-op kernels are lowered first, is emitted by
``pycde_accel.assemble.emit_accelerator`` (above rtl_lib: rtl_lib does not know lowering).

``filelist.f`` is the synthesis list. A design that instantiates a vendor primitive (the ECP5
core's MULT18X18D, see ``rtl_lib.ecp5``) also needs a behavioral model of it in simulation,
which synthesis must never see: such models are written next to the SV and listed, after the
synthesis files, in ``filelist_sim.f`` only (``EmittedSV.sim_files``, ``sim_filelist``;
without models ``sim_filelist`` is ``filelist`` itself). Verilator builds use ``sim_filelist``.

The lowering options (docs/toolchain.md, "Installation and CIRCT") are set on the MLIR module:
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
from ..heap import frozen_heap

LOWERING_OPTIONS = "disallowLocalVariables,locationInfoStyle=none,omitVersionComment"


@dataclass(frozen=True)
class EmittedSV:
    """What an emit wrote: the top module name, the SV files in compile order, the filelist.

    ``files``/``filelist``: synthesis sources (``filelist.f``). ``sim_models``: simulation-only
    behavioral models of vendor primitives; ``sim_files``/``sim_filelist``: what a simulator
    compiles (``files`` + ``sim_models``, ``filelist_sim.f``; ``filelist`` if no models).
    """

    top: str
    files: list[Path]
    filelist: Path
    sim_models: tuple[Path, ...] = ()
    sim_filelist: Path | None = None

    @property
    def sim_files(self) -> list[Path]:
        return list(self.files) + list(self.sim_models)

    def __post_init__(self):
        if self.sim_filelist is None:
            object.__setattr__(self, "sim_filelist", self.filelist)


def _pycde_dir() -> Path:
    import pycde
    return Path(pycde.__file__).resolve().parent


#: vendor primitives the design instantiates as PyCDE externs, one class per parameter set
#: (``pycde.module.modparams``: ``ecp5_ebr.Dp16kd``, ``ecp5.Mult18x18d``)
PRIMITIVES = ("DP16KD", "MULT18X18D")


def _primitive_names(system) -> None:
    """Give every extern declaration of a vendor primitive the primitive's own Verilog name.
    Two parameter sets of one primitive are two extern symbols, the second uniquified
    (``DP16KD_1``), and PyCDE 0.7 drops the ``verilogName`` it means to set on them, so the
    instances named a module no library defines (the store engine's 18-bit parameter
    memories beside the scratchpads' 36-bit lanes)."""
    from pycde.circt import ir

    with system.mod.context:
        for op in system.mod.body.operations:
            if op.operation.name != "hw.module.extern":
                continue
            sym = ir.StringAttr(op.attributes["sym_name"]).value
            base = re.sub(r"_\d+$", "", sym)
            if base in PRIMITIVES and "verilogName" not in op.attributes:
                op.attributes["verilogName"] = ir.StringAttr.get(base)


def emit_module(top, sv_dir: Path, sim_models=(), sources=(), prepare=None) -> EmittedSV:
    """Generate PyCDE module class ``top`` (and all it instantiates) into ``sv_dir``;
    ``sources``: hand-written SV files (modules the design instantiates as externs) to copy
    and list first in ``filelist.f``; ``sim_models``: simulation-only SV files to copy and
    list in ``filelist_sim.f`` only.

    ``prepare``: for a top that instantiates imported MLIR (the lowered kernels that
    ``pycde_accel.assemble`` imports with ``lowering.stream.stream_module``): ``top`` is then
    ignored and ``prepare(system)`` is called with the empty System; it imports what it needs
    and returns the top module class."""
    from pycde import System
    from pycde.circt import ir

    sv_dir = Path(sv_dir)
    sv_dir.mkdir(parents=True, exist_ok=True)
    with frozen_heap(), tempfile.TemporaryDirectory(prefix="pycde_accel_emit_") as tmp:
        out = Path(tmp) / "out"
        if prepare is None:
            system = System([top], name="top", output_directory=str(out))
        else:
            system = System([], name="top", output_directory=str(out))
            top = prepare(system)
            system.top_modules.append(top)
            with system:
                top._builder.circt_mod  # noqa: B018 - registers the top with the system
        top_name = top._builder.name
        with system.mod.context:
            system.mod.operation.attributes["circt.loweringOptions"] = \
                ir.StringAttr.get(LOWERING_OPTIONS)
        try:
            system.generate()
            _primitive_names(system)
            system.run_passes()
            system.emit_outputs()
        except Exception as e:  # CIRCT reports failures as RuntimeError with no context
            raise UserError(f"CIRCT could not lower {top.__name__}: {e}".splitlines()[0]) from e
        hw = out / "hw"
        listed = []
        flist = hw / "filelist.f"
        if flist.exists():
            listed = [ln.strip() for ln in flist.read_text().splitlines() if ln.strip()]
        names = [n for n in listed if n.endswith((".sv", ".v"))]
        for f in sorted(hw.iterdir()):
            if f.name == "external_modules.sv" and not re.search(r"^\s*module\b",
                                                                   f.read_text(), re.M):
                continue  # CIRCT's file for extern modules: declarations only, nothing to compile
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
        for src in reversed([Path(x) for x in sources]):
            if src.name in texts:
                raise UserError(f"SV source {src.name} has the name of a generated file")
            names.insert(0, src.name)
            texts[src.name] = src.read_text()
        files = []
        for n in names:
            dst = sv_dir / n
            dst.write_text(texts[n])
            files.append(dst)
    filelist = sv_dir / "filelist.f"
    filelist.write_text("".join(f"{f.name}\n" for f in files))
    models = []
    for m in sim_models:
        m = Path(m)
        if m.name in {f.name for f in files}:
            raise UserError(f"simulation model {m.name} has the name of a generated file")
        dst = sv_dir / m.name
        dst.write_text(m.read_text())
        models.append(dst)
    sim_filelist = None
    if models:
        sim_filelist = sv_dir / "filelist_sim.f"
        sim_filelist.write_text("".join(f"{f.name}\n" for f in files + models))
    return EmittedSV(top=top_name, files=files, filelist=filelist, sim_models=tuple(models),
                     sim_filelist=sim_filelist)


def emit_core(config: AccelConfig, sv_dir: Path, fed: bool = False) -> EmittedSV:
    """Emit the systolic core for ``config`` into ``sv_dir`` (ConfigError for a bad config);
    ``fed``: its fed form (``systolic.make_systolic_core``)."""
    from . import keep_ff, lutram
    from .ecp5 import SIM_MODEL, uses_ecp5_dsp
    from .systolic import make_systolic_core

    core = make_systolic_core(config, fed=fed)
    models = [SIM_MODEL] if uses_ecp5_dsp(config.target, config.data_width) else []
    return emit_module(core, Path(sv_dir), sim_models=models,
                       sources=[lutram.SOURCE, keep_ff.SOURCE])

