"""Every failing path of a placed design, not only the worst: static timing from nextpnr's SDF.

nextpnr's report names one critical path per clock, so each placement shows one path to fix.
``run_nextpnr`` also writes the routed design's delays as SDF (``--sdf``: every net's routed
delay from driver pin to sink pin, every cell's pin-to-pin delay, every setup check). This
module reads that file and times the whole design the way nextpnr does (the max of each
min:typ:max triple; a path starts at a clock-to-output arc and ends at a pin with a setup check,
single clock), then keeps each endpoint's worst path.

``near_critical(sdf_path, period_ns, top)`` -> up to ``top`` :class:`TimedPath` s, worst
first, one per (start register, end register) pair: the register names are the cell names with
nextpnr's and Yosys' suffixes and bit indexes taken off as :mod:`.paths` does
(``store_head_d_TRELLIS_FF_Q_12`` -> ``store_head_d``), so a 64-bit bus that fails on every bit
is one line. ``format_paths`` prints them; ``run_nextpnr`` writes them as ``paths.txt`` beside
the placement. ``python -m pycde_accel.fpga.sta timing.sdf [--mhz MHZ] [--top N]`` prints them
for any SDF nextpnr wrote.

:mod:`.paths` estimates the same paths from the netlist before placement; this module gives
the placed figures.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .paths import base_name

_INTER = re.compile(r"\(INTERCONNECT\s+(\S+)\s+(\S+)\s+\(([-\d.:]*)\)")
_IOPATH = re.compile(r"\(IOPATH\s+(\((?:posedge|negedge)\s+\S+\)|\S+)\s+(\S+)\s+\(([-\d.:]*)\)")
_SETUP = re.compile(r"\(SETUP(?:HOLD)?\s+\((?:posedge|negedge)\s+(\S+)\)\s+"
                    r"\((?:posedge|negedge)\s+(\S+)\)\s+\(([-\d.:]*)\)")
_INSTANCE = re.compile(r"\(INSTANCE\s*([^)]*)\)")


def _max(triple: str) -> float:
    """The max of an SDF ``min:typ:max`` value, in the file's unit (ps)."""
    vals = [float(v) for v in triple.split(":") if v]
    return max(vals) if vals else 0.0


def _unescape(name: str) -> str:
    return re.sub(r"\\(.)", r"\1", name)


def register_name(cell: str) -> str:
    """The register a cell belongs to: :func:`.paths.base_name` (a bus is one name)."""
    return base_name(_unescape(cell)) or cell


@dataclass(frozen=True)
class Step:
    pin: str            # cell/port
    kind: str           # "clk-to-q", "logic", "routing"
    delay_ns: float


@dataclass(frozen=True)
class TimedPath:
    start: str          # start register (register_name)
    end: str            # end register
    end_pin: str
    delay_ns: float     # arrival + setup
    slack_ns: float
    steps: tuple[Step, ...]

    @property
    def routing_ns(self) -> float:
        return sum(s.delay_ns for s in self.steps if s.kind == "routing")

    @property
    def luts(self) -> int:
        """Logic steps through LUTs (carry-chain hops and clock-to-q not counted)."""
        return sum(1 for s in self.steps
                   if s.kind == "logic" and not s.pin.endswith(("FCO", "FCI")))


@dataclass
class Timing:
    """The SDF's timing graph: ``edges[pin]`` = [(next pin, delay ps, kind)]; ``starts[pin]``
    = clock-to-output delay; ``setup[pin]`` = setup time (ps)."""
    edges: dict
    starts: dict
    setup: dict


def read_sdf(path: Path) -> Timing:
    edges: dict[str, list] = defaultdict(list)
    starts: dict[str, float] = {}
    setup: dict[str, float] = {}
    inst = ""
    with open(path) as f:
        for line in f:
            if "(INSTANCE" in line:
                m = _INSTANCE.search(line)
                inst = m.group(1).strip() if m else ""
            elif "(INTERCONNECT" in line:
                m = _INTER.search(line)
                if m:
                    edges[m.group(1)].append((m.group(2), _max(m.group(3)), "routing"))
            elif "(IOPATH" in line:
                m = _IOPATH.search(line)
                if not m:
                    continue
                src, dst, d = m.group(1), m.group(2), _max(m.group(3))
                edge = re.match(r"\((posedge|negedge)\s+(\S+)\)", src)
                if edge or src.startswith("CLK"):
                    pin = f"{inst}/{dst}"
                    starts[pin] = max(starts.get(pin, 0.0), d)
                else:
                    edges[f"{inst}/{src}"].append((f"{inst}/{dst}", d, "logic"))
            elif "(SETUP" in line:
                m = _SETUP.search(line)
                if m:
                    pin = f"{inst}/{m.group(1)}"
                    setup[pin] = max(setup.get(pin, 0.0), _max(m.group(3)))
    return Timing(dict(edges), starts, setup)


