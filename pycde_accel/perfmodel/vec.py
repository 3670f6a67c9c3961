"""The vector engine: one VEC at a time, a per-command start-up; S beats wait in a 2-entry input
slice (ahead of their command if need be), leave it one per cycle as the command needs them and
the ``VEC_PAIR_FIFO_DEPTH`` pair FIFO has room; each beat takes one cycle (MAX: AB lane
kernels) or AB + the route's bubble (ADD, MUL), 3 cycles after its S beat left the slice at the
earliest; the result beats
go to the write DMA (one burst command per VEC) or back into X (TO_X) after the kernel's drain;
a DRAM-bound beat (not ROWRED's) starts only while fewer than ``VEC_WD_CREDITS`` of its beats
wait for W.
LUT_SET / LUT (the function table, engine logic, no kernel) take one S beat per cycle, up to
``LUT_CREDITS`` beats in flight, a LUT result beat ``LUT_LATENCY`` cycles after its S beat
left the slice; LUT_SET writes no result. ROWRED (the row-reduction unit) is paced like LUT,
one S beat per cycle, with ``ROWRED_CREDITS`` beats in flight and its lane tree, accumulator,
requantize and broadcast as a fixed drain (the timing's ``rowred_drain``) per command."""

from __future__ import annotations

from collections import deque

from ..contract import (VEC_LUT, VEC_LUT_SET, VEC_MAX, VEC_MUL, VEC_PAIR_FIFO_DEPTH, VEC_ROWRED,
                        VEC_TO_X)
from .dma import bursts
from .timing import INF, SLICE, VEC_S_TO_START, VEC_WD_SLICE

#: rtl_lib.vector_engine's LUT path: result beats in flight (its FIFO depth) and the cycles
#: from an S beat leaving the input slice to its result beat on the write port (fitted
#: against Verilator runs of tests/ops/test_lut.py's model: per command, the engine's
#: start and finish overlap the DMA's more than the model's steps count)
LUT_CREDITS = 8
LUT_LATENCY = 4
#: rtl_lib.row_reduce: its input FIFO (credits); its drain (the row_lanes and requantize
#: pipelines, the accumulator, the broadcast) is the timing's ``rowred_drain``
ROWRED_CREDITS = 8
#: DRAM-bound result beats on their way from the kernels to the AXI W channel (the output
#: register, ``wd_out``, the write arbiter's skid buffer and ``arb_data_q``, the DMA's W
#: slice): under write back-pressure (the board memory's throttle) a beat starts only while
#: fewer than this many have not been taken on W, so the engine, its S slice, the router and
#: the R channel slow with the W beats, as in the RTL. Fitted against Verilator runs of a
#: conv + max-pool at 100..140 MHz (the max-pool layer: 5758 RTL cycles at 105..130 MHz,
#: 5774 predicted; it was 5223 without the back-pressure); the structure holds about 8.
VEC_WD_CREDITS = 8


class _Active:
    __slots__ = ("n", "s_taken", "done", "s_times", "next", "per", "drain", "to_x", "lut",
                 "paced")

    def __init__(self, n, start, per, drain, to_x):
        self.lut = False
        self.paced = not to_x     # a beat starts only with a W credit (VEC_WD_CREDITS)
        self.n, self.s_taken, self.done, self.s_times = n, 0, 0, deque()
        self.next, self.per, self.drain, self.to_x = start, per, drain, to_x


