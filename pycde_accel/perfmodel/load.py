"""The load engine and the router (``rtl_lib.accel`` steps 3 and 4).

* The read command port: a pending fetch request goes first (:class:`~.fetch.Fetch`); else the
  head LOAD of the load engine's FIFO, as one 2-D read (ZERO loads: no read, but a route entry),
  when the route FIFO (``ROUTE_FIFO_DEPTH`` plus its head's 2-entry slice) has room. A route
  entry reaches the router 2 cycles after it is pushed.
* The router: one beat per cycle from the head route entry, in order, into its output slice
  (2 entries, latency 1); from there, in order, when its destination takes it: A/B (a bank
  must be free: double-buffered banks, COMMIT after the last beat; none is in the cycle after
  a commit), P (32 bits per cycle), S (into the vector engine's 2-entry input slice), X, or
  the command FIFO's packer. ZERO loads make one beat per cycle with no DMA.
"""

from __future__ import annotations

from collections import deque

from ..contract import (DST_A, DST_B, DST_CMD, DST_P, DST_S, LOAD_COMMIT, LOAD_ZERO,
                        ROUTE_FIFO_DEPTH)
from .dma import bursts
from .timing import ROUTE_OUT_SLICE, SLICE, SPAD_COMMIT_LATENCY


class LoadEngine:
    __slots__ = ("cmds", "ab", "p_rate", "route", "out", "p_next", "dma", "fetch", "dispatch",
                 "spad", "vec")

    def __init__(self, cmds, ab: int, p_rate: int, dma, fetch, dispatch, spad: dict, vec):
        self.cmds, self.ab, self.p_rate = cmds, ab, p_rate
        self.route = deque()      # [dst, beats left, flags, cmd index, zero, time at the head]
        self.out = deque()        # the output slice: (time offered, dst, commits)
        self.p_next = 0           # the parameter memory takes its next beat at this time
        self.dma, self.fetch, self.dispatch, self.spad, self.vec = dma, fetch, dispatch, spad, vec

    def route_step(self, t) -> bool:
        """The router: one beat per cycle from the head route entry into its output slice
        (``ROUTE_OUT_SLICE`` entries, latency 1; it takes a beat while it held fewer than that
        at the cycle's start), then the slice's head beat to its destination when that takes
        it."""
        moved = self._route(t)
        return self._deliver(t) or moved

    def _route(self, t) -> bool:
        route, out = self.route, self.out
        if not route or len(out) >= ROUTE_OUT_SLICE:
            return False
        e = route[0]
        dst, _, flags, _, zero, e_t = e
        if not (e_t <= t and (zero or self.dma.beat_ready(t))):
            return False
        if not zero:
            self.dma.take_beat(t)
        e[1] -= 1
        last = e[1] == 0
        if last:
            route.popleft()
        out.append((t + 1, dst, last and bool(flags & LOAD_COMMIT)))
        return True

    def _deliver(self, t) -> bool:
        out = self.out
        if not out or out[0][0] > t:
            return False
        _, dst, commit = out[0]
        if dst == DST_A or dst == DST_B:
            sp = self.spad[dst]
            # no bank is free in the cycle after a commit (the producer moves on when it lands)
            ok = sp.full < 2 and not any(d > 0 for _, d in sp.pending)
        elif dst == DST_P:
            ok = t >= self.p_next
        elif dst == DST_S:
            ok = self.vec.s_room()
        else:
            ok = True
        if not ok:
            return False
        out.popleft()
        if dst == DST_P:
            self.p_next = t + self.p_rate
        elif dst == DST_S:
            self.vec.s_beat(t)
        elif dst == DST_CMD:
            self.fetch.beat(t)
        if commit and (dst == DST_A or dst == DST_B):
            self.spad[dst].pending.append((t + SPAD_COMMIT_LATENCY, 1))
        return True

    def port_step(self, t) -> bool:
        """Fetch and the load engine share the read command port (fetch first)."""
        rd_ready = self.dma.ready(t)
        room = len(self.route) < ROUTE_FIFO_DEPTH + SLICE
        if self.fetch.wants(t):
            if room and rd_ready:
                nb = self.fetch.request(t, self.dma)
                self.route.append([DST_CMD, nb, 0, -1, False, t + 2])
                return True
            return False
        q = self.dispatch.engq[0]
        if q and q[0][0] <= t and room:
            c = self.cmds[q[0][1]]
            zero = bool(c.flags & LOAD_ZERO)
            if zero or rd_ready:
                q.popleft()
                if not zero:
                    self.dma.issue(t, bursts(c.addr, c.beats, c.rows, c.stride, self.ab))
                self.route.append([c.dst, c.beats * c.rows, c.flags, 0, zero, t + 2])
                return True
        return False

    def idle(self) -> bool:
        return not self.route and not self.out

    def delivering(self) -> bool:
        """A LOAD's beat (not a fetch's) is still on its way to its destination."""
        return (any(e[0] != DST_CMD for e in self.route)
                or any(o[1] != DST_CMD for o in self.out))

    def wakes(self, out: list) -> None:
        if self.route:
            out.append(self.route[0][5])
        if self.out:
            out.append(self.out[0][0])
            if self.out[0][1] == DST_P:
                out.append(self.p_next)
