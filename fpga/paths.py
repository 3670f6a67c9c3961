"""Register-to-register paths of a synthesized ECP5 netlist, estimated before placement.

One placement of the whole accelerator takes 10 to 50 minutes and reports one critical path;
fixing paths one placement at a time is slow. This module reads Yosys' ``netlist.json`` (the
``synth_ecp5`` output, flattened) and estimates the arrival time of every timing endpoint from
a delay model of the ECP5 cells with an average routing delay per net, so that **every** path
over a clock budget is listed after synthesis alone (a few minutes). It ranks and groups paths;
it does not replace nextpnr's figure (routing varies by 2x with placement).

``analyze(netlist, model) -> Analysis``; ``Analysis.over(budget_ns)`` the endpoints whose
estimate exceeds the budget, worst first, each with its path (cells, one per level) and the
group it belongs to (the register names with bit indices stripped, so a 32-bit bus is one
line). ``python -m pycde_accel.fpga.paths NETLIST [--mhz F] [--top N]`` prints the groups.

Delay model (``DelayModel``, ns, ECP5 speed grade 6 as nextpnr times it, routing averaged over
the placed accelerators' critical paths: about 1 ns a net, more with fanout):

* start points: a flip-flop's Q (clock-to-out), a block RAM's data out (clock-to-out, 5.6 ns
  without its output register, ``REGMODE`` ``NOREG``), a DSP's registered outputs (or,
  with registered inputs only, its outputs after the multiplier), top-level inputs (0);
  a MULT18X18D with neither registered is combinational;
* combinational cells: LUT4, the wide-function muxes (PFUMX, L6MUX21), the carry cell CCU2C
  (input to sum, input to carry out, carry in to carry out along the chain with no routing),
  the LUT RAM's read (address to data);
* end points: every input of a flip-flop, block RAM, registered DSP (through the multiplier
  when only its outputs are registered) or LUT RAM write port (setup), and top-level outputs;
* each net adds ``route_ns + route_fanout_ns * log2(fanout)`` (a carry chain's COUT -> CIN adds
  nothing).

Unknown cell types are reported and treated as registers (their outputs start paths).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class DelayModel:
    clk_to_q: float = 0.40
    setup: float = 0.10
    lut: float = 0.25
    mux: float = 0.20             # PFUMX / L6MUX21
    carry_in: float = 0.45         # CCU2C A/B/C/D -> S or COUT
    carry_chain: float = 0.06      # CCU2C CIN -> COUT (2 bits)
    carry_sum: float = 0.25        # CCU2C CIN -> S
    lutram_read: float = 0.45      # TRELLIS_DPR16X4 RAD -> DO
    bram_noreg: float = 5.60       # DP16KD clock to data out, output register unused
    bram_reg: float = 0.90         # DP16KD clock to data out, output register used
    dsp_out: float = 1.00          # MULT18X18D clock to its registered outputs
    dsp_comb: float = 3.90         # MULT18X18D through its multiplier (inputs or outputs not
                                   # registered in the block)
    route_ns: float = 0.90
    route_fanout_ns: float = 0.12


# combinational cell type -> the kind of its input-to-output delay (DelayModel's fields)
_COMB = {
    "LUT4": "lut", "PFUMX": "mux", "L6MUX21": "mux", "CCU2C": "carry",
    "TRELLIS_DPR16X4": "lutram",
}
_SEQ = {"TRELLIS_FF", "DP16KD", "PDPW16KD", "MULT18X18D", "ALU54B"}
_IGNORE = {"$scopeinfo", "VLO", "VHI"}


@dataclass
class Endpoint:
    name: str        # cell/port of the endpoint
    arrival: float
    path: list[str]  # cell names, start to end
    group: str


@dataclass
class Analysis:
    endpoints: list[Endpoint]
    unknown: dict[str, int] = field(default_factory=dict)

    def over(self, budget_ns: float) -> list[Endpoint]:
        return sorted((e for e in self.endpoints if e.arrival > budget_ns),
                      key=lambda e: (-e.arrival, e.name))

    def groups(self, budget_ns: float) -> list[tuple[str, int, Endpoint]]:
        """(group, endpoints in it, its worst endpoint) over the budget, worst first."""
        by: dict[str, list[Endpoint]] = defaultdict(list)
        for e in self.over(budget_ns):
            by[e.group].append(e)
        rows = [(g, len(es), es[0]) for g, es in by.items()]
        return sorted(rows, key=lambda r: (-r[2].arrival, r[0]))


_BIT = re.compile(r"\[\d+\]|_\d+(?=$|[._])|\$\d+|(\.\d+)+(?=$|[._])")
# the suffixes Yosys' techmap appends to the net a mapped cell drives
_MAPPED = re.compile(r"_(TRELLIS_FF|TRELLIS_DPR16X4|LUT4|CCU2C|PFUMX|L6MUX21|DP16KD|MULT18X18D)"
                     r"(_|$).*|_(DO|DI|AD|WAD|RAD)[AB]?\d+$")


def base_name(cell: str) -> str:
    """A cell name without bit indices, Yosys' numbering and techmap suffixes: a bus is one
    name."""
    s = cell.split("$", 1)[0].rstrip(".") if "$" in cell and not cell.startswith("$") else cell
    return _BIT.sub("", _MAPPED.sub("", s))


def _top(netlist: dict) -> dict:
    mods = netlist["modules"]
    for m in mods.values():
        if int(m.get("attributes", {}).get("top", "0") or 0):
            return m
    return max(mods.values(), key=lambda m: len(m.get("cells", {})))


def _dsp_regs(cell: dict) -> tuple[bool, bool]:
    """(inputs registered, outputs registered) of a MULT18X18D."""
    prm = cell.get("parameters", {})
    reg = lambda k: str(prm.get(k, "NONE")) not in ("NONE", "")
    return reg("REG_INPUTA_CLK") or reg("REG_INPUTB_CLK"), (reg("REG_OUTPUT_CLK") or
                                                            reg("REG_PIPELINE_CLK"))


def _is_comb(cell: dict) -> bool:
    t = cell["type"]
    return t in _COMB or (t == "MULT18X18D" and _dsp_regs(cell) == (False, False))


def analyze(netlist: dict, model: DelayModel = DelayModel()) -> Analysis:
    top = _top(netlist)
    cells = top.get("cells", {})
    drivers: dict[int, tuple[str, str]] = {}     # bit -> (cell, port)
    sinks: dict[int, list[tuple[str, str]]] = defaultdict(list)
    unknown: dict[str, int] = defaultdict(int)
    for name, c in cells.items():
        t = c["type"]
        if t in _IGNORE:
            continue
        if t not in _COMB and t not in _SEQ:
            unknown[t] += 1
        for port, bits in c.get("connections", {}).items():
            d = c.get("port_directions", {}).get(port, "input")
            for b in bits:
                if not isinstance(b, int):
                    continue
                if d == "output":
                    drivers[b] = (name, port)
                else:
                    sinks[b].append((name, port))
    for pname, p in top.get("ports", {}).items():
        for b in p["bits"]:
            if isinstance(b, int) and p["direction"] == "input":
                drivers[b] = (f"<in {pname}>", pname)

    def route(bit: int, sink_port: str) -> float:
        drv = drivers.get(bit)
        if drv and drv[1] == "COUT" and sink_port == "CIN":
            return 0.0
        n = max(1, len(sinks[bit]))
        return model.route_ns + model.route_fanout_ns * math.log2(n)

    # arrival at each net bit (at its driver's output), memoized depth-first
    arrival: dict[int, float] = {}
    prev: dict[int, int | None] = {}   # bit -> the input bit its worst arrival came through

    def start_time(cname: str, port: str) -> float:
        if cname.startswith("<in "):
            return 0.0
        c = cells[cname]
        t = c["type"]
        if t in ("DP16KD", "PDPW16KD"):
            side = "A" if port.startswith("DOA") else "B"
            mode = c.get("parameters", {}).get(f"REGMODE_{side}", "NOREG")
            return model.bram_reg if "OUTREG" in str(mode) else model.bram_noreg
        if t == "MULT18X18D":
            return model.dsp_out if _dsp_regs(c)[1] else model.dsp_comb
        if t == "ALU54B":
            return model.dsp_out
        return model.clk_to_q

    def comb_inputs(cname: str, port: str) -> list[tuple[int, str, float]]:
        """(input bit, input port, cell delay) that reach output ``port`` of comb cell
        ``cname``."""
        c = cells[cname]
        conn = c["connections"]
        dirs = c.get("port_directions", {})
        ins = [(p, bits) for p, bits in conn.items() if dirs.get(p) == "input"]
        out: list[tuple[int, str, float]] = []
        if c["type"] == "MULT18X18D":
            for p, bits in ins:
                if p[0] in "AB" and p[1:].isdigit():
                    out += [(b, p, model.dsp_comb) for b in bits if isinstance(b, int)]
            return out
        kind = _COMB[c["type"]]
        if kind == "lutram":
            # read port only: RAD -> DO (the write side is sequential)
            for p, bits in ins:
                if p.startswith("RAD"):
                    out += [(b, p, model.lutram_read) for b in bits if isinstance(b, int)]
            return out
        if kind == "carry":
            for p, bits in ins:
                for b in bits:
                    if not isinstance(b, int):
                        continue
                    if p == "CIN":
                        out.append((b, p, model.carry_chain if port == "COUT" else model.carry_sum))
                    elif port == "S0" and p.endswith("1"):
                        continue          # bit 1's inputs do not reach S0
                    else:
                        out.append((b, p, model.carry_in))
            return out
        d = model.lut if kind == "lut" else model.mux
        for p, bits in ins:
            out += [(b, p, d) for b in bits if isinstance(b, int)]
        return out

    def arr(bit: int) -> float:
        if bit in arrival:
            return arrival[bit]
        drv = drivers.get(bit)
        if drv is None:
            arrival[bit], prev[bit] = 0.0, None
            return 0.0
        cname, port = drv
        if cname.startswith("<in ") or not _is_comb(cells[cname]) or (
                cells[cname]["type"] == "TRELLIS_DPR16X4" and not port.startswith("DO")):
            arrival[bit], prev[bit] = start_time(cname, port), None
            return arrival[bit]
        arrival[bit] = 0.0          # breaks a combinational loop, should one exist
        best, via = 0.0, None
        for ib, ip, d in comb_inputs(cname, port):
            t = arr(ib) + route(ib, ip) + d
            if t > best:
                best, via = t, ib
        arrival[bit], prev[bit] = best, via
        return best

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    endpoints: list[Endpoint] = []
    for name, c in cells.items():
        t = c["type"]
        if t in _IGNORE or (_is_comb(c) and t != "TRELLIS_DPR16X4"):
            continue
        extra = 0.0
        if t == "MULT18X18D" and not _dsp_regs(c)[0]:
            extra = model.dsp_comb        # through the multiplier into its output register
        dirs = c.get("port_directions", {})
        for port, bits in c.get("connections", {}).items():
            if dirs.get(port) != "input" or port.startswith("CLK") or port == "WCK":
                continue
            if t == "TRELLIS_DPR16X4" and port.startswith("RAD"):
                continue
            for b in bits:
                if not isinstance(b, int):
                    continue
                dsp = extra if port[:1] in ("A", "B") else 0.0
                a = arr(b) + route(b, port) + model.setup + dsp
                endpoints.append(Endpoint(f"{name}/{port}", a, _trace(b, prev, drivers) + [name],
                                          ""))
    for pname, p in top.get("ports", {}).items():
        if p["direction"] == "output":
            for b in p["bits"]:
                if isinstance(b, int):
                    endpoints.append(Endpoint(f"<out {pname}>", arr(b),
                                              _trace(b, prev, drivers) + [f"<out {pname}>"], ""))
    for e in endpoints:
        e.group = f"{base_name(e.path[0])} -> {base_name(e.path[-1])}"
    return Analysis(endpoints, dict(unknown))


def _trace(bit: int, prev: dict, drivers: dict) -> list[str]:
    names: list[str] = []
    b: int | None = bit
    while b is not None:
        drv = drivers.get(b)
        if drv is None:
            break
        names.append(drv[0])
        b = prev.get(b)
    return names[::-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pycde_accel.fpga.paths",
        description="Estimate every register-to-register path of a synthesized ECP5 netlist "
                    "(Yosys netlist.json) and list the groups over a clock's budget.")
    ap.add_argument("netlist",
                    help="Yosys netlist.json of synth_ecp5 (e.g. OUT/synth/netlist.json)")
    ap.add_argument("--mhz", type=float, default=150.0, help="clock the budget comes from (150)")
    ap.add_argument("--top", type=int, default=25, help="groups to print (25)")
    args = ap.parse_args(argv)
    path = Path(args.netlist)
    try:
        netlist = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        print(f"error: cannot read {path}: {e}", file=sys.stderr)
        return 2
    res = analyze(netlist)
    budget = 1000.0 / args.mhz
    rows = res.groups(budget)
    n_over = sum(r[1] for r in rows)
    worst = max((e.arrival for e in res.endpoints), default=0.0)
    print(f"{len(res.endpoints)} endpoints; worst estimate {worst:.2f} ns "
          f"({1000.0 / worst if worst else 0:.1f} MHz); {n_over} over {budget:.2f} ns "
          f"({args.mhz:g} MHz) in {len(rows)} groups")
    for g, n, e in rows[:args.top]:
        levels = len(e.path) - 2
        print(f"{e.arrival:6.2f} ns  {n:5d} endpoints  {levels:2d} levels  {g}")
        via: list[str] = []
        for c in e.path[1:-1]:
            b = base_name(c)
            if not via or via[-1] != b:
                via.append(b)
        if via:
            print("          via " + " -> ".join(via[:8]) + (" ..." if len(via) > 8 else ""))
    if res.unknown:
        print("cell types treated as registers: " +
              ", ".join(f"{t} x{n}" for t, n in sorted(res.unknown.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