def arrivals(t: Timing) -> tuple[dict, dict]:
    """Latest arrival (ps) at every pin reached from a clock-to-output arc, and each pin's
    predecessor on its latest path: (pin -> arrival, pin -> (pred pin, delay, kind))."""
    indeg: dict[str, int] = defaultdict(int)
    for src, outs in t.edges.items():
        for dst, _, _ in outs:
            indeg[dst] += 1
    arr: dict[str, float] = {}
    pred: dict[str, tuple] = {}
    for pin, d in t.starts.items():
        arr[pin] = d
        pred[pin] = (None, d, "clk-to-q")
    # Kahn's order over every pin; pins not reached from a start stay out of ``arr``
    ready = [p for p in set(t.edges) | set(t.starts) if indeg[p] == 0]
    while ready:
        p = ready.pop()
        a = arr.get(p)
        for dst, d, kind in t.edges.get(p, ()):
            if a is not None and (dst not in arr or a + d > arr[dst]):
                arr[dst] = a + d
                pred[dst] = (p, d, kind)
            indeg[dst] -= 1
            if indeg[dst] == 0:
                ready.append(dst)
    return arr, pred


def _trace(pin: str, pred: dict) -> tuple[Step, ...]:
    steps = []
    seen = set()
    while pin is not None and pin not in seen:
        seen.add(pin)
        p, d, kind = pred[pin]
        steps.append(Step(_unescape(pin), kind, d / 1000.0))
        pin = p
    return tuple(reversed(steps))


def near_critical(sdf: Path, period_ns: float, top: int = 20) -> list[TimedPath]:
    t = read_sdf(sdf)
    arr, pred = arrivals(t)
    best: dict[tuple[str, str], tuple[float, str]] = {}
    for pin, su in t.setup.items():
        if pin not in arr:
            continue
        total = arr[pin] + su
        start = pin
        while pred[start][0] is not None:
            start = pred[start][0]
        key = (register_name(start.rsplit("/", 1)[0]), register_name(pin.rsplit("/", 1)[0]))
        if key not in best or total > best[key][0]:
            best[key] = (total, pin)
    out = []
    for (s, e), (total, pin) in sorted(best.items(), key=lambda kv: -kv[1][0])[:top]:
        steps = _trace(pin, pred)
        su = t.setup[pin] / 1000.0
        out.append(TimedPath(s, e, _unescape(pin), round(total / 1000.0, 3),
                        round(period_ns - total / 1000.0, 3), steps + (Step(_unescape(pin),
                                                                          "setup", su),)))
    return out


def format_paths(paths: list[TimedPath], period_ns: float) -> str:
    lines = [f"worst path per (start register, end register), against {period_ns:.3f} ns "
             f"({1000.0 / period_ns:.2f} MHz); from nextpnr's SDF (fpga/sta.py)", ""]
    for i, p in enumerate(paths, 1):
        lines.append(f"{i:3d}. {p.delay_ns:6.3f} ns (slack {p.slack_ns:+.3f}, routing "
                     f"{p.routing_ns:.3f}, {p.luts} LUT steps)  {p.start} -> {p.end}")
        for s in p.steps:
            lines.append(f"       {s.kind:9s} {s.delay_ns:6.3f}  {s.pin}")
    return "\n".join(lines) + "\n"


def write_paths(sdf: Path, out: Path, freq_mhz: float, top: int = 20) -> Path:
    """:func:`format_paths` of ``sdf`` into ``out``."""
    period = 1000.0 / freq_mhz
    out.write_text(format_paths(near_critical(sdf, period, top), period))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pycde_accel.fpga.sta",
                                 description="The worst path of each (start register, end "
                                             "register) pair in a design nextpnr routed, from "
                                             "the SDF it wrote (--sdf).")
    ap.add_argument("sdf", type=Path,
                    help="the SDF file (run_nextpnr writes timing.sdf in its work folder)")
    ap.add_argument("--mhz", type=float, default=150.0,
                    help="the clock the slack is against (default 150)")
    ap.add_argument("--top", type=int, default=20, help="paths to print (default 20)")
    a = ap.parse_args(argv)
    if not a.sdf.is_file():
        print(f"error: no SDF file at {a.sdf}", file=sys.stderr)
        return 2
    period = 1000.0 / a.mhz
    sys.stdout.write(format_paths(near_critical(a.sdf, period, a.top), period))
    return 0


if __name__ == "__main__":
    sys.exit(main())
