"""One processing element (PE) of the output-stationary systolic array.

Ports (all registered inside the PE except the combinational forwarding of its own registers):

* ``a_in``/``a_out`` (data_width; 18 with ``use_dsp``): operand A, forwarded one PE to the
  right each cycle.
* ``b_in``/``b_out`` (data_width; 18 with ``use_dsp``): operand B, forwarded one PE down each
  cycle.
* ``v_in``/``v_out``, ``l_in``/``l_out``: valid and last flags that travel with A (rightwards).
  A beat whose valid flag is 0 is a bubble: it moves through the array but changes no state.
* ``sh_in``/``sh_out``: drain-shift flag, travels rightwards; when set, the PE's output register
  ``o_r`` takes ``o_in`` (the output register of the PE above): the drain chain of its column.
* ``o_in``/``o_out`` (acc_width): the drain chain.

Pipeline (every stage a register, so the critical path never leaves the PE). A beat whose
operands are on ``a_in``/``b_in`` before edge t:

* edge t: ``a_r``, ``b_r``, ``v_r``, ``l_r``, ``sh_r`` take the inputs (they feed the neighbours);
* edge t + 1: the multiplier's input registers take ``a_r``/``b_r`` (registers: the route into
  the DSP, which the placer may put far from the PE's fabric, starts at a flop, with no logic
  before it: the depthwise operand mux in front of ``a_in`` -> a 5.89 ns route -> the DSP's A
  input was the placed 8x8's critical path on seed 3 at 82013b3);
* edge t + 2: the multiplier's output register takes the signed product;
* edge t + 3: ``p_r``, a fabric register, takes it (it decouples the route out of the DSP
  column from the accumulator's carry chain);
* edge t + 4: ``acc`` (clock-enabled by the beat's valid flag) adds ``p_r``; on the beat that
  carries ``last``, ``acc + p_r`` is written to the output register ``o_r`` instead and ``acc``
  restarts at 0, so the next tile accumulates while ``o_r`` drains: that is the shadow register
  that lets the drain of one tile overlap the compute of the next.

The multiplier (``use_dsp``, chosen by the core from the config's target):

* ``use_dsp=True`` (ECP5): one MULT18X18D instantiated directly (``rtl_lib.ecp5``) with its
  internal input and output registers, fed from ``a_r``/``b_r``. Yosys never packs fabric registers into the block, so this is the only way to get
  a registered DSP; simulation needs ``ecp5.SIM_MODEL``. The operands travel through the
  array already sign-extended to the block's 18 bits (the core extends them once, at its
  edge), so each PE wires its ``a_in``/``b_in`` bits straight to A0..A17/B0..B17. In hardware
  this is free: the forwarding registers' upper bits all hold the same sign bit and Yosys
  merges them. In Verilator it is not free: with 8-bit ports every PE would rebuild the 18-bit
  operands from replicated bits on every cycle.
* ``use_dsp=False`` (any other target): ``a_r * b_r`` registered in ``mi_r`` (the product's
  inputs, as the DSP's input registers), ``mi_r``'s product registered in ``m_r``: the same
  stages, so the latency does not depend on the target.

A beat that enters ``a_r`` in cycle t is in ``acc``/``o_r`` from cycle t + 4 (PE_LATENCY).
"""

from __future__ import annotations

from pycde import Clock, Input, Module, Output, Reset
from pycde.constructs import Mux
from pycde.types import Bits

from .common import NamedReg
from .ecp5 import DSP_WIDTH, mult18x18d_reg
from .stream import module

#: edges from a beat entering ``a_r`` to its product being added into ``acc``/``o_r``
PE_LATENCY = 4


def make_pe(data_width: int, acc_width: int, use_dsp: bool = False) -> type[Module]:
    """The PE module class for signed ``data_width`` operands and an ``acc_width`` accumulator;
    ``use_dsp``: instantiate an ECP5 MULT18X18D with its internal registers (see above)."""
    dw, aw = data_width, acc_width
    ow = DSP_WIDTH if use_dsp else dw  # operand width on the ports and forwarding registers

    # the ports in and out of the PE, name -> width: what it takes from its neighbours and
    # forwards to the next ones
    chain = {"a": ow, "b": ow, "v": 1, "l": 1, "sh": 1, "o": aw}
    io = {"clk": Clock(), "rst": Reset(), **{f"{n}_in": Input(Bits(w)) for n, w in chain.items()},
          **{f"{n}_out": Output(Bits(w)) for n, w in chain.items()}}

    def build(ports):
        clk, rst = ports.clk, ports.rst
        # Stage 1: registered inputs (data registers have no reset: bubbles carry junk).
        a_r = ports.a_in.reg(clk, name="a_r")
        b_r = ports.b_in.reg(clk, name="b_r")
        v_r = ports.v_in.reg(clk, rst, name="v_r")
        l_r = ports.l_in.reg(clk, name="l_r")
        sh_r = ports.sh_in.reg(clk, rst, name="sh_r")
        # Stages 2-3: the multiplier (one DSP) with registered inputs and output, fed from
        # the PE's own registers.
        if use_dsp:
            m_q = mult18x18d_reg(clk, a_r, b_r, ow, name="dsp")[0:2 * dw]
        else:
            ma_r, mb_r = a_r.reg(clk, name="ma_r"), b_r.reg(clk, name="mb_r")
            prod = (ma_r.as_sint() * mb_r.as_sint()).as_bits(2 * dw)
            m_q = prod.reg(clk, name="m_r")
        iv_r = v_r.reg(clk, rst, name="iv_r")
        il_r = (v_r & l_r).reg(clk, rst, name="il_r")
        mv_r = iv_r.reg(clk, rst, name="mv_r")
        ml_r = il_r.reg(clk, rst, name="ml_r")
        # Stage 4: one fabric register between the DSP and the accumulator.
        p_r = m_q.reg(clk, name="p_r")
        pv_r = mv_r.reg(clk, rst, name="pv_r")
        pl_r = ml_r.reg(clk, rst, name="pl_r")
        # Stage 5: accumulate; on last, hand the sum to the output register and restart.
        acc = NamedReg(aw, clk, rst, 0, ce=pv_r, name="acc")
        total = (acc.q.as_sint() + p_r.as_sint().as_sint(aw)).as_bits(aw)
        acc.next(Mux(pl_r, total, Bits(aw)(0)))
        o_r = NamedReg(aw, clk, ce=pl_r | sh_r, name="o_r")
        o_r.next(Mux(pl_r, ports.o_in, total))
        for n, sig in zip(chain, (a_r, b_r, v_r, l_r, sh_r, o_r.q)):
            setattr(ports, f"{n}_out", sig)

    return module(f"systolic_pe_d{dw}_a{aw}" + ("_ecp5" if use_dsp else ""), io, build)
