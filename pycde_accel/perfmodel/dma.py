"""The DMA engines of the model: the burst splitter, the read side (bursts in flight, R beats in
order) and the write side (AW, W beats, B responses), as ``rtl_lib.axi_dma`` runs them.

* :func:`bursts`: the burst lengths of one 2-D transfer (<= ``MAX_BURST`` beats, never across a
  ``BURST_BOUNDARY``).
* :class:`ReadDma`: a command reaches the splitter through the top's command register
  (``rd_cmd_q``, one entry: it takes a command while it is empty and the splitter idle, and
  offers it the cycle after); the splitter takes it and puts one burst per cycle into its
  output register (from the edge after it took the command), which issues it while fewer than
  ``MAX_OUTSTANDING`` are in flight (so one burst more than those waits there); it is idle
  again the cycle after the last burst of the current one entered the output register; a
  burst's first beat comes ``read_latency`` cycles after it is issued and leaves the DMA
  ``RD_SLICE`` later (the R register slice), into the router's slice (``ROUTE_RD_SLICE``
  entries, latency 1: :meth:`ReadDma.r_step`), which releases the burst's outstanding slot
  with its last beat. The router takes the beats from that slice (:mod:`.load`).
* :class:`WriteDma`: a command's bursts may issue ``WR_CMD_SLICE`` cycles after an engine's
  command was taken (the DMA's command slice), one AW per cycle (``MAX_OUTSTANDING`` bursts
  until their B response), a burst's W beats from ``AW_TO_W`` cycles after its AW (the
  burst-length FIFO's head slice), one W beat per cycle as the engines offer them
  (``WD_SKID`` cycles later: the write arbiter's skid buffer in front of its data slice), B
  ``W_SLICE + write_latency`` after the DMA took a burst's last beat (its W register slice,
  then the memory).

Both draw their R and W beats on one :class:`~.memory.Budget` (the board's bytes per cycle;
an R beat before a W beat of the same cycle, as ``sim/axi_mem.sv``); without one, or with the
``ideal`` memory, a beat per cycle each way.
"""

from __future__ import annotations

from collections import deque

from ..contract import BURST_BOUNDARY, MAX_BURST, MAX_OUTSTANDING
from .memory import Budget
from .timing import AW_TO_W, INF, RD_SLICE, ROUTE_RD_SLICE, W_SLICE, WD_SKID, WR_CMD_SLICE

_NO_LIMIT = None


def _budget(mem):
    """``mem`` or, if None, a Budget that never throttles (the ideal memory)."""
    global _NO_LIMIT
    if mem is not None:
        return mem
    if _NO_LIMIT is None:
        from ..config import AccelConfig
        _NO_LIMIT = Budget(AccelConfig(memory="ideal"))
    return _NO_LIMIT


def bursts(addr: int, beats: int, rows: int, stride: int, ab: int) -> list[int]:
    """Burst lengths (beats) of a 2-D DMA transfer, as rtl_lib.axi_dma's splitter cuts it."""
    page = BURST_BOUNDARY // ab
    maxb = min(MAX_BURST, page)
    out = []
    for r in range(rows):
        a = (addr + r * stride) // ab
        left = beats
        while left:
            n = min(left, maxb, page - a % page)
            out.append(n)
            a += n
            left -= n
    return out


