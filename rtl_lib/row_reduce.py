"""The row-reduction unit of the vector engine (VEC with flag ROWRED): per row of ``bpr`` beats
(``length`` int8 elements, the rest of the last beats row padding), the row's maximum, sum or
sum of squares, requantized and broadcast over the row's beats, at one beat per cycle.

``make_row_reduce(config, lanes_kernel, rq_kernel)`` -> module ``row_reduce_w{W}``
---------------------------------------------------------------------------------
``lanes_kernel``: the streaming module (``lowering.stream.stream_module``) of
``lowering.kernels.row_lanes`` (one element = one whole beat: inputs ``x0..x{AB-1}``, ``cnt``,
``op``; int32 ``y``; run length ``MAX_RUN``, no scalars, so a start token is always offered and
the beats of successive commands continue one run); ``rq_kernel``: that of
``lowering.kernels.requantize`` with ``m0``/``shift`` as element inputs next to ``x`` (no
scalars, so its runs too continue over rows and commands). Both are lowered through CIRCT by the accelerator's
kernel route (``pycde_accel.assemble``). The unit's own logic is the loop-carried part:

1. beats come in (``in_valid``/``in_data``, no back-pressure: the engine issues a beat only
   while ``room`` is high; ``issue`` counts it at issue, so the ``RR_FIFO_DEPTH``-entry input
   FIFO never overflows whatever the engine's fixed read latency);
2. the FIFO's head goes into the lane kernel with ``cnt`` = the lanes of the beat that belong to
   the row (``min(AB, max(0, length - j*AB))`` for beat j of the row) and ``op``; each kernel
   input has its own sent flag (the dynamic route takes them separately), the head is popped
   when all are taken;
3. the accumulator combines the kernel's per-beat results over the row (``op`` max: signed
   max, else the int32 sum; the first beat of a row loads it), and the row's total goes to
   the requantize kernel (an ``m0``, ``shift`` and ``x`` token, each sent once);
4. the int8 result is broadcast: ``bpr`` output beats of AB copies (``out_*``, valid/ready).

Every stage passes a beat (or a row, at the end of its last beat) per cycle, so rows of one
beat run at the bus rate too.

Ports: ``clk``, ``rst``; ``start`` (the command is taken: row state cleared; the command
fields below are held from the next cycle to the command's end): ``bpr`` (16, beats per row,
>= 1), ``length`` (16, elements per row, 1..bpr*AB), ``op`` (2: ``kernels.ROW_SUM`` /
``ROW_MAX`` / ``ROW_SUMSQ``), ``m0`` (32), ``shift``; ``issue``, ``room`` (out),
``in_valid``, ``in_data`` (W); ``out_data`` (W), ``out_valid`` (out), ``out_ready``.
Semantics: docs/accelerator-contract.md, VEC ROWRED; ``backend/executor.py`` (``rowred``) is
the golden model.
"""

from __future__ import annotations

from pycde import Clock, Input, Output, Reset
from pycde.constructs import Mux, Wire
from pycde.signals import BitsSignal
from pycde.types import Bits

from ..config import AccelConfig
from ..errors import ConfigError
from ..queue import Queue
from .bits import inc, log2, sub, up_down
from .common import NamedReg
from .stream import module

#: beats buffered between the engine's S read and the lane kernel
RR_FIFO_DEPTH = 8
#: ``op`` of the lane kernel: its max (the others are sums)
OP_MAX = 1


def _ports(cls):
    return {p.name for p in cls._builder.inputs} | {p.name for p in cls._builder.outputs}