class VecEngine:
    __slots__ = ("cmds", "ab", "startup", "add_bubble", "add_drain", "max_drain", "q", "wdma",
                 "active", "busy_until", "s_pre", "mul_extra", "rowred_drain", "wd_seq")

    def __init__(self, cmds, ab: int, timing: dict, queue: deque, wdma):
        self.cmds, self.ab = cmds, ab
        self.startup, self.add_bubble = timing["vec_startup"], timing["add_bubble"]
        self.add_drain, self.max_drain = timing["add_drain"], timing["max_drain"]
        self.mul_extra, self.rowred_drain = timing["mul_extra_drain"], timing["rowred_drain"]
        self.q, self.wdma = queue, wdma        # queue: Dispatch.engq[3]
        self.active = None
        self.busy_until = -1
        self.s_pre = deque()      # S beats in the input slice: times taken
        self.wd_seq = deque()     # the write DMA's numbers of this engine's DRAM-bound beats
        #                           not yet taken on W

    # ---- the router's side
    def s_room(self) -> bool:
        return len(self.s_pre) < SLICE

    def s_beat(self, t) -> None:
        self.s_pre.append(t)

    def idle_for_x(self, t) -> bool:
        """A LOAD X may be dispatched (every earlier VEC done; its idle is a register)."""
        return self.active is None and t > self.busy_until + 1

    def step(self, t) -> bool:
        moved = False
        q = self.q
        if self.active is None and q and q[0][0] <= t and t > self.busy_until:
            c = self.cmds[q.popleft()[1]]
            mx = bool(c.flags & VEC_MAX)
            per = 1 if mx else self.ab + self.add_bubble    # MAX: AB lane kernels, a beat
            lut = bool(c.flags & (VEC_LUT | VEC_LUT_SET))
            if c.flags & VEC_ROWRED:    # one beat per cycle, a fixed drain
                self.active = _Active(c.n, t + 1, 1, self.rowred_drain, False)
                self.active.lut = True
                # the row unit reduces the whole row before its results leave: its drain is
                # not the output chain, so its beats take no W credit
                self.active.paced = False
            elif lut:     # one beat per cycle, no kernel
                self.active = _Active(c.n, t + 1, 1, LUT_LATENCY - VEC_S_TO_START - 1,
                                      bool(c.flags & (VEC_TO_X | VEC_LUT_SET)))
                self.active.lut = True
            else:
                drain = self.max_drain if mx else self.add_drain
                if c.flags & VEC_MUL:
                    drain += self.mul_extra
                self.active = _Active(c.n, t + self.startup, per, drain,
                                      bool(c.flags & VEC_TO_X))
            if not c.flags & (VEC_TO_X | VEC_LUT_SET):
                self.wdma.command(t, bursts(c.dst, c.n, 1, self.ab, self.ab))
            moved = True
        va = self.active
        # an S beat leaves the input slice (X read issued) one per cycle, as the command
        # needs it and the pair FIFO has room
        if va is not None and self.s_pre and self.s_pre[0] < t and va.s_taken < va.n and \
                va.s_taken - va.done < (LUT_CREDITS if va.lut else VEC_PAIR_FIFO_DEPTH):
            self.s_pre.popleft()
            va.s_times.append(t)
            va.s_taken += 1
            moved = True
        if va is not None and va.s_times:
            start = max(va.s_times[0] + VEC_S_TO_START, va.next)
            if start <= t and va.paced:
                seq, taken = self.wd_seq, self.wdma.taken
                while seq and seq[0] < taken:
                    seq.popleft()
                if len(seq) >= VEC_WD_CREDITS:
                    start = INF
            if start <= t:
                va.s_times.popleft()
                fin = start + va.per
                va.next = fin
                va.done += 1
                moved = True
                out = fin + va.drain + (0 if va.to_x else VEC_WD_SLICE)
                if not va.to_x:
                    self.wd_seq.append(self.wdma.offered)
                    self.wdma.offer(out)
                if va.done == va.n:
                    self.busy_until = out
                    self.active = None
        return moved

    def idle(self, t) -> bool:
        return self.active is None and t > self.busy_until

    def wakes(self, out: list) -> None:
        va = self.active
        if va is not None and va.s_times:
            out.append(max(va.s_times[0] + VEC_S_TO_START, va.next))
        if va is not None and self.s_pre:
            out.append(self.s_pre[0] + 1)
        out.append(self.busy_until + 2)
