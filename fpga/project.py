"""``synth`` for a model: generate the output folder, then synthesize it (or hand it off).

``synth_model(model, out, config)`` is what ``python -m pycde_accel synth`` runs:

1. the target (``config.target``) is looked up and the fit check runs first, so a config that
   cannot fit is refused before anything is generated or synthesized;
2. the model is loaded and checked, then ``pycde_accel.flow.write_gen`` writes ``gen``'s files
   (``sv/`` with ``sv/filelist.f``, ``design.json``) into a staging folder of ``out``;
3. the top module is ``design.json``'s ``top`` when present, else the one module of ``sv/``
   that nothing instantiates;
4. open-flow targets: ``fpga.synthesize`` into ``out/synth/`` (``report.json``, ``report.md``,
   tool logs, the netlist; ``place=False``: Yosys only, the report without Fmax); handoff targets: ``fpga.vendor`` scripts into ``out/vivado/`` or
   ``out/quartus/``;
5. the staging folder replaces ``out`` (:func:`pycde_accel.outdir.staged_output`) only when all
   of it succeeded: a failed or interrupted synthesis leaves ``out`` as it was.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError

from .devices import get_device
from .fit import check_fit
from .report import SynthReport
from .sources import find_top, read_filelist
from .synth import synthesize
from .vendor import write_vendor_project

SYNTH_DIR = "synth"


@dataclass(frozen=True)
class SynthOutput:
    top: str
    report: SynthReport | None     # open flow
    written: list[Path]            # report files, or the vendor project files


def _quiet(_: str) -> None:
    pass


def design_top(out: Path, files: list[Path]) -> str:
    try:
        top = json.loads((out / "design.json").read_text()).get("top")
    except (OSError, ValueError, AttributeError):
        top = None
    return top if isinstance(top, str) and top else find_top(files)


def synth_model(model: str | None, out: Path, config: AccelConfig, *, seed: int = 0,
                progress: Callable[[str], None] = _quiet, compiled=None,
                place: bool = True) -> SynthOutput:
    from pycde_accel import flow
    from pycde_accel.outdir import check_out, staged_output

    config.validate()
    device = get_device(config.target)
    check_fit(config, device)
    spec = model if isinstance(model, str) else None
    out = Path(out)
    check_out(out, model=spec)
    progress(f"frontend: export, quantize and check {flow.model_label(model)}")
    fe = flow.frontend_result(model, seed)
    # gen and synthesis in one staging folder: the output appears with both, or not at all;
    # a tool that fails still gets the output, with the log its error names
    failed = None
    with staged_output(out, model=spec) as stage:
        flow.write_gen(fe, stage, config, progress=progress, compiled=compiled)
        files = read_filelist(stage / "sv")
        top = design_top(stage, files)
        if device.open_flow:
            work = stage / SYNTH_DIR
            report, written = None, []
            try:
                report = synthesize(files, top, device, work, config=config, progress=progress,
                                    place=place)
                written = [work / "report.json", work / "report.md"]
            except UserError as e:
                failed = e
        else:
            report = None
            written = write_vendor_project(files, top, device, stage, clock_mhz=config.clock_mhz)
        written = [out / p.relative_to(stage) for p in written]
    if failed is not None:
        raise UserError(str(failed).replace(str(stage), str(out)), failed.exit_code)
    return SynthOutput(top, report, written)


def summary(report: SynthReport) -> str:
    """One line of the figures a user looks at first."""
    s = (f"{report.target}: {report.top}: LUT4 {report.lut}, FF {report.ff}, DSP {report.dsp}, "
         f"BRAM {report.bram}, carry {report.carry}")
    if report.clocks:
        s += "; Fmax " + ", ".join(f"{c} {v['achieved_mhz']:.1f} MHz" for c, v in report.clocks.items())
    elif report.note:
        s += f"; {report.note}"
    return s
