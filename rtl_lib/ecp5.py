"""Lattice ECP5 primitives instantiated directly, and which targets use them.

Yosys's ``synth_ecp5`` maps a ``*`` to a MULT18X18D but never packs fabric registers into the
block's internal input/output registers, so a PE built on an inferred multiply has the multiplier
between two fabric registers and the route out of the DSP column on its critical path. The PE
therefore instantiates the block itself on ECP5 (``uses_ecp5_dsp``) with those registers on.

``Mult18x18dReg()``: a PyCDE extern module for ``MULT18X18D`` (port and parameter names as in
Yosys's ``share/ecp5/cells_bb.v``: bit ports ``A0..A17``, ``B0..B17``, ``P0..P35``, ``SIGNEDA``,
``SIGNEDB``, ``CLK0``/``CE0``/``RST0`` ...), with ``REG_INPUTA_CLK = REG_INPUTB_CLK =
REG_OUTPUT_CLK = "CLK0"``; every other parameter keeps its default (``REG_PIPELINE_CLK =
"NONE"``: no pipeline register; the registers' CE0/RST0, ``RESETMODE = "SYNC"``). ``mult18x18d_reg(clk, a, b, width)`` wires one up as a signed ``width`` x ``width``
multiply (operands sign-extended to 18 bits, SIGNEDA = SIGNEDB = 1, CE0 = 1, RST0 = 0, C and the
shift inputs 0) and returns its ``2*width``-bit product.

Timing of that configuration (two register stages, both on CLK0, always enabled)::

    edge t:     A_reg <= A,  B_reg <= B            (input registers)
    edge t + 1: P_reg <= signed(A_reg) * signed(B_reg)  (output register; P = P_reg)

so ``P`` after edge t + 1 is the product of the operands presented before edge t: a latency of
2 edges, like two fabric registers around a multiplier. ``SIM_MODEL`` (``MULT18X18D_sim.sv``
in this folder) is a behavioral model of exactly this configuration for Verilator: Yosys has
only a blackbox for the block, so the model is a *simulation-only* source; it must never reach
synthesis (it would replace the hard block by fabric logic). ``rtl_lib.emit.emit_core`` lists
it in ``sim_files`` / ``filelist_sim.f``, never in ``filelist.f``.
"""

from __future__ import annotations

from pathlib import Path

from pycde import Clock, Input, Module, Output
from pycde.module import modparams
from pycde.signals import BitsSignal
from pycde.types import Bits

#: the simulation-only behavioral model of the configuration ``Mult18x18dReg`` sets
SIM_MODEL = Path(__file__).resolve().parent / "MULT18X18D_sim.sv"

#: MULT18X18D operands are 18 bits wide (signed)
DSP_WIDTH = 18


def is_ecp5(target: str) -> bool:
    """Whether ``target`` (an ``fpga`` target name) is a Lattice ECP5 device."""
    return str(target).lower().startswith("ecp5")


def uses_ecp5_dsp(target: str, data_width: int) -> bool:
    """Whether a PE for ``target`` instantiates MULT18X18D (else it infers its multiply)."""
    return is_ecp5(target) and 2 <= data_width <= DSP_WIDTH


@modparams
def Mult18x18dReg(REG_INPUTA_CLK: str = "CLK0", REG_INPUTB_CLK: str = "CLK0",
                  REG_OUTPUT_CLK: str = "CLK0"):
    """Extern MULT18X18D with its parameters; only the ports the PE drives or reads."""
    attrs = {}
    for i in range(DSP_WIDTH):
        attrs[f"A{i}"] = Input(Bits(1))
        attrs[f"B{i}"] = Input(Bits(1))
    for name in ("SIGNEDA", "SIGNEDB", "SOURCEA", "SOURCEB", "CE0", "RST0"):
        attrs[name] = Input(Bits(1))
    attrs["CLK0"] = Clock()
    for i in range(2 * DSP_WIDTH):
        attrs[f"P{i}"] = Output(Bits(1))
    cls = type("MULT18X18D", (Module,), attrs)
    cls.module_name = "MULT18X18D"
    return cls


def mult18x18d_reg(clk, a: BitsSignal, b: BitsSignal, width: int, name: str) -> BitsSignal:
    """Signed ``a * b`` (``width`` bits each) through one registered MULT18X18D; latency 2."""
    if not 2 <= width <= DSP_WIDTH:
        raise ValueError(f"MULT18X18D takes operands of 2..{DSP_WIDTH} bits, not {width}")
    zero, one = Bits(1)(0), Bits(1)(1)

    def ext(x: BitsSignal) -> list:
        bits = [x[i] for i in range(width)]
        return bits + [x[width - 1]] * (DSP_WIDTH - width)

    ports = {"CLK0": clk, "CE0": one, "RST0": zero, "SIGNEDA": one, "SIGNEDB": one,
             "SOURCEA": zero, "SOURCEB": zero}
    for i, (ab, bb) in enumerate(zip(ext(a), ext(b))):
        ports[f"A{i}"] = ab
        ports[f"B{i}"] = bb
    inst = Mult18x18dReg()(instance_name=name, **ports)
    p = [getattr(inst, f"P{i}") for i in range(2 * width)]
    return BitsSignal.concat(list(reversed(p)))
