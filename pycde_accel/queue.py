"""A FIFO whose ``empty`` and ``full`` are flip-flops: the queue of every engine and stream
wrapper (``rtl_lib`` and ``lowering``; neither imports the other).

``Queue(Bits(w), depth, clk, rst, name)`` has the interface of PyCDE's ``seq.FIFO``:
``push(data, en)``, ``pop(en)`` (returns ``output``), ``output`` (the head, valid while
``empty`` is low), ``empty``, ``full``; the same cycle behaviour: a word pushed on edge e is the
head after e if the queue was empty, ``depth`` words fit, a push while full and a pop while
empty change nothing (the word pushed while full is dropped).

What differs is the timing structure. CIRCT's ``seq.fifo`` lowering computes ``empty`` and
``full`` as compares of its count and wraps its pointers with a compare against the depth, so
a pop decision that depends on ``empty`` runs count -> compare -> the caller's logic -> pop ->
pointer increment -> wrap compare -> pointer (``bench/fmax.py``'s estimate named several such
paths: ``fifo_count -> fifo_rd_addr``). Here ``empty`` and ``full`` are registers set from the
next count, and the storage has a power-of-two number of words, so the pointers wrap by
overflow. Registers ``{name}_count``, ``{name}_empty``, ``{name}_full``, ``{name}_wr``,
``{name}_rd``; memory ``{name}_mem`` (``seq.hlmem`` with a combinational read: distributed
RAM on ECP5, like ``seq.fifo``'s).

``head=True``: ``output`` is a register (``{name}_head``) that holds the head while ``empty`` is
low, so a consumer's logic starts at flops, not at the RAM's read mux; same cycles. The memory
is read at the word after the head (``{name}_rd_next``, in place of ``{name}_rd``) and the
head loads that word, or the word being pushed when it becomes the head (``{name}_few``), on
an edge where the queue is empty or popped. ``width`` flops more.
"""

from __future__ import annotations

from pycde.constructs import Mux, Wire
from pycde.types import Bits

from .regs import NamedReg


def _inc(v, w):
    return (v.as_uint() + 1).as_bits(w)


def _dec(v, w):
    return (v.as_uint() - 1).as_bits(w)