class ReadDma:
    __slots__ = ("rl", "cmd_q", "split_q", "split_free", "held", "inflight", "rq", "sl", "mem")

    def __init__(self, read_latency: int, mem: Budget | None = None):
        self.rl = read_latency
        self.mem = _budget(mem)
        self.cmd_q = deque()      # the command register: [time offered, burst lengths], <= 1
        self.split_q = deque()    # bursts still to split off the active command: lengths
        self.split_free = 0       # time the splitter can take a new command
        self.held = None          # the burst in the splitter's output register (its length)
        self.inflight = 0
        self.rq = deque()         # [time due out of the DMA, beats left] bursts, in order
        self.sl = deque()         # the router's slice: the times its beats can be routed

    def ready(self, t) -> bool:
        """The read command port (the register) takes a command this cycle: it is empty and
        the splitter is idle (called after :meth:`step` of the cycle)."""
        return not self.cmd_q and not self.split_q and t >= self.split_free

    def issue(self, t, lengths) -> None:
        """A command of bursts ``lengths`` enters the register on this edge."""
        self.cmd_q.append((t + 1, lengths))

    def step(self, t) -> bool:
        """The splitter: one burst per cycle into its output register (from the edge after
        the command is taken), which issues it (AR) while fewer than ``MAX_OUTSTANDING`` are
        in flight; it takes the command register's command the cycle after the last burst of
        the previous command entered the output register (that burst may still wait there for
        the outstanding limit)."""
        moved = False
        if self.held is None and self.split_q:
            self.held = self.split_q.popleft()
            if not self.split_q:
                self.split_free = t + 1
            moved = True
        if self.held is not None and self.inflight < MAX_OUTSTANDING:
            self.rq.append([t + self.rl + RD_SLICE, self.held])
            self.inflight += 1
            self.held = None
            moved = True
        if (not self.split_q and t >= self.split_free and self.cmd_q
                and self.cmd_q[0][0] <= t):
            self.split_q.extend(self.cmd_q.popleft()[1])
            self.split_free = INF
            moved = True
        return moved

    def due(self, t) -> bool:
        """An R beat is due from the memory (its burst's latency has passed)."""
        return bool(self.rq) and self.rq[0][0] <= t

    def r_step(self, t) -> bool:
        """The router's slice takes the DMA's next beat (before the router's step: its ready
        is the slice's occupancy at the cycle's start); the burst's last beat releases its
        outstanding slot."""
        if len(self.sl) >= ROUTE_RD_SLICE:
            return False
        if not (self.mem.r_valid if self.mem.on else self.due(t)):
            return False
        if self.mem.on:
            self.mem.take_r()
        self.sl.append(t + 1)
        head = self.rq[0]
        head[1] -= 1
        if head[1] == 0:
            self.rq.popleft()
            self.inflight -= 1
        return True

    def beat_ready(self, t) -> bool:
        """A beat waits in the router's slice for the router."""
        return bool(self.sl) and self.sl[0] <= t

    def take_beat(self, t) -> None:
        self.sl.popleft()

    def idle(self) -> bool:
        return (not self.cmd_q and not self.split_q and self.held is None and self.inflight == 0
                and not self.sl)

    def wakes(self, t, out: list) -> None:
        if self.rq:
            out.append(self.rq[0][0])
        if self.sl:
            out.append(self.sl[0])
        out.append(self.split_free)
        if self.cmd_q:
            out.append(self.cmd_q[0][0])


class WriteDma:
    __slots__ = ("wl", "beats", "aw", "inflight", "b", "lens", "mem", "want", "offered",
                 "taken")

    def __init__(self, write_latency: int, mem: Budget | None = None):
        self.wl = write_latency
        self.mem = _budget(mem)
        self.want = False         # a W beat was offered this cycle (for the memory's flags)
        self.beats = deque()      # W beats offered by the engines: ready times
        self.offered = 0          # beats offered so far (a beat's number: its position)
        self.taken = 0            # beats taken on W so far (beats numbered < taken are gone)
        self.aw = deque()         # bursts waiting for AW: (time it may issue, length)
        self.inflight = 0
        self.b = deque()          # B response times
        self.lens = deque()       # bursts whose AW was issued, W not complete: [time its W
        #                           beats may start, beats left]

    def command(self, t, lengths) -> None:
        """A write command of bursts ``lengths`` taken from an engine on this edge: its
        bursts may go out on AW from ``t + WR_CMD_SLICE`` (the DMA's command slice)."""
        self.aw.extend((t + WR_CMD_SLICE, n) for n in lengths)

    def offer(self, t) -> None:
        """An engine's W beat that reaches the write arbiter's skid buffer at ``t``; its
        number is :attr:`offered` before the call."""
        self.beats.append(t)
        self.offered += 1

    def retire(self, t) -> bool:
        """B responses due by ``t`` taken."""
        moved = False
        while self.b and self.b[0] <= t:
            self.b.popleft()
            self.inflight -= 1
            moved = True
        return moved

    def step(self, t) -> bool:
        """AW (one per cycle, outstanding limit), W one beat per cycle."""
        moved = False
        if self.aw and self.aw[0][0] <= t and self.inflight < MAX_OUTSTANDING:
            self.inflight += 1
            self.lens.append([t + AW_TO_W, self.aw.popleft()[1]])
            moved = True
        self.want = want = (bool(self.beats) and self.beats[0] + WD_SKID <= t and
                            bool(self.lens) and self.lens[0][0] <= t)
        if want and (not self.mem.on or self.mem.w_ok):
            if self.mem.on:
                self.mem.take_w()
            self.beats.popleft()
            self.taken += 1
            self.lens[0][1] -= 1
            moved = True
            if self.lens[0][1] == 0:
                self.lens.popleft()
                self.b.append(t + W_SLICE + self.wl)
        return moved

    def idle(self) -> bool:
        return not self.beats and not self.aw and self.inflight == 0

    def wakes(self, out: list) -> None:
        if self.beats:
            out.append(self.beats[0] + WD_SKID)
        if self.aw:
            out.append(self.aw[0][0])
        if self.lens:
            out.append(self.lens[0][0])
        if self.b:
            out.append(self.b[0])
