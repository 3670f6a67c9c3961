"""Cycle model of the accelerator: predicted cycles per layer and per model, without Verilator.

``predict(compiled, config) -> ModelPrediction`` (``compiled``: ``backend.compile_program``'s
:class:`~pycde_accel.backend.compile.CompiledProgram`). ``predict_layer(commands, config)``
predicts one layer's command list. ``ModelPrediction.to_dict()`` is ready for ``report.json``.

Why an event model and not a closed formula
-------------------------------------------
Stream-HLS's ``T = T_fill + (N-1) * max(II) + T_drain`` holds for one pipeline of identical
iterations. The accelerator is four decoupled engines fed in program order from one command
stream that itself comes through the same in-order AXI read channel as the operand data, so the
bottleneck moves inside a layer (an im2col conv with hundreds of short A loads is bound by the
command fetch round trip, a Linear layer by its weight bytes, a maxpool by the vector engine's
beat rate, a 1-row Linear by the STORE rate). The model therefore runs the command list through
an abstract, cycle-stepped copy of the engines and queues of ``rtl_lib.accel`` (accel_spec.md):
the same FIFO depths, dispatch rules and one-beat-per-cycle channels, with each engine's
latency/rate taken from its docstring, and skips stretches of cycles in which nothing can
change. The per-layer report also gives the closed-form view (``bounds``): the compute bound
(core beats), the read/write bandwidth bounds, the store and vector engine bounds and the
command-fetch bound; ``predicted_cycles`` >= the largest of them, and the difference is the
fill/drain/latency overhead (``overlap`` = sum of the bounds / predicted: how much the engines
overlapped).

Modelled (accel_spec.md "Execution model", rtl_lib.accel):
* fetch: chunks of ``FETCH_CHUNK`` commands, credits against the ``CMD_FIFO_DEPTH`` command FIFO,
  fetch requests have priority over the load engine at the read DMA (a pending fetch blocks it);
* read DMA: the burst splitter (one burst per cycle, bursts <= 256 beats not crossing 4 KiB, the
  next command taken the cycle after the last burst is issued), ``MAX_OUTSTANDING`` bursts in
  flight, memory latency ``READ_LATENCY`` (cocotbext-axi ``AxiRam``, measured), R beats in order
  through the route FIFO (``ROUTE_FIFO_DEPTH``, plus its head's 2-entry register slice: an entry
  reaches the router 2 cycles after it is pushed) to A/B (a bank must be free: double-buffered
  banks, COMMIT / release), P (32 bits per cycle), X, S (into the vector engine's 2-entry input
  slice, ahead of the command if need be; then at the engine's pace) or the command FIFO;
  ZERO loads write one beat per cycle through the router with no DMA;
* dispatch: one command per cycle, in order, from a 2-entry register slice after the command
  FIFO (a command's credit returns at dispatch), to 4-entry engine FIFOs; LOAD P waits for the
  store engine to be idle, LOAD X for the vector engine (one cycle more: its idle is a register);
* EXEC: one operand beat per cycle once both banks are committed, 4 beats of credit to the core
  (``ISSUE_TO_CORE`` = 2), the core's tile admission (a tile's last beat >= ``rows`` cycles after
  the previous one, output FIFO room for ``rows`` rows), results ``rows + cols + 3`` after the last
  beat;
* STORE: one element per cycle (a row of C every ``cols`` cycles), ``store_latency`` to the
  write data, one 2-D DMA write per tile;
* VEC: ADD ``AB + 1`` cycles per beat, MAX ``AB``, one command at a time, per-command start-up;
* write DMA: the same splitter, ``MAX_OUTSTANDING`` bursts until their B response
  (``WRITE_LATENCY``); ``done`` when everything is idle and every B was taken.

Structural parameters (FIFO depths, credits, the store engine's queue) are imported from the RTL
generators, so the model follows them. The latencies (:data:`MEMORIES`, :data:`SCHEDULE_TIMING`)
were fitted against Verilator runs of the built-in models and GEMM layers; with them every layer
of mlp, lenet5 and resblock is within 1.8% of the simulated cycle counter at 8x8/64 (static and
dynamic kernel routes; native, cocotb and AxiRam memories), 4x8/64, 4x4/32 and 8x16/128; refit
after the register slices that brought the accelerator to 100 MHz: within 1.0% at 8x8/64 for
both routes (native engine)
(bench/model.py reports the error; tests/test_perfmodel.py bounds it at 5%). Not modelled: AXI
back-pressure from the memory (``--axi-pause``), which only adds cycles.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .config import AccelConfig

# ---- structure: the contract's depths and encoding, the matmul unit's read latency ---------
from .contract import (CMD_BITS, CMD_FIFO_DEPTH, DST_A, DST_B, DST_CMD, DST_P,  # noqa: E402
                       DST_S, DST_X, ENGINE_FIFO_DEPTH, EXEC_CREDITS, FETCH_CHUNK, MAX_BURST,
                       MAX_OUTSTANDING, OP_EXEC, OP_LOAD, OP_STORE, OP_VEC, ROUTE_FIFO_DEPTH,
                       STORE_QUEUE, VEC_PAIR_FIFO_DEPTH as PAIR_FIFO_DEPTH)
from .contract import BURST_BOUNDARY, EXEC_REL_A as REL_A, EXEC_REL_B as REL_B  # noqa: E402
from .contract import LOAD_COMMIT as F_COMMIT, LOAD_ZERO as F_ZERO  # noqa: E402
from .contract import VEC_MAX as V_MAX, VEC_TO_X as V_TO_X  # noqa: E402
from .rtl_lib.matmul_unit import ISSUE_TO_CORE  # noqa: E402

# ---- latencies (calibrated against the Verilator runs) -----------------------------------
#: memory models of the simulation engines: (read latency: AR accepted -> first R beat,
#: write latency: last W beat -> B response taken). ``rtl``: sim/axi_mem.sv (the native and
#: cocotb engines); ``axiram``: cocotbext-axi's AxiRam (the axiram engine).
MEMORIES = {"rtl": (3, 2), "axiram": (3, 2)}
READ_LATENCY, WRITE_LATENCY = MEMORIES["rtl"]
#: per kernel route (config.schedule): store engine latency (a row taken -> its last beat out,
#: beyond the row's C cycles of one element each), VEC start-up per command, VEC ADD cycles per beat beyond AB
#: (the handshake kernel's restart bubble per run; the static pipeline has none), and the
#: ADD / MAX kernels' drain (last element in -> last result out, beyond one beat's AB cycles),
#: and the requantize kernel's cycles between tiles (its restart per run)
SCHEDULE_TIMING = {
    "dynamic": {"store_latency": 4, "vec_startup": 6, "add_bubble": 1, "add_drain": -2,
                "max_drain": -1, "store_bubble": 2},
    "static": {"store_latency": 32, "vec_startup": 6, "add_bubble": 0, "add_drain": 18,
               "max_drain": 2, "store_bubble": 0},
}
#: register slices (rtl_lib.common.register_slice, 2 entries, latency 1) in front of dispatch
#: (the command FIFO's head), of the router (the route FIFO's head) and of the vector engine's
#: S input
SLICE = 2
DONE_LATENCY = 1        # everything idle -> done seen by the cycle counter
START_LATENCY = 1       # start -> first fetch request

INF = float("inf")


# ---- results --------------------------------------------------------------------------------
@dataclass
class LayerPrediction:
    """One layer: predicted cycles and the closed-form bounds it is compared with."""

    index: int
    name: str
    op: str
    cycles: int
    bounds: dict
    commands: int

    @property
    def bottleneck(self) -> str:
        return max(self.bounds, key=self.bounds.get) if self.bounds else ""

    def to_dict(self) -> dict:
        total = sum(self.bounds.values())
        return {"index": self.index, "name": self.name, "op": self.op,
                "predicted_cycles": self.cycles, "commands": self.commands,
                "bounds": dict(self.bounds), "bottleneck": self.bottleneck,
                "overlap": round(total / self.cycles, 3) if self.cycles else 0.0}


@dataclass
class ModelPrediction:
    """Every layer's prediction and the total (layers run one after the other)."""

    config: dict
    layers: list = field(default_factory=list)

    @property
    def total_cycles(self) -> int:
        return sum(l.cycles for l in self.layers)

    def latency_us(self, clock_mhz: float) -> float:
        return self.total_cycles / clock_mhz

    def to_dict(self) -> dict:
        return {"model": "event-level cycle model (pycde_accel.perfmodel)",
                "config": {k: self.config[k] for k in ("rows", "cols", "axi_data_width",
                                                       "spad_a_depth", "spad_b_depth",
                                                       "spad_c_depth") if k in self.config},
                "total_cycles": self.total_cycles,
                "layers": [l.to_dict() for l in self.layers]}


