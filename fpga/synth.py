"""Open synthesis of a set of SV files: fit check -> Yosys -> nextpnr -> ``SynthReport``.

``synthesize(sv_files, top, target, work_dir)`` is the whole open flow for one design:

1. ``target`` is looked up in ``fpga.devices`` (UserError listing the known ones); a handoff-only
   part (Vivado, Quartus) is refused here: use ``fpga.vendor``.
2. With a ``config``, ``fpga.fit.check_fit`` refuses a config that cannot fit, before any tool runs.
3. The SV files are copied into ``work_dir/rtl/`` (so every tool sees short relative paths and
   the work folder can be rerun by hand), Yosys synthesizes them (``fpga.yosys``); a netlist
   with more hard multipliers or block RAMs than the part has is refused here, with the counts.
4. nextpnr places and routes the netlist with a fixed seed (``fpga.nextpnr``); on iCE40, when the
   top has more port bits than the package has pins (no out-of-context mode there), the report
   keeps the synthesis figures and says why it was not placed.
5. ``report.json`` and ``report.md`` are written into ``work_dir`` and the report returned.

A run identical to an earlier one (same sources, top, device, seed, clock, tool versions) takes
the tools' outputs from :mod:`.cache` instead of running them again.

The caller owns ``work_dir``; nothing is written anywhere else (never the cwd). Logs stay there
(``yosys.log``, ``nextpnr.log``), also when a tool fails.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Callable, Sequence

from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError

from . import cache, nextpnr, yosys
from .devices import Device, get_device, known_targets
from .fit import check_fit
from .report import SynthReport
from .tools import tool_version

Progress = Callable[[str], None]

DEFAULT_SEED = 1
DEFAULT_FREQ_MHZ = 100.0
RTL_DIR = "rtl"


def _quiet(_: str) -> None:
    pass


def open_flow_device(target: str | Device) -> Device:
    device = target if isinstance(target, Device) else get_device(target)
    if not device.open_flow:
        open_ones = ", ".join(n for n in known_targets() if get_device(n).open_flow)
        raise UserError(f"target {device.name} ({device.part}) is for {device.flow} handoff only; "
                        f"open synthesis supports {open_ones}")
    return device


def stage_sources(sv_files: Sequence[os.PathLike | str], work: Path) -> list[str]:
    """Copy the SV files into ``work/rtl``; return their paths relative to ``work``, in order."""
    if not sv_files:
        raise UserError("synthesis: no SV files given")
    rtl = work / RTL_DIR
    rtl.mkdir(parents=True, exist_ok=True)
    out, seen = [], {}
    for f in sv_files:
        src = Path(f)
        if not src.is_file():
            raise UserError(f"synthesis: SV file {src} does not exist")
        if src.name in seen and Path(seen[src.name]).resolve() != src.resolve():
            raise UserError(f"synthesis: two SV files are named {src.name} ({seen[src.name]}, {src})")
        if src.name in seen:
            continue
        seen[src.name] = str(src)
        dst = rtl / src.name
        if not (dst.exists() and dst.resolve() == src.resolve()):
            shutil.copyfile(src, dst)
        out.append(f"{RTL_DIR}/{src.name}")
    return out


def check_synthesized(counts: dict[str, int], top: str, device: Device, work: Path) -> None:
    """Refuse, before placing, a netlist with more hard multipliers or block RAMs than exist."""
    over = [f"{counts[k]} {what} but {device.name} has {have}"
            for k, what, have in (("dsp", device.dsp_cell, device.dsp), ("bram", "block RAMs", device.bram))
            if counts[k] > have]
    if over:
        raise UserError(f"{top} does not fit after synthesis: " + "; ".join(over)
                        + f" (cell counts in {work / yosys.STAT})")


def synthesize(sv_files: Sequence[os.PathLike | str], top: str, target: str | Device,
               work_dir: os.PathLike | str, *, config: AccelConfig | None = None,
               seed: int = DEFAULT_SEED, freq_mhz: float | None = None, place: bool = True,
               progress: Progress = _quiet,
               on_netlist: Callable[[Path], None] | None = None) -> SynthReport:
    """Synthesize (and place and route) ``top`` from ``sv_files`` for ``target`` in ``work_dir``.

    ``freq_mhz`` is the clock nextpnr places towards (default: ``config.clock_mhz``, else
    100 MHz); the achieved Fmax is reported whatever it is. ``place=False`` stops after Yosys.
    ``on_netlist(path)`` is called with Yosys's netlist once it is there (synthesized or
    restored from the cache), before nextpnr: a caller can place other seeds of it meanwhile.
    Writes ``work_dir/report.json`` and ``report.md``; returns the report.
    """
    device = open_flow_device(target)
    if config is not None:
        config.validate()
        check_fit(config, device)
    if freq_mhz is None:
        freq_mhz = config.clock_mhz if config is not None else DEFAULT_FREQ_MHZ
    work = Path(work_dir)
    try:
        work.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"synthesis: cannot create the work folder {work} ({e.strerror})") from e
    files = stage_sources(sv_files, work)
    versions = {"yosys": tool_version("yosys"), "nextpnr": tool_version(device.nextpnr[0])}
    ckey = cache.key(work, files, top, device.name, seed, freq_mhz, place, versions,
                     yosys.script(files, top, device))
    # one run per key at a time: an identical run started meanwhile waits, then reuses it
    with cache.locked(ckey, lambda: progress(
            f"waiting for an identical synthesis run in another process (cache {ckey[:12]})")):
        hit = cache.restore(ckey, work)

        if hit:
            progress(f"yosys + {device.nextpnr[0]}: the same sources, device, seed and clock were "
                     f"synthesized before; reusing that run (synthesis cache {ckey[:12]})")
            stats = yosys.parse_stat(work / yosys.STAT)
        else:
            progress(f"yosys: {device.yosys_synth} of {top} ({len(files)} file{'s' if len(files) != 1 else ''})")
            t0 = time.monotonic()
            stats = yosys.run_yosys(files, top, device, work, progress)
            progress(f"yosys: done in {time.monotonic() - t0:.0f} s")
        res = yosys.classify(stats.cells, device.family)
        main = {k: res.pop(k) for k in ("lut", "ff", "dsp", "bram", "carry")}
        check_synthesized(main, top, device, work)
        if on_netlist is not None:
            on_netlist(work / yosys.NETLIST)
        tools = {"yosys": tool_version("yosys")}

        pnr, note = None, ""
        if not place:
            note = "synthesis only, not placed (no Fmax)"
        elif device.family == "ice40" and stats.port_bits > device.io:
            note = (f"not placed: the top has {stats.port_bits} port bits but the {device.package} "
                    f"package has {device.io} IO pins, and nextpnr-ice40 has no out-of-context mode")
        else:
            if hit:
                pnr = nextpnr.parse_report(work / nextpnr.REPORT)
            else:
                progress(f"{device.nextpnr[0]}: place and route, seed {seed}, towards {freq_mhz:g} MHz")
                t0 = time.monotonic()
                pnr = nextpnr.run_nextpnr(device, work, seed, freq_mhz, progress)
            tools["nextpnr"] = tool_version(device.nextpnr[0])
            if pnr.router != nextpnr.ROUTERS[0]:
                note = (f"routed by nextpnr's {pnr.router}: {nextpnr.ROUTERS[0]} stalled "
                        f"(its log: {nextpnr.STALLED_LOG})")
            fmax = min((c["achieved_mhz"] for c in pnr.clocks.values()), default=None)
            if not hit:
                progress(f"{device.nextpnr[0]}: done in {time.monotonic() - t0:.0f} s"
                         + (f", Fmax {fmax:.1f} MHz" if fmax is not None else ""))
        if note:
            progress(note)

        report = SynthReport(
            target=device.name, part=device.part, family=device.family, top=top,
            files=tuple(files), seed=seed, freq_mhz=float(freq_mhz), **main,
            cells=stats.cells, port_bits=stats.port_bits,
            available={"lut": device.lut, "ff": device.ff, "dsp": device.dsp, "bram": device.bram},
            placed=pnr is not None,
            clocks=pnr.clocks if pnr else {},
            utilization={k: v for k, v in pnr.utilization.items() if v["used"]} if pnr else {},
            critical_paths=pnr.critical_paths if pnr else (),
            extra=res, note=note, tools=tools,
            config=config.to_dict() if config is not None else None)
        report.write(work)
        if not hit:
            cache.store(ckey, work)
    return report
