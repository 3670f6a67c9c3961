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

What a configuration needs: :mod:`.demand`.
"""

from __future__ import annotations

from fractions import Fraction

from ..config import AccelConfig


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
