"""One processing element (PE) of the output-stationary systolic array.

Ports (all registered inside the PE except the combinational forwarding of its own registers):

* ``a_in``/``a_out`` (data_width): operand A, forwarded one PE to the right each cycle.
* ``b_in``/``b_out`` (data_width): operand B, forwarded one PE down each cycle.
* ``v_in``/``v_out``, ``l_in``/``l_out``: valid and last flags that travel with A (rightwards).
  A beat whose valid flag is 0 is a bubble: it moves through the array but changes no state.
* ``sh_in``/``sh_out``: drain-shift flag, travels rightwards; when set, the PE's output register
  ``o_r`` takes ``o_in`` (the output register of the PE above): the drain chain of its column.
* ``o_in``/``o_out`` (acc_width): the drain chain.

Pipeline (3 stages, every stage a register, so the critical path never leaves the PE):

1. ``a_r``, ``b_r``, ``v_r``, ``l_r``, ``sh_r``: registered inputs (they also feed the neighbours).
2. ``p_r = a_r * b_r``: the signed product, registered. ``a_r`` -> multiplier -> ``p_r`` is the
   one DSP block (ECP5 MULT18X18D) of the PE, with registers on both sides.
3. ``acc``: accumulator, clock-enabled by the product's valid flag. On the beat that carries
   ``last``, ``acc + p_r`` is written to the output register ``o_r`` and ``acc`` restarts at 0,
   so the next tile accumulates while ``o_r`` drains: that is the shadow register that lets the
   drain of one tile overlap the compute of the next.

A beat that enters ``a_r`` in cycle t is in ``acc``/``o_r`` from cycle t + 2.
"""

from __future__ import annotations

from pycde import Clock, Input, Module, Output, Reset, generator
from pycde.constructs import Mux
from pycde.types import Bits

from .common import NamedReg, name_module


def make_pe(data_width: int, acc_width: int) -> type[Module]:
    """The PE module class for signed ``data_width`` operands and an ``acc_width`` accumulator."""
    dw, aw = data_width, acc_width

    class SystolicPE(Module):
        clk = Clock()
        rst = Reset()
        a_in = Input(Bits(dw))
        b_in = Input(Bits(dw))
        v_in = Input(Bits(1))
        l_in = Input(Bits(1))
        sh_in = Input(Bits(1))
        o_in = Input(Bits(aw))
        a_out = Output(Bits(dw))
        b_out = Output(Bits(dw))
        v_out = Output(Bits(1))
        l_out = Output(Bits(1))
        sh_out = Output(Bits(1))
        o_out = Output(Bits(aw))

        @generator
        def build(ports):
            clk, rst = ports.clk, ports.rst
            # Stage 1: registered inputs (data registers have no reset: bubbles carry junk).
            a_r = ports.a_in.reg(clk, name="a_r")
            b_r = ports.b_in.reg(clk, name="b_r")
            v_r = ports.v_in.reg(clk, rst, name="v_r")
            l_r = ports.l_in.reg(clk, name="l_r")
            sh_r = ports.sh_in.reg(clk, rst, name="sh_r")
            # Stage 2: the multiplier (one DSP), registered product.
            prod = (a_r.as_sint() * b_r.as_sint()).as_bits()
            p_r = prod.reg(clk, name="p_r")
            pv_r = v_r.reg(clk, rst, name="pv_r")
            pl_r = (v_r & l_r).reg(clk, rst, name="pl_r")
            # Stage 3: accumulate; on last, hand the sum to the output register and restart.
            acc = NamedReg(aw, clk, rst, 0, ce=pv_r, name="acc")
            total = (acc.q.as_sint() + p_r.as_sint().as_sint(aw)).as_bits(aw)
            acc.next(Mux(pl_r, total, Bits(aw)(0)))
            o_r = NamedReg(aw, clk, ce=pl_r | sh_r, name="o_r")
            o_r.next(Mux(pl_r, ports.o_in, total))
            ports.a_out = a_r
            ports.b_out = b_r
            ports.v_out = v_r
            ports.l_out = l_r
            ports.sh_out = sh_r
            ports.o_out = o_r.q

    return name_module(SystolicPE, f"systolic_pe_d{dw}_a{aw}")