# ---- the model ----------------------------------------------------------------------------
def _bursts(addr: int, beats: int, rows: int, stride: int, ab: int) -> list[int]:
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


def _timing(config: AccelConfig) -> dict:
    return SCHEDULE_TIMING[getattr(config, "schedule", "dynamic")]


def bounds(commands, config: AccelConfig) -> dict:
    """Closed-form lower bounds (cycles) of one layer: each engine alone at its full rate."""
    ab = config.axi_data_width // 8
    tm = _timing(config)
    cmd_beats = CMD_BITS // config.axi_data_width
    rd = cmd_beats * len(commands)
    wr = exec_ = store = vec = 0
    for c in commands:
        op = c.OP
        if op == OP_LOAD:
            n = c.beats * c.rows
            rd += n * (config.axi_data_width // 32 if c.dst == DST_P else 1)
        elif op == OP_EXEC:
            exec_ += max(c.K, config.rows)
        elif op == OP_STORE:
            store += config.rows * config.cols
            wr += c.valid_rows * (config.cols // ab)
        elif op == OP_VEC:
            vec += c.n * (ab if c.flags & V_MAX else ab + tm["add_bubble"]) + tm["vec_startup"]
            if not c.flags & V_TO_X:
                wr += c.n
    return {"read": rd, "write": wr, "core": exec_, "store": store, "vector": vec}


def predict_layer(commands, config: AccelConfig, *, memory: str = "rtl",
                  read_latency: int | None = None, write_latency: int | None = None) -> int:
    """Predicted cycles (as the accelerator's cycle counter counts them) of one layer.
    ``memory``: the memory model (:data:`MEMORIES`: ``rtl`` for the native/cocotb simulation
    engines, ``axiram``), or explicit ``read_latency``/``write_latency`` in cycles."""
    rl, wl = MEMORIES[memory]
    return _LayerSim(list(commands), config,
                     rl if read_latency is None else read_latency,
                     wl if write_latency is None else write_latency).run()


def predict(compiled, config: AccelConfig | None = None, *, memory: str = "rtl") -> ModelPrediction:
    """Predict every layer of ``compiled`` (a CompiledProgram) on ``config`` (default: the
    program's own); ``memory``: see :func:`predict_layer`."""
    config = config or compiled.config
    pred = ModelPrediction(config=config.to_dict())
    for i, (entry, cmds) in enumerate(zip(compiled.layers, compiled.commands)):
        pred.layers.append(LayerPrediction(
            index=i, name=str(entry.get("name", i)), op=str(entry.get("op", "")),
            cycles=predict_layer(cmds, config, memory=memory), bounds=bounds(cmds, config),
            commands=len(cmds)))
    return pred


class _Spad:
    """Two banks passed producer -> consumer by commit and back by release."""

    __slots__ = ("full", "pending")

    def __init__(self):
        self.full = 0
        self.pending = []  # (time, delta)


class _LayerSim:
    def __init__(self, cmds, config: AccelConfig, rl: int, wl: int):
        self.cmds = cmds
        self.cfg = config
        self.R, self.C = config.rows, config.cols
        self.W = config.axi_data_width
        self.ab = self.W // 8
        self.cmd_beats = CMD_BITS // self.W
        self.rl, self.wl = rl, wl
        tm = _timing(config)
        self.st_lat, self.vec_startup, self.add_bubble = (tm["store_latency"], tm["vec_startup"],
                                                          tm["add_bubble"])
        self.add_drain, self.max_drain = tm["add_drain"], tm["max_drain"]
        self.st_bubble = tm["store_bubble"]
        from .rtl_lib.systolic import out_fifo_depth
        self.out_fifo = out_fifo_depth(self.R, self.C)

    def run(self) -> int:  # noqa: C901 - one loop over the engines, kept together on purpose
        cmds, R, C, ab = self.cmds, self.R, self.C, self.ab
        n = len(cmds)
        rl, wl = self.rl, self.wl
        p_rate = self.W // 32
        # fetch / dispatch
        fetch_left = n
        credits = 0
        cmdq = deque()            # (available time, index)
        dsl = deque()             # the dispatch slice: (available time, index)
        pack_count = 0            # beats of the command being packed
        pack_idx = 0              # next command index to be produced by the packer
        engq = [deque() for _ in range(4)]   # (available time, index)
        dispatched = 0
        # read DMA
        split_q = deque()         # bursts still to issue for the active command: lengths
        split_free = 0            # time the splitter can take a new command
        inflight = 0
        rq = deque()              # [available time, beats left] bursts in flight, in order
        route = deque()           # [dst, beats left, flags, cmd index, zero, time at the head]
        spad = {DST_A: _Spad(), DST_B: _Spad()}
        p_next = 0
        # exec / core
        ex_active = None          # [reads left, flags]
        ex_beats = deque()        # times beats reach the core input (issue + ISSUE_TO_CORE)
        ex_last = deque()         # flags: is this beat a tile's last
        credit_used = 0
        core_prev_last = -INF
        out_rows = deque()        # times rows of C become valid in the output FIFO
        out_held = 0              # rows reserved in the output FIFO
        # store
        st_cmds = deque()         # accepted store commands: [rows to take, valid_rows, addr, stride]
        st_take_next = 0
        st_busy_until = -1        # last data beat time of accepted commands (upper bound)
        # write DMA
        w_beats = deque()         # (ready time, last_of_burst)
        w_aw = deque()            # bursts waiting for AW: lengths
        w_inflight = 0
        w_b = deque()             # B response times
        w_lens = deque()          # beats left of bursts whose AW was issued, W not complete
        # vector
        v_active = None           # dict
        v_busy_until = -1
        s_pre = deque()           # S beats in the vector engine's input slice: times taken
        t = START_LATENCY

        def spad_tick(s, now):
            if s.pending:
                keep = []
                for tt, d in s.pending:
                    if tt <= now:
                        s.full += d
                    else:
                        keep.append((tt, d))
                s.pending = keep

        # The loop advances one cycle at a time but jumps over cycles where nothing is ready.
        guard = 0
        while True:
            guard += 1
            if guard > 50_000_000:
                raise RuntimeError("perfmodel: no progress")
            progressed = False
            for s in spad.values():
                spad_tick(s, t)
            while w_b and w_b[0] <= t:
                w_b.popleft()
                w_inflight -= 1
                progressed = True

            # ---- router: one beat per cycle from the head route entry
            if route:
                e = route[0]
                dst, _, flags, _, zero, e_t = e
                avail = e_t <= t and (zero or (rq and rq[0][0] <= t))
                if avail:
                    if dst == DST_A or dst == DST_B:
                        ok = spad[dst].full < 2
                    elif dst == DST_P:
                        ok = t >= p_next
                    elif dst == DST_S:
                        ok = len(s_pre) < SLICE    # the vector engine's S input slice
                    else:
                        ok = True
                    if ok:
                        progressed = True
                        if dst == DST_P:
                            p_next = t + p_rate
                        elif dst == DST_S:
                            s_pre.append(t)
                        elif dst == DST_CMD:
                            pack_count += 1
                            if pack_count == self.cmd_beats:
                                pack_count = 0
                                cmdq.append((t + 2, pack_idx))
                                pack_idx += 1
                        if not zero:
                            rq[0][1] -= 1
                            if rq[0][1] == 0:
                                rq.popleft()
                                inflight -= 1
                        e[1] -= 1
                        if e[1] == 0:
                            route.popleft()
                            if flags & F_COMMIT and (dst == DST_A or dst == DST_B):
                                spad[dst].pending.append((t + 1, 1))

            # ---- read burst splitter: one burst per cycle
            if split_q and inflight < MAX_OUTSTANDING:
                blen = split_q.popleft()
                rq.append([t + rl, blen])
                inflight += 1
                progressed = True
                if not split_q:
                    split_free = t + 1

            # ---- fetch and load engine share the read command port
            fetch_req = fetch_left > 0 and credits <= CMD_FIFO_DEPTH - FETCH_CHUNK
            rd_ready = not split_q and t >= split_free
            if fetch_req:
                if len(route) < ROUTE_FIFO_DEPTH + SLICE and rd_ready:
                    chunk = min(FETCH_CHUNK, fetch_left)
                    fetch_left -= chunk
                    credits += chunk
                    nb = chunk * self.cmd_beats
                    split_q.extend(_bursts(0, nb, 1, 0, ab) if nb <= MAX_BURST else [nb])
                    split_free = INF
                    route.append([DST_CMD, nb, 0, -1, False, t + 2])
                    progressed = True
            elif engq[0] and engq[0][0][0] <= t and len(route) < ROUTE_FIFO_DEPTH + SLICE:
                c = cmds[engq[0][0][1]]
                zero = bool(c.flags & F_ZERO)
                if zero or rd_ready:
                    engq[0].popleft()
                    nb = c.beats * c.rows
                    if not zero:
                        split_q.extend(_bursts(c.addr, c.beats, c.rows, c.stride, ab))
                        split_free = INF
                    route.append([c.dst, nb, c.flags, 0, zero, t + 2])
                    progressed = True

            # ---- the command FIFO's head moves into the dispatch slice
            if cmdq and cmdq[0][0] <= t and len(dsl) < SLICE:
                dsl.append((t + 1, cmdq.popleft()[1]))
                progressed = True
            # ---- dispatch: one command per cycle, in order, from the slice
            if dsl and dsl[0][0] <= t:
                i = dsl[0][1]
                c = cmds[i]
                k = c.OP - 1
                ok = len(engq[k]) < ENGINE_FIFO_DEPTH
                if ok and c.OP == OP_LOAD:
                    if c.dst == DST_P:
                        ok = not engq[2] and not st_cmds and t > st_busy_until
                    elif c.dst == DST_X:
                        ok = not engq[3] and v_active is None and t > v_busy_until + 1
                if ok:
                    dsl.popleft()
                    credits -= 1
                    engq[k].append((t + 1, i))
                    dispatched += 1
                    progressed = True

            # ---- EXEC: reads into the core
            if ex_active is None and engq[1] and engq[1][0][0] <= t:
                c = cmds[engq[1].popleft()[1]]
                ex_active = [c.K, c.flags]
                progressed = True
            elif ex_active is not None:
                if spad[DST_A].full > 0 and spad[DST_B].full > 0 and credit_used < EXEC_CREDITS:
                    ex_active[0] -= 1
                    credit_used += 1
                    ex_beats.append(t + ISSUE_TO_CORE)
                    ex_last.append(ex_active[0] == 0)
                    progressed = True
                    if ex_active[0] == 0:
                        if ex_active[1] & REL_A:
                            spad[DST_A].pending.append((t + 1, -1))
                        if ex_active[1] & REL_B:
                            spad[DST_B].pending.append((t + 1, -1))
                        ex_active = None
                        if engq[1] and engq[1][0][0] <= t:
                            c = cmds[engq[1].popleft()[1]]
                            ex_active = [c.K, c.flags]

            # ---- core input: one beat per cycle; a tile's last beat waits for admission
            if ex_beats and ex_beats[0] <= t:
                take = True
                if ex_last[0]:
                    take = t - core_prev_last >= R and out_held + R <= self.out_fifo
                if take:
                    ex_beats.popleft()
                    credit_used -= 1
                    progressed = True
                    if ex_last.popleft():
                        core_prev_last = t
                        out_held += R
                        first = t + R + C + 3
                        out_rows.extend(first + r for r in range(R))

            # ---- store engine: accept commands, take C rows (one every C cycles)
            if engq[2] and engq[2][0][0] <= t and len(st_cmds) < STORE_QUEUE:
                c = cmds[engq[2].popleft()[1]]
                st_cmds.append([R, c.valid_rows, c.addr, c.stride])
                progressed = True
            if st_cmds and out_rows and out_rows[0] <= t and t >= st_take_next:
                out_rows.popleft()
                out_held -= 1
                st_take_next = t + C
                sc = st_cmds[0]
                r = R - sc[0]
                sc[0] -= 1
                progressed = True
                if r < sc[1]:
                    # the row's C/AB beats leave the kernel one every AB cycles
                    for b in range(C // ab):
                        w_beats.append(t + (b + 1) * ab + self.st_lat)
                if r == 0:
                    w_aw.extend(_bursts(sc[2], C // ab, sc[1], sc[3], ab))
                if sc[0] == 0:
                    st_take_next += self.st_bubble
                    st_cmds.popleft()
                    st_busy_until = max(st_busy_until, t + C + self.st_lat)

            # ---- vector engine
            if v_active is None and engq[3] and engq[3][0][0] <= t and t > v_busy_until:
                c = cmds[engq[3].popleft()[1]]
                per = ab if c.flags & V_MAX else ab + self.add_bubble
                v_active = {"n": c.n, "s_taken": 0, "done": 0, "s_times": deque(),
                            "next": t + self.vec_startup, "per": per,
                            "drain": self.max_drain if c.flags & V_MAX else self.add_drain,
                            "to_x": bool(c.flags & V_TO_X)}
                if not c.flags & V_TO_X:
                    w_aw.extend(_bursts(c.dst, c.n, 1, ab, ab))
                progressed = True
            # an S beat leaves the input slice (X read issued) one per cycle, as the command
            # needs it and the pair FIFO has room
            if v_active is not None and s_pre and s_pre[0] < t and \
                    v_active["s_taken"] < v_active["n"] and \
                    v_active["s_taken"] - v_active["done"] < PAIR_FIFO_DEPTH:
                s_pre.popleft()
                v_active["s_times"].append(t)
                v_active["s_taken"] += 1
                progressed = True
            if v_active is not None and v_active["s_times"]:
                st_t = v_active["s_times"][0] + 3
                start = max(st_t, v_active["next"])
                if start <= t:
                    v_active["s_times"].popleft()
                    fin = start + v_active["per"]
                    v_active["next"] = fin
                    v_active["done"] += 1
                    progressed = True
                    if not v_active["to_x"]:
                        w_beats.append(fin + v_active["drain"])
                    if v_active["done"] == v_active["n"]:
                        v_busy_until = fin + v_active["drain"]
                        v_active = None

            # ---- write DMA: AW (one per cycle, outstanding limit), W one beat per cycle
            if w_aw and w_inflight < MAX_OUTSTANDING:
                w_inflight += 1
                w_lens.append(w_aw.popleft())
                progressed = True
            if w_beats and w_beats[0] <= t and w_lens:
                w_beats.popleft()
                w_lens[0] -= 1
                progressed = True
                if w_lens[0] == 0:
                    w_lens.popleft()
                    w_b.append(t + wl)

            # ---- done?
            if (dispatched == n and fetch_left == 0 and not cmdq and not dsl and not any(engq)
                    and not route and not split_q and inflight == 0 and ex_active is None
                    and not ex_beats and not out_rows and not st_cmds and v_active is None
                    and not w_beats and not w_aw and w_inflight == 0
                    and t > st_busy_until and t > v_busy_until):
                return t + DONE_LATENCY
            if progressed:
                t += 1
            else:
                t = self._next_time(t, locals())

    def _next_time(self, t, s):
        """The next cycle at which something timed can happen (skip idle stretches)."""
        cands = []
        if s["route"]:
            cands.append(s["route"][0][5])
        if s["route"] and s["rq"]:
            cands.append(s["rq"][0][0])
        if s["route"] and s["route"][0][0] == DST_P:
            cands.append(s["p_next"])
        if s["cmdq"]:
            cands.append(s["cmdq"][0][0])
        if s["dsl"]:
            cands.append(s["dsl"][0][0])
        for q in s["engq"]:
            if q:
                cands.append(q[0][0])
        if s["ex_beats"]:
            cands.append(s["ex_beats"][0])
            cands.append(s["core_prev_last"] + self.R)
        if s["out_rows"]:
            cands.append(s["out_rows"][0])
            cands.append(s["st_take_next"])
        if s["w_beats"]:
            cands.append(s["w_beats"][0])
        if s["w_b"]:
            cands.append(s["w_b"][0])
        for sp in s["spad"].values():
            cands.extend(tt for tt, _ in sp.pending)
        va = s["v_active"]
        if va is not None and va["s_times"]:
            cands.append(max(va["s_times"][0] + 3, va["next"]))
        if va is not None and s["s_pre"]:
            cands.append(s["s_pre"][0] + 1)
        cands.append(s["st_busy_until"] + 1)
        cands.append(s["v_busy_until"] + 2)
        cands.append(s["split_free"])
        nxt = min((c for c in cands if c > t), default=t + 1)
        return int(nxt) if nxt != INF else t + 1
