"""One layer's command list through the engines, cycle by cycle (skipping idle stretches).

Each cycle runs the engines in the order the RTL's signals flow within a cycle: the scratchpad
banks' commits/releases and the write responses due, the router, the read burst splitter, the
read command port (fetch, load engine), dispatch, EXEC and the core, the store engine, the
vector engine, the write DMA (R and W beats share the board memory's
:class:`~.memory.Budget`); then ``done`` when everything is idle. A cycle in which nothing
moved jumps to the next time at which anything timed can happen.
"""

from __future__ import annotations

from ..config import AccelConfig
from ..contract import CMD_BITS
from .dma import ReadDma, WriteDma
from .exec import MatmulUnit
from .fetch import Dispatch, Fetch
from .load import LoadEngine
from .memory import Budget
from .store import StoreEngine
from .timing import DONE_LATENCY, INF, START_LATENCY, timing
from .vec import VecEngine

#: iterations after which the model gives up (a command list that cannot finish)
MAX_STEPS = 50_000_000


class LayerSim:
    def __init__(self, cmds, config: AccelConfig, rl: int, wl: int):
        self.cmds = cmds = list(cmds)
        R, C, W = config.rows, config.cols, config.axi_data_width
        ab = W // 8
        tm = timing(config)
        self.fetch = Fetch(len(cmds), CMD_BITS // W, ab)
        self.dispatch = Dispatch(cmds, self.fetch)
        engq = self.dispatch.engq
        self.mem = Budget(config)
        self.rdma, self.wdma = ReadDma(rl, self.mem), WriteDma(wl, self.mem)
        self.mm = MatmulUnit(cmds, R, C, engq[1])
        self.store = StoreEngine(cmds, R, C, ab, tm["store_latency"], tm["store_bubble"], engq[2],
                                 self.mm, self.wdma, config.lanes)
        self.vec = VecEngine(cmds, ab, tm, engq[3], self.wdma)
        self.load = LoadEngine(cmds, ab, W // 32, self.rdma, self.fetch, self.dispatch,
                               self.mm.spad, self.vec)
        self.dispatch.store, self.dispatch.vec = self.store, self.vec
        self.dispatch.load, self.dispatch.mm, self.dispatch.wdma = self.load, self.mm, self.wdma

    @property
    def stamps(self) -> list[int]:
        """The cycles of the FENCEs' dispatches (the hardware's stamps), after :meth:`run`."""
        return list(self.dispatch.stamps)

    def run(self) -> int:
        fetch, dispatch, rdma, wdma = self.fetch, self.dispatch, self.rdma, self.wdma
        mm, store, vec, load = self.mm, self.store, self.vec, self.load
        # the engines' steps bound once (the loop is the hot path), in the order of one cycle
        retire, rslice, route, split, port = (wdma.retire, rdma.r_step, load.route_step,
                                              rdma.step, load.port_step)
        disp, ex, core, st, vc, wr = (dispatch.step, mm.exec_step, mm.core_step, store.step,
                                      vec.step, wdma.step)
        tick, n = mm.tick, len(self.cmds)
        mem = self.mem if self.mem.on else None
        t = START_LATENCY
        for _ in range(MAX_STEPS):
            tick(t)
            if mem is not None:
                mem.begin(t, rdma.due(t))
            # every step runs (| does not short-circuit): all engines move in the same cycle
            moved = (retire(t) | rslice(t) | route(t) | split(t) | port(t) | disp(t) | ex(t)
                     | core(t) | st(t) | vc(t) | wr(t))
            if mem is not None:
                moved |= mem.end(wdma.want)
            if (dispatch.dispatched == n and dispatch.idle() and fetch.idle() and load.idle()
                    and rdma.idle() and mm.idle() and store.idle(t) and vec.idle(t)
                    and wdma.idle()):
                return t + DONE_LATENCY
            t = t + 1 if moved else self._next_time(t)
        raise RuntimeError("perfmodel: no progress")

    def _next_time(self, t) -> int:
        """The next cycle at which something timed can happen (skip idle stretches)."""
        cands = []
        self.load.wakes(cands)
        self.rdma.wakes(t, cands)
        self.fetch.wakes(cands)
        self.dispatch.wakes(cands)
        self.mm.wakes(cands)
        self.store.wakes(cands)
        self.wdma.wakes(cands)
        self.vec.wakes(cands)
        if self.mem.on:
            w = self.mem.wake(t)                # the board's credit for the next beats
            if w is not None:
                cands.append(w)
        nxt = min((c for c in cands if c > t), default=t + 1)
        return int(nxt) if nxt != INF else t + 1
