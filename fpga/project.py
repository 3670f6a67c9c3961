"""``synth`` for a model: generate the output folder, then synthesize it (or hand it off).

``synth_model(model, out, config)`` is what ``python -m pycde_accel synth`` runs:

1. the target (``config.target``) is looked up and the fit check runs first, so a config that
   cannot fit is refused before anything is generated or synthesized;
2. ``pycde_accel.flow.gen`` writes ``out/`` (``sv/`` with ``sv/filelist.f``, ``design.json``);
3. the top module is ``design.json``'s ``top`` when present, else the one module of ``sv/``
   that nothing instantiates;
4. open-flow targets: ``fpga.synthesize`` into ``out/synth/`` (``report.json``, ``report.md``,
   tool logs, the netlist); handoff targets: ``fpga.vendor`` scripts into ``out/vivado/`` or
   ``out/quartus/``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pycde_accel.config import AccelConfig

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
                progress: Callable[[str], None] = _quiet) -> SynthOutput:
    from pycde_accel import flow

    config.validate()
    device = get_device(config.target)
    check_fit(config, device)
    flow.gen(model, out, config, seed=seed, progress=progress)
    files = read_filelist(out / "sv")
    top = design_top(out, files)
    if device.open_flow:
        work = out / SYNTH_DIR
        report = synthesize(files, top, device, work, config=config, progress=progress)
        return SynthOutput(top, report, [work / "report.json", work / "report.md"])
    written = write_vendor_project(files, top, device, out, clock_mhz=config.clock_mhz)
    return SynthOutput(top, None, written)


def summary(report: SynthReport) -> str:
    """One line of the figures a user looks at first."""
    s = (f"{report.target}: {report.top}: LUT4 {report.lut}, FF {report.ff}, DSP {report.dsp}, "
         f"BRAM {report.bram}, carry {report.carry}")
    if report.clocks:
        s += "; Fmax " + ", ".join(f"{c} {v['achieved_mhz']:.1f} MHz" for c, v in report.clocks.items())
    elif report.note:
        s += f"; {report.note}"
    return s
