"""nextpnr place-and-route for the open-flow devices, and its ``--report`` JSON.

Contract: ``run_nextpnr(device, work, seed, freq_mhz)`` places and routes ``work/netlist.json``
(from ``fpga.yosys``) with a fixed seed and a target frequency, out of context on ECP5 (no IO
buffers, no global clock promotion: the figures are those of the core alone). nextpnr-ice40 has
no out-of-context mode: there the top's ports are placed on package pins. Timing failure is not
an error (``--timing-allow-fail``): the point is to measure the achieved Fmax. Writes
``work/nextpnr.log``, ``work/nextpnr.json``, the routed delays as SDF (``work/timing.sdf``)
and from them ``work/paths.txt``: the worst path of every (start register, end register) pair,
worst first (:mod:`.sta`; nextpnr's report names one path per clock). Returns the parsed
:class:`PnrResult`.

nextpnr's default router (router1) can stall on a congested design: tens of minutes on the last
few hundred arcs without a log line, sometimes to finish after all. A run that prints nothing
for ``stall_minutes`` (default :data:`STALL_MINUTES`) is stopped and placed and routed again
with router2 (``PnrResult.router`` says which router gave the figures; the stalled run's log
is kept as ``nextpnr-router1.log``); if that stalls too or runs past :data:`RETRY_MINUTES`,
:class:`~fpga.tools.ToolStalled` (a UserError) is raised.

The report format (nextpnr ``docs/report.md``): ``utilization`` {bel type: {used, available}},
``fmax`` {clock: {achieved, constraint}} in MHz, and ``critical_paths``, a list of
{from, to, path: [{type, from: {cell, port, loc}, to: {...}, net, delay}]} with delays in ns,
one per clock pair.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pycde_accel.errors import UserError

from .devices import Device
from .tools import ToolStalled, run_tool
from .yosys import NETLIST

REPORT = "nextpnr.json"
LOG = "nextpnr.log"
#: the routed design's delays (nextpnr's ``--sdf``) and the paths :mod:`.sta` finds in them
SDF = "timing.sdf"
PATHS = "paths.txt"
#: minutes without a log line after which a nextpnr run is taken as stalled. router1 prints a
#: line per 1000 arcs, and in its last few hundred overused wires those can take 10 minutes and
#: more: the default accelerator at 2094307, seed 1, went 18 minutes without a line (two
#: cores, three runs) between 212 and 62 overused wires, then finished at 116.80 MHz, which a
#: 15-minute window had thrown away for router2's poorer figure
STALL_MINUTES = 45.0
#: minutes router2's rerun may take in all (router2 prints every iteration, so it never goes
#: silent, but it did not converge on the default accelerator in 50 minutes with --tmg-ripup)
RETRY_MINUTES = 60.0
ROUTERS = ("router1", "router2")
#: the log of a router1 run that stalled (its presence says router2 gave the report)
STALLED_LOG = "nextpnr-router1.log"


@dataclass(frozen=True)
class PathStep:
    type: str        # clk-to-q, routing, logic, setup
    src: str         # cell/port
    dst: str         # cell/port
    net: str         # the routed net ("" for cell-internal steps)
    delay_ns: float

    def to_dict(self) -> dict:
        return {"type": self.type, "from": self.src, "to": self.dst, "net": self.net,
                "delay_ns": self.delay_ns}


@dataclass(frozen=True)
class CriticalPath:
    src_clock: str   # e.g. "posedge clk"
    dst_clock: str
    steps: tuple[PathStep, ...]

    @property
    def delay_ns(self) -> float:
        return round(sum(s.delay_ns for s in self.steps), 3)

    @property
    def routing_ns(self) -> float:
        return round(sum(s.delay_ns for s in self.steps if s.type == "routing"), 3)

    @property
    def logic_ns(self) -> float:
        return round(self.delay_ns - self.routing_ns, 3)

    @property
    def start_cell(self) -> str:
        return self.steps[0].src.rsplit("/", 1)[0] if self.steps else ""

    @property
    def end_cell(self) -> str:
        return self.steps[-1].dst.rsplit("/", 1)[0] if self.steps else ""

    @property
    def cells(self) -> list[str]:
        """Every cell the path passes through, in order, without repeats."""
        out: list[str] = []
        for s in self.steps:
            for c in (s.src.rsplit("/", 1)[0], s.dst.rsplit("/", 1)[0]):
                if not out or out[-1] != c:
                    out.append(c)
        return out

    def to_dict(self) -> dict:
        return {"from_clock": self.src_clock, "to_clock": self.dst_clock,
                "delay_ns": self.delay_ns, "logic_ns": self.logic_ns,
                "routing_ns": self.routing_ns, "start": self.start_cell, "end": self.end_cell,
                "steps": [s.to_dict() for s in self.steps]}


@dataclass(frozen=True)
class PnrResult:
    clocks: dict[str, dict[str, float]]          # clock -> {achieved_mhz, constraint_mhz}
    utilization: dict[str, dict[str, int]]       # bel type -> {used, available}
    critical_paths: tuple[CriticalPath, ...]
    router: str = ROUTERS[0]                     # the router whose result this is


def args(device: Device, seed: int, freq_mhz: float, router: str = ROUTERS[0]) -> list[str]:
    extra = [] if router == ROUTERS[0] else ["--router", router]
    return [*device.nextpnr[1:], "--json", NETLIST, "--report", REPORT, "--sdf", SDF,
            "--seed", str(seed), "--freq", f"{freq_mhz:g}", "--timing-allow-fail", *extra]


#: log-line markers of the long nextpnr steps -> progress messages
PHASES = {
    "Info: Packing IOs": "packing",
    "Info: Running main analytical placer": "placing (analytical)",
    "Info: Running simulated annealing placer": "placing (annealing refinement)",
    "Info: Routing..": "routing",
}


def run_nextpnr(device: Device, work: Path, seed: int, freq_mhz: float,
                progress: Callable[[str], None] | None = None,
                stall_minutes: float = STALL_MINUTES,
                retry_minutes: float = RETRY_MINUTES) -> PnrResult:
    tool = device.nextpnr[0]
    (work / STALLED_LOG).unlink(missing_ok=True)
    for router in ROUTERS:
        try:
            run_tool(tool, args(device, seed, freq_mhz, router), work, LOG, PHASES, progress,
                     idle_timeout=stall_minutes * 60,
                     time_limit=None if router == ROUTERS[0] else retry_minutes * 60)
            break
        except ToolStalled:
            if router == ROUTERS[-1]:
                raise
            (work / LOG).replace(work / STALLED_LOG)
            if progress is not None:
                progress(f"{tool}: {router} made no progress for {stall_minutes:g} minutes; "
                         f"placing and routing again with {ROUTERS[-1]}")
    from . import sta    # not at import: ``python -m pycde_accel.fpga.sta`` runs it as __main__
    if (work / SDF).exists():
        sta.write_paths(work / SDF, work / PATHS, freq_mhz)
    return parse_report(work / REPORT)


def _r(x: float, nd: int = 3) -> float:
    return round(float(x), nd)


def _pin(end: dict) -> str:
    return f"{end.get('cell', '?')}/{end.get('port', '?')}"


def parse_report(path: Path) -> PnrResult:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"nextpnr: no readable report in {path.name} ({e})") from e
    clocks = {
        str(name): {"achieved_mhz": _r(v.get("achieved", 0.0), 2),
                    "constraint_mhz": _r(v.get("constraint", 0.0), 2)}
        for name, v in sorted(data.get("fmax", {}).items())
    }
    util = {
        str(bel): {"used": int(v.get("used", 0)), "available": int(v.get("available", 0))}
        for bel, v in sorted(data.get("utilization", {}).items())
    }
    paths = []
    for cp in data.get("critical_paths", []):
        steps = tuple(
            PathStep(type=str(s.get("type", "")), src=_pin(s.get("from", {})),
                     dst=_pin(s.get("to", {})), net=str(s.get("net", "")),
                     delay_ns=_r(s.get("delay", 0.0)))
            for s in cp.get("path", []))
        paths.append(CriticalPath(src_clock=str(cp.get("from", "")), dst_clock=str(cp.get("to", "")),
                                  steps=steps))
    paths.sort(key=lambda p: (-p.delay_ns, p.src_clock, p.dst_clock))
    router = ROUTERS[-1] if (path.parent / STALLED_LOG).is_file() else ROUTERS[0]
    return PnrResult(clocks=clocks, utilization=util, critical_paths=tuple(paths), router=router)
