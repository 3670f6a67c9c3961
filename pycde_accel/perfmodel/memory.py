"""The board's DRAM bandwidth, charged at the design's clock: the throttle the simulators' AXI
memory (``sim/axi_mem.sv``) applies and the perf model follows, and what a configuration needs.

Which bandwidth, at which clock
-------------------------------
``config.memory == "board"`` (the default): the target preset's board memory
(``fpga.devices.Device.memory``: its peak bytes per second, data width x transfer rate) at the
config's ``clock_mhz``, the clock the design is built and constrained for. Bytes per cycle =
peak bytes/s / (clock_mhz x 1e6), as an exact fraction :func:`rate` (``num / den``). A
placed Fmax changes it: a design run at its Fmax gets peak / Fmax per cycle, so to simulate or
predict at the placed clock set ``clock_mhz`` to it (the report states both when a synthesis
report is there). ``"ideal"``: no limit beyond the AXI bus itself (one beat per cycle on the
read and on the write channel), the memory the block tests and the fitted latencies assume.

The throttle (the same in the RTL memory and in :class:`Budget`)
---------------------------------------------------------------
DRAM has one data bus for both directions, so R and W beats draw on one credit counter, in
units of 1/den byte: it starts full at ``cap = 2 * need`` (``need = AB * den``, one beat;
at most one R and one W beat move a cycle, so a board with ``num >= cap`` never throttles:
:func:`rate` returns None then); each cycle ``credit = min(credit - need * beats + num, cap)``.
R goes first without starving W: an R beat is offered when one is due and either it was
offered the cycle before and not taken (an offered beat stays offered, as AXI wants) or the
counter holds one beat (two when W wanted a beat the cycle before and did not get it); a W
beat is taken when the counter holds one beat beyond the offered R beat. Peak figures only:
refresh, row misses and bus turnaround are not charged.

What a configuration needs (:func:`summary`)
--------------------------------------------
Per layer: the DRAM bytes its command list moves (reads including the commands themselves,
writes) and the cycles of its busiest compute engine alone (core, store, vector:
:func:`~.bounds.bounds`); demand = bytes / those cycles is what the memory must give per cycle
for the layer to run compute-bound; ``memory_cycles`` the memory alone (the bytes at what is
charged, and one AXI beat per cycle each way). A layer's ``bottleneck`` is what takes longest
alone: ``board_memory`` (the board's bytes per cycle), ``axi_read`` / ``axi_write`` (the bus:
one beat per cycle each way) or its compute engine; the model's is the one that bounds the
most cycles summed over layers, and ``memory_bound_share`` the share of those bound cycles in
layers the memory or the bus limits. ``need_bytes_per_cycle`` / ``need_gb_s``: the largest layer demand,
what the memory must give for every layer with MACs or post-ops to run compute-bound.
"""

from __future__ import annotations

from fractions import Fraction

from ..config import AccelConfig
from .bounds import bounds

#: the compute engines of :func:`~.bounds.bounds` (the others are the DMA channels)
COMPUTE = ("core", "store", "vector")


def board_memory(config: AccelConfig):
    """The target preset's :class:`~pycde_accel.fpga.devices.BoardMemory` (None if it has none)."""
    from ..fpga.devices import get_device
    return get_device(config.target).memory


def bytes_per_cycle(config: AccelConfig) -> Fraction | None:
    """What the board memory gives per cycle at ``clock_mhz`` (None: no board figure)."""
    mem = board_memory(config)
    if mem is None:
        return None
    mt = Fraction(mem.mt_s).limit_denominator(1000)
    return Fraction(mem.width_bits, 8) * mt / Fraction(config.clock_mhz).limit_denominator(1000)


