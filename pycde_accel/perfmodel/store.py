"""The store engine: STORE commands (``STORE_QUEUE`` queued), one row of C taken every
``cols / L`` cycles (``L = config.lanes`` requantize kernels side by side) from the core's
output FIFO, its ``cols / AB`` beats leaving the kernels one every ``AB / L`` cycles after the
route's store latency, one 2-D DMA write per tile (valid rows only);
the kernel's restart bubble between tiles (``store_bubble``)."""

from __future__ import annotations

from collections import deque

from ..contract import STORE_QUEUE
from .dma import bursts


class StoreEngine:
    __slots__ = ("cmds", "R", "C", "ab", "lat", "bubble", "q", "mm", "wdma", "queued",
                 "take_next", "busy_until", "lanes")

    def __init__(self, cmds, rows: int, cols: int, ab: int, latency: int, bubble: int,
                 queue: deque, matmul, wdma, lanes: int = 1):
        self.cmds, self.R, self.C, self.ab = cmds, rows, cols, ab
        self.lat, self.bubble = latency, bubble
        self.lanes = lanes
        self.q, self.mm, self.wdma = queue, matmul, wdma   # queue: Dispatch.engq[2]
        self.queued = deque()     # accepted commands: [rows to take, valid_rows, addr, stride]
        self.take_next = 0
        self.busy_until = -1      # last data beat time of accepted commands (upper bound)

    def idle_for_params(self, t) -> bool:
        """A LOAD P may be dispatched (every earlier STORE done)."""
        return not self.queued and t > self.busy_until

    def step(self, t) -> bool:
        moved = False
        q = self.q
        if q and q[0][0] <= t and len(self.queued) < STORE_QUEUE:
            c = self.cmds[q.popleft()[1]]
            self.queued.append([self.R, c.valid_rows, c.addr, c.stride])
            moved = True
        out_rows = self.mm.out_rows
        if self.queued and out_rows and out_rows[0] <= t and t >= self.take_next:
            R, C, ab = self.R, self.C, self.ab
            out_rows.popleft()
            self.mm.out_held -= 1
            L = self.lanes
            self.take_next = t + C // L
            sc = self.queued[0]
            r = R - sc[0]
            sc[0] -= 1
            moved = True
            if r < sc[1]:
                # the row's C/AB beats leave the kernels one every AB/L cycles
                offer = self.wdma.offer
                for b in range(C // ab):
                    offer(t + (b + 1) * (ab // L) + self.lat)
            if r == 0:
                self.wdma.command(t, bursts(sc[2], C // ab, sc[1], sc[3], ab))
            if sc[0] == 0:
                self.take_next += self.bubble
                self.queued.popleft()
                self.busy_until = max(self.busy_until, t + C // L + self.lat)
        return moved

    def idle(self, t) -> bool:
        return not self.queued and t > self.busy_until

    def wakes(self, out: list) -> None:
        if self.mm.out_rows:
            out.append(self.mm.out_rows[0])
            out.append(self.take_next)
        out.append(self.busy_until + 1)