def make_row_reduce(config: AccelConfig, lanes_kernel, rq_kernel, shift_width: int = 32):
    W = config.axi_data_width
    AB = W // 8
    CW = 16
    OW = log2(RR_FIFO_DEPTH + 1)
    lane_ins = [f"x{i}" for i in range(AB)] + ["cnt", "op"]
    need = {"y", "y_valid", "y_ready", "start_valid", "start_ready"} | \
        {f"{n}{s}" for n in lane_ins for s in ("", "_valid", "_ready")}
    missing = sorted(need - _ports(lanes_kernel))
    if missing:
        raise ConfigError(f"row reduce: lane kernel module lacks ports {', '.join(missing)}")
    need = {"y", "y_valid", "y_ready", "start_valid", "start_ready"} | \
        {f"{n}{s}" for n in ("x", "m0", "shift") for s in ("", "_valid", "_ready")}
    missing = sorted(need - _ports(rq_kernel))
    if missing:
        raise ConfigError(f"row reduce: requantize kernel module lacks ports "
                          f"{', '.join(missing)}")

    io = {"clk": Clock(), "rst": Reset(), "start": Input(Bits(1)), "bpr": Input(Bits(CW)),
          "length": Input(Bits(CW)), "op": Input(Bits(2)), "m0": Input(Bits(32)),
          "shift": Input(Bits(shift_width)), "issue": Input(Bits(1)), "room": Output(Bits(1)),
          "in_valid": Input(Bits(1)), "in_data": Input(Bits(W)),
          "out_data": Output(Bits(W)), "out_valid": Output(Bits(1)), "out_ready": Input(Bits(1))}

    def build(p):
        clk, rst = p.clk, p.rst
        one = Bits(1)(1)
        last_beat = sub(p.bpr, Bits(CW)(1), CW)

        # ---- input FIFO and its credits (counted at issue)
        fifo = Queue(Bits(W), RR_FIFO_DEPTH, clk, rst, "rr_fifo")
        fifo.push(p.in_data, p.in_valid)
        pop_w = Wire(Bits(1), "rr_pop")
        occ = NamedReg(OW, clk, rst, 0, name="rr_occupancy")
        occ.next(up_down(occ.q, p.issue, pop_w, OW))
        p.room = occ.q != Bits(OW)(RR_FIFO_DEPTH)
        head_valid = ~fifo.empty
        head = fifo.output

        # ---- position in the row: beat j, the row's elements left before it
        bc = NamedReg(CW, clk, rst, 0, name="rr_in_beat")
        rem = NamedReg(CW, clk, rst, 0, name="rr_in_left")
        first = bc.q == Bits(CW)(0)
        left = Mux(first, rem.q, p.length)
        full = left.as_uint() >= AB
        cnt = Mux(full, left[0:8], Bits(8)(AB))
        left_next = Mux(full, Bits(CW)(0), sub(left, Bits(CW)(AB), CW))
        row_end = bc.q == last_beat
        bc.next(Mux(p.start, Mux(pop_w, bc.q, Mux(row_end, inc(bc.q, CW), Bits(CW)(0))),
                    Bits(CW)(0)))
        rem.next(Mux(pop_w, rem.q, left_next))

        # ---- the lane kernel: each input sent once per beat
        data = {f"x{i}": head[8 * i:8 * i + 8] for i in range(AB)}
        data["cnt"] = cnt
        data["op"] = BitsSignal.concat([Bits(6)(0), p.op])
        sent, valid, ready = {}, {}, {}
        for nm in lane_ins:
            sent[nm] = NamedReg(1, clk, rst, 0, name=f"rr_sent_{nm}")
            valid[nm] = head_valid & ~sent[nm].q
            ready[nm] = Wire(Bits(1), f"rr_{nm}_ready")
        taken = [sent[nm].q | (valid[nm] & ready[nm]) for nm in lane_ins]
        all_taken = taken[0]
        for t in taken[1:]:
            all_taken = all_taken & t
        pop = head_valid & all_taken
        pop_w.assign(pop)
        fifo.pop(pop)
        for nm, t in zip(lane_ins, taken):
            sent[nm].next(t & ~pop)
        y_ready_w = Wire(Bits(1), "rr_y_ready")
        lk = lanes_kernel(clk=clk, rst=rst, start_valid=one, y_ready=y_ready_w,
                          instance_name="row_lanes_kernel",
                          **{nm: data[nm] for nm in lane_ins},
                          **{f"{nm}_valid": valid[nm] for nm in lane_ins})
        for nm in lane_ins:
            ready[nm].assign(getattr(lk, f"{nm}_ready"))

        # ---- accumulator over the row's beats (the loop-carried part)
        y = lk.y
        rc = NamedReg(CW, clk, rst, 0, name="rr_acc_beat")
        acc = NamedReg(32, clk, None, None, name="rr_acc")
        yfire = lk.y_valid & y_ready_w
        is_max = p.op == Bits(2)(OP_MAX)
        bigger = y.as_sint() > acc.q.as_sint()
        comb = Mux(is_max, (y.as_sint() + acc.q.as_sint()).as_bits()[0:32],
                   Mux(bigger, acc.q, y))
        acc_new = Mux(rc.q == Bits(CW)(0), comb, y)
        acc.next(Mux(yfire, acc.q, acc_new))
        row_done = yfire & (rc.q == last_beat)
        rc.next(Mux(p.start, Mux(yfire, rc.q, Mux(rc.q == last_beat, inc(rc.q, CW),
                                                   Bits(CW)(0))), Bits(CW)(0)))

        # ---- the row's total into the requantize kernel: m0, shift, x once each
        tot = NamedReg(32, clk, None, None, ce=row_done, name="rr_total")
        tot.next(acc_new)
        toks = ("m0", "shift", "x")
        pend = {t: NamedReg(1, clk, rst, 0, name=f"rr_pend_{t}") for t in toks}
        tready = {t: Wire(Bits(1), f"rr_rq_{t}_ready") for t in toks}
        gone = [~pend[t].q | tready[t] for t in toks]
        free = gone[0]
        for g in gone[1:]:
            free = free & g
        y_ready_w.assign(free)
        for t in toks:
            pend[t].next(Mux(row_done, pend[t].q & ~tready[t], one))
        bo_ready_w = Wire(Bits(1), "rr_rq_y_ready")
        rq = rq_kernel(clk=clk, rst=rst, x=tot.q, x_valid=pend["x"].q, m0=p.m0,
                       m0_valid=pend["m0"].q, shift=p.shift, shift_valid=pend["shift"].q,
                       start_valid=one, y_ready=bo_ready_w,
                       instance_name="row_requantize_kernel")
        for t in toks:
            tready[t].assign(getattr(rq, f"{t}_ready"))

        # ---- broadcast: bpr beats of the row's int8 result
        bv = NamedReg(1, clk, rst, 0, name="rr_out_valid")
        bval = NamedReg(8, clk, None, None, name="rr_out_value")
        ob = NamedReg(CW, clk, rst, 0, name="rr_out_beat")
        ofire = bv.q & p.out_ready
        olast = ofire & (ob.q == last_beat)
        load = rq.y_valid & bo_ready_w
        bo_ready_w.assign(~bv.q | olast)
        bval.next(Mux(load, bval.q, rq.y))
        bv.next(Mux(load, bv.q & ~olast, one))
        ob.next(Mux(p.start, Mux(ofire, ob.q, Mux(olast, inc(ob.q, CW), Bits(CW)(0))),
                    Bits(CW)(0)))
        p.out_valid = bv.q
        p.out_data = BitsSignal.concat([bval.q] * AB)

    return module(f"row_reduce_w{W}", io, build)