def charged_bytes_per_cycle(config: AccelConfig) -> Fraction:
    """What the simulators and the perf model let through per cycle: the board's bytes per
    cycle (``memory == "board"``) but no more than the AXI bus (a beat each way a cycle)."""
    bus = Fraction(2 * (config.axi_data_width // 8))
    bpc = bytes_per_cycle(config) if config.memory == "board" else None
    return bus if bpc is None else min(bpc, bus)


def rate(config: AccelConfig) -> tuple[int, int] | None:
    """The throttle ``(num, den)``: bytes per cycle = num / den (both < 2**31), or None when
    nothing is throttled (``memory == "ideal"``, no board figure, or a board that gives two
    beats a cycle or more)."""
    if config.memory == "ideal":
        return None
    bpc = bytes_per_cycle(config)
    if bpc is None:
        return None
    ab = config.axi_data_width // 8
    if bpc >= 2 * ab:
        return None
    bpc = bpc.limit_denominator(1 << 16)
    return bpc.numerator, bpc.denominator


class Budget:
    """The shared R/W credit counter of the module docstring, cycle by cycle, for the perf
    model's DMA (:mod:`.dma`): per evaluated cycle ``begin(t, r_due)`` (an R beat is due),
    then ``r_valid`` / ``w_ok`` say what may move, ``take_r`` / ``take_w`` spend, and
    ``end(w_want)`` latches the flags (True when they changed: the cycle after must be
    evaluated). Skipped cycles (nothing moved) only add credit; :meth:`wake` names the next
    cycle at which the credit crosses a threshold."""

    __slots__ = ("on", "num", "need", "cap", "c", "t", "spent", "r_shown", "w_starved",
                 "r_valid", "w_ok", "r_fired", "w_fired")

    def __init__(self, config: AccelConfig):
        r = rate(config)
        self.on = r is not None
        num, den = r if r else (1, 1)
        self.num = num
        self.need = config.axi_data_width // 8 * den
        self.cap = 2 * self.need
        self.c = self.cap        # credit at the start of cycle self.t
        self.t = 0
        self.spent = 0
        self.r_shown = self.w_starved = False
        self.r_valid = self.w_ok = True
        self.r_fired = self.w_fired = False

    def _credit_at(self, t) -> int:
        """Credit at the start of cycle t > self.t (nothing moves in between)."""
        return min(self.cap, self.c - self.spent + self.num * (t - self.t))

    def begin(self, t, r_due: bool) -> None:
        if t > self.t:
            self.c = self._credit_at(t)
            self.t, self.spent = t, 0
        c = self.c
        self.r_valid = r_due and (self.r_shown or c >= (self.cap if self.w_starved else self.need))
        self.w_ok = c - (self.need if self.r_valid else 0) >= self.need
        self.r_fired = self.w_fired = False

    def take_r(self) -> None:
        self.spent += self.need
        self.r_fired = True

    def take_w(self) -> None:
        self.spent += self.need
        self.w_fired = True

    def end(self, w_want: bool) -> bool:
        rs = self.r_valid and not self.r_fired
        ws = w_want and not self.w_fired
        changed = rs != self.r_shown or ws != self.w_starved
        self.r_shown, self.w_starved = rs, ws
        return changed

    def wake(self, t):
        """The first cycle > t at which the credit reaches one or two beats (None: it has)."""
        c = self._credit_at(t + 1)
        out = None
        for th in (self.need, self.cap):
            if c < th:
                w = t + 1 + -(-(th - c) // self.num)
                out = w if out is None else min(out, w)
        return out


def summary(compiled, config: AccelConfig | None = None) -> dict:
    """What ``compiled``'s layers demand of the memory against what the board gives: the
    ``memory`` section of design.json and report.json (see the module docstring)."""
    config = config or compiled.config
    ab = config.axi_data_width // 8
    mem = board_memory(config)
    bpc = bytes_per_cycle(config)
    gives = float(charged_bytes_per_cycle(config))
    layers, need_max, tot_bytes, tot_compute, t_all, t_mem_bound = [], 0.0, 0, 0, 0.0, 0.0
    by_limit: dict[str, float] = {}
    board_on = config.memory == "board" and bpc is not None
    for i, (entry, cmds) in enumerate(zip(compiled.layers, compiled.commands)):
        b = bounds(cmds, config)
        nbytes = (b["read"] + b["write"]) * ab
        engine = max(COMPUTE, key=lambda k: b[k])
        compute = b[engine]
        demand = nbytes / compute if compute else None
        # what limits the layer: its busiest compute engine, or the memory: the board's bytes
        # per cycle, or the AXI bus (one beat per cycle each way)
        limits = {engine: compute, "axi_read": b["read"], "axi_write": b["write"]}
        if board_on:
            limits["board_memory"] = b["memory"]
        limit = max(limits, key=lambda k: (limits[k], k in COMPUTE))
        t_mem = max(v for k, v in limits.items() if k not in COMPUTE)
        tot_bytes += nbytes
        tot_compute += compute
        if demand is not None:
            need_max = max(need_max, demand)
        bound = limits[limit]
        t_all += bound
        by_limit[limit] = by_limit.get(limit, 0) + bound
        if limit not in COMPUTE:
            t_mem_bound += bound
        layers.append({"index": i, "name": str(entry.get("name", i)), "bytes": nbytes,
                       "compute_cycles": compute, "compute_engine": engine,
                       "memory_cycles": t_mem,
                       "demand_bytes_per_cycle": None if demand is None else round(demand, 4),
                       "bottleneck": limit})
    clock = float(config.clock_mhz)
    share = t_mem_bound / t_all if t_all else 0.0
    return {
        "model": config.memory,
        "board": mem.to_dict() if mem is not None else None,
        "clock_mhz": clock,
        "axi_bytes_per_beat": ab,
        "board_bytes_per_cycle": None if bpc is None else round(float(bpc), 4),
        "charged_bytes_per_cycle": round(gives, 4),
        "throttled": rate(config) is not None,
        "need_bytes_per_cycle": round(need_max, 4),
        "need_gb_s": round(need_max * clock * 1e6 / 1e9, 4),
        "average_need_bytes_per_cycle": round(tot_bytes / tot_compute, 4) if tot_compute else None,
        "memory_bound_layers": sum(1 for l in layers if l["bottleneck"] not in COMPUTE),
        "memory_bound_share": round(share, 4),
        "bottleneck": max(by_limit, key=by_limit.get) if by_limit else None,
        "layers": layers,
    }
