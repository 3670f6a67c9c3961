"""Command fetch and dispatch (``rtl_lib.accel`` steps 1 and 2).

* :class:`Fetch`: chunks of ``FETCH_CHUNK`` commands, requested while the credits against the
  ``CMD_FIFO_DEPTH`` command FIFO allow a whole chunk; a fetch request has priority over the
  load engine at the read DMA (:class:`~.load.LoadEngine` arbitrates). The router packs the
  fetched beats into commands, which reach the command FIFO 2 cycles after their last beat.
* :class:`Dispatch`: the command FIFO's head enters a 2-entry register slice (1 cycle); from
  the slice one command per cycle goes, in order, to its engine's queue (a FIFO of
  ``ENGINE_FIFO_DEPTH`` and a 2-entry slice behind it: the engine sees a command 2 cycles
  after its dispatch; a command's credit returns here, seen by fetch 2 cycles later). LOAD P waits for the store engine to be idle, LOAD X for
  the vector engine (one cycle more: its idle is a register). A FENCE goes to no FIFO: it
  waits until the engine FIFOs are empty, every LOAD's data routed and the engines and the
  write DMA idle, and goes a cycle after that is seen; ``stamps`` are the cycles it went
  (the boundary cost between layers is this drain, with no start and no refetch).
"""

from __future__ import annotations

from collections import deque

from ..contract import (CMD_FIFO_DEPTH, DST_CMD, DST_P, DST_X, ENGINE_FIFO_DEPTH, FETCH_CHUNK,
                        MAX_BURST, OP_FENCE, OP_LOAD)
from .dma import bursts
from .timing import SLICE


class Fetch:
    __slots__ = ("left", "credits", "returns", "cmdq", "pack_count", "pack_idx", "cmd_beats",
                 "ab")

    def __init__(self, n_cmds: int, cmd_beats: int, ab: int):
        self.left = n_cmds        # commands not yet requested
        self.credits = 0          # command FIFO entries promised to requested commands
        self.returns = deque()    # dispatch cycles whose credit has not reached the fetcher
        self.cmdq = deque()       # the command FIFO: (available time, index)
        self.pack_count = 0       # beats of the command being packed
        self.pack_idx = 0         # next command index the packer produces
        self.cmd_beats, self.ab = cmd_beats, ab

    def give_back(self, t) -> None:
        """A command was dispatched in cycle ``t``: its credit reaches the fetcher's counter
        through the register ``credit_return_q``, so the room the fetcher sees in cycle t + 2
        (itself a register) is the first to count it."""
        self.returns.append(t)

    def wants(self, t) -> bool:
        ret = self.returns
        while ret and ret[0] + 2 <= t:
            ret.popleft()
            self.credits -= 1
        return self.left > 0 and self.credits <= CMD_FIFO_DEPTH - FETCH_CHUNK

    def request(self, t, dma) -> int:
        """Issue the next chunk's read on ``dma``; returns its beats."""
        chunk = min(FETCH_CHUNK, self.left)
        self.left -= chunk
        self.credits += chunk
        nb = chunk * self.cmd_beats
        dma.issue(t, bursts(0, nb, 1, 0, self.ab) if nb <= MAX_BURST else [nb])
        return nb

    def beat(self, t) -> None:
        """The router delivered one command beat."""
        self.pack_count += 1
        if self.pack_count == self.cmd_beats:
            self.pack_count = 0
            self.cmdq.append((t + 2, self.pack_idx))
            self.pack_idx += 1

    def idle(self) -> bool:
        return self.left == 0 and not self.cmdq

    def wakes(self, out: list) -> None:
        if self.cmdq:
            out.append(self.cmdq[0][0])
        if self.returns and self.left > 0:
            out.append(self.returns[0] + 2)


class Dispatch:
    __slots__ = ("cmds", "fetch", "slice", "engq", "dispatched", "store", "vec", "load", "mm",
                 "wdma", "drain_t", "stamps")

    def __init__(self, cmds, fetch: Fetch):
        self.cmds = cmds
        self.fetch = fetch
        self.slice = deque()                       # the dispatch slice: (available time, index)
        self.engq = [deque() for _ in range(4)]    # LOAD, EXEC, STORE, VEC: (available time, index)
        self.dispatched = 0
        self.store = self.vec = None               # the engines whose idle gates LOAD P / X
        self.load = self.mm = self.wdma = None     # ... and with them FENCE
        self.drain_t = None                        # first cycle a waiting FENCE saw it drained
        self.stamps = []                           # the cycle of each FENCE's dispatch

    def step(self, t) -> bool:
        moved = False
        cmdq = self.fetch.cmdq
        if cmdq and cmdq[0][0] <= t and len(self.slice) < SLICE:
            self.slice.append((t + 1, cmdq.popleft()[1]))
            moved = True
        dsl = self.slice
        if dsl and dsl[0][0] <= t:
            i = dsl[0][1]
            c = self.cmds[i]
            if c.OP == OP_FENCE:
                return self._fence(t) or moved
            k = c.OP - 1
            engq = self.engq
            ok = len(engq[k]) < ENGINE_FIFO_DEPTH + SLICE    # the FIFO and its head slice
            if ok and c.OP == OP_LOAD:
                if c.dst == DST_P:
                    ok = not engq[2] and self.store.idle_for_params(t)
                elif c.dst == DST_X:
                    ok = not engq[3] and self.vec.idle_for_x(t)
            if ok:
                dsl.popleft()
                self.fetch.give_back(t)
                engq[k].append((t + 2, i))
                self.dispatched += 1
                moved = True
        return moved

    def _fence(self, t) -> bool:
        """A FENCE at the head: it goes once everything earlier is finished, a cycle after
        that is seen (the RTL's ``drained_q`` register)."""
        if not self.drained(t):
            self.drain_t = None
            return False
        if self.drain_t is None:
            self.drain_t = t
        if t <= self.drain_t:
            return False
        self.slice.popleft()
        self.fetch.give_back(t)
        self.dispatched += 1
        self.stamps.append(t)
        self.drain_t = None
        return True

    def drained(self, t) -> bool:
        return (not any(self.engq) and not self.load.delivering()
                and self.mm.idle() and self.store.idle(t) and self.vec.idle(t)
                and self.wdma.idle())

    def idle(self) -> bool:
        return self.dispatched == len(self.cmds) and not self.slice and not any(self.engq)

    def wakes(self, out: list) -> None:
        if self.slice:
            out.append(self.slice[0][0])
        if self.drain_t is not None:
            out.append(self.drain_t + 1)
        for q in self.engq:
            if q:
                out.append(q[0][0])