class Queue:
    """See the module docstring."""

    def __init__(self, type, depth: int, clk, rst, name: str = "queue", head: bool = False):
        from pycde.circt import ir
        from pycde.circt.dialects import seq as raw_seq
        from pycde.signals import _FromCirctValue

        if not isinstance(type, Bits):
            raise TypeError(f"Queue {name}: a Bits type, got {type}")
        if depth < 1:
            raise ValueError(f"Queue {name}: depth must be >= 1, got {depth}")
        width = type.bitwidth
        self.type = type
        pw = max(1, (depth - 1).bit_length())        # pointer bits: 2**pw >= depth words
        cw = depth.bit_length()                      # count bits: 0..depth
        self._wr_en = Wire(Bits(1), f"{name}_push")
        self._rd_en = Wire(Bits(1), f"{name}_pop")
        self._data = Wire(Bits(width), f"{name}_in")
        count = NamedReg(cw, clk, rst, 0, name=f"{name}_count")
        empty = NamedReg(1, clk, rst, 1, name=f"{name}_empty")
        full = NamedReg(1, clk, rst, 0, name=f"{name}_full")
        wr = NamedReg(pw, clk, rst, 0, name=f"{name}_wr")
        # with a head register the one read pointer is at the word after the head
        rd = NamedReg(pw, clk, rst, 1 % (1 << pw) if head else 0,
                      name=f"{name}_rd_next" if head else f"{name}_rd")
        push = self._wr_en & ~full.q
        pop = self._rd_en & ~empty.q
        wr.next(Mux(push, wr.q, _inc(wr.q, pw)))
        rd.next(Mux(pop, rd.q, _inc(rd.q, pw)))
        # the count and the flags from the count's next value, as compares of the count (a
        # register) and the two enables: count == 1 and a pop only -> empty, count ==
        # depth-1 and a push only -> full. Each is computed for the four values of the two
        # requests (functions of the queue's flops alone) and the requests select last: a
        # pusher's or a popper's decision, often deep and far away, then reaches the flags
        # through one mux, not through the up/down terms and a compare (the write DMA's
        # burst_q_v -> m_axi_awvalid -> a 3.04 ns route -> four LUTs -> its length queue's
        # lens_full was a path of the placed 8x8 on seed 1 at a428892, 8.04 ns; fpga.sta)
        at1 = count.q == Bits(cw)(1)
        at_top = count.q == Bits(cw)(depth - 1)
        eq = [count.q == Bits(cw)(k) if k < (1 << cw) else Bits(1)(0) for k in range(3)]
        le1 = eq[0] | eq[1]
        zero, one = Bits(1)(0), Bits(1)(1)

        def step(wr_req, rd_req):
            """(count, empty, full, few) after the edge for these requests."""
            push_, pop_ = wr_req & ~full.q, rd_req & ~empty.q
            up_, down_ = push_ & ~pop_, pop_ & ~push_
            return (Mux(up_, Mux(down_, count.q, _dec(count.q, cw)), _inc(count.q, cw)),
                    Mux(up_, Mux(down_, empty.q, at1), zero),
                    Mux(down_, Mux(up_, full.q, at_top), zero),
                    Mux(up_, Mux(down_, le1, le1 | eq[2]), eq[0]))

        cand = {(w, r): step(wv, rv) for w, wv in ((0, zero), (1, one))
                for r, rv in ((0, zero), (1, one))}

        def pick(i, w=None):
            if w is None:
                return Mux(self._wr_en, pick(i, 0), pick(i, 1))
            return Mux(self._rd_en, cand[(w, 0)][i], cand[(w, 1)][i])

        count.next(pick(0))
        empty.next(pick(1))
        full_next = pick(2)
        full.next(full_next)
        mem = raw_seq.HLMemOp(ir.Type.parse(f"!seq.hlmem<{1 << pw}xi{width}>"), clk.value,
                              rst.value, f"{name}_mem").handle
        raw_seq.WritePortOp(mem, [wr.q.value], self._data.value, push.value, 1)
        if head:
            # the head in a register of its own (``{name}_head``): the read is at the word
            # after the head (``{name}_rd_next``, a register), and the head loads on an edge
            # where the queue is empty or popped: that word, or the word being pushed when it
            # becomes the head (``{name}_few``: at most one word held after the edge, a flop
            # set from compares of the count)
            few = NamedReg(1, clk, rst, 1, name=f"{name}_few")
            few.next(pick(3))
            rd_data = raw_seq.ReadPortOp(ir.IntegerType.get_signless(width), mem,
                                         [rd.q.value], 0)
            nxt = Mux(few.q, _FromCirctValue(rd_data.result), self._data)
            hreg = NamedReg(width, clk, None, None, ce=empty.q | pop, name=f"{name}_head")
            hreg.next(nxt)
            self._output = hreg.q
        else:
            rd_data = raw_seq.ReadPortOp(ir.IntegerType.get_signless(width), mem, [rd.q.value],
                                         0)
            self._output = _FromCirctValue(rd_data.result)
        self._empty, self._full = empty.q, full.q
        #: ``full``'s next value (for a copy of the flag kept beside a far pusher)
        self.full_next = full_next
        #: ``full_next`` for each value of the push request, as functions of the flags and the
        #: pop alone: a pusher whose request is a deep decision can select between them with
        #: it last (``Mux(request, full_if_idle, full_if_push)`` == ``full_next``)
        self.full_if_push = pick(2, 1)
        self.full_if_idle = pick(2, 0)

    def push(self, data, en) -> None:
        self._data.assign(data)
        self._wr_en.assign(en)

    def pop(self, en):
        self._rd_en.assign(en)
        return self._output

    @property
    def output(self):
        return self._output

    @property
    def empty(self):
        return self._empty

    @property
    def full(self):
        return self._full
