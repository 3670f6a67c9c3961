"""A 1-bit register that synthesis does not merge with its copies, as a PyCDE extern module.

A load enable that drives a thousand flip-flops is one net across the die (the matmul unit's
operand FIFO slots, R*W + C*8 + 2 bits each in the depthwise build). Copying its register per
chunk of the load does not help by itself: Yosys ``opt_merge`` merges identical flip-flops back
into one. ``KeepFF`` is a flip-flop in a process marked ``keep`` (``keep_ff.sv``), so each copy
stays a flip-flop of its own and drives only its chunk.

``KeepFF(clk=, rst=, d=)`` -> ``.q`` (``q`` takes ``d`` on every edge; 0 on an edge with
``rst``). ``replicated(clk, rst, d, n, name)``: ``n`` such copies of one register;
``toggles(clk, rst, flip, n, name)``: ``n`` copies of a register that flips on ``flip``, each
with its next value (its own output XOR ``flip``) a LUT beside it; ``kept_copies(clk, rst, n,
name, next_of)``: ``n`` copies, each with a next value of its own. ``kept_counter(clk, rst, en,
width, init, name)``: a counter of kept flops (a pointer's copy); ``KeepFFSet`` resets to 1.
``SOURCE`` (``keep_ff.sv``) defines it: a synthesis *and* simulation source, listed in
``filelist.f`` by ``emit_module(..., sources=[SOURCE])``. No parameters: a parameterized
extern module instantiated with two parameter sets gets a uniquified name the source does
not define (see ``lutram``).
"""

from __future__ import annotations

from pathlib import Path

from pycde import Clock, Input, Module, Output, Reset
from pycde.types import Bits

SOURCE = Path(__file__).resolve().parent / "keep_ff.sv"


class KeepFF(Module):
    module_name = "pycde_accel_keep_ff"
    clk = Clock()
    rst = Reset()
    d = Input(Bits(1))
    q = Output(Bits(1))


class KeepFFSet(Module):
    """:class:`KeepFF` with reset to 1."""
    module_name = "pycde_accel_keep_ff_set"
    clk = Clock()
    rst = Reset()
    d = Input(Bits(1))
    q = Output(Bits(1))


def kept_counter(clk, rst, en, width: int, init: int, name: str,
                 modulus: int | None = None) -> list:
    """A ``width``-bit register of kept flops (instances ``{name}_b{k}``) that starts at
    ``init`` and counts up by one (modulo ``2**width``, or ``modulus``) on an edge where ``en``
    is high: a copy of a pointer that synthesis does not merge with the pointer it copies, so
    each copy can sit beside the part of a wide memory it addresses. Returns its value
    (``width`` bits)."""
    from pycde.constructs import Mux, Wire
    from pycde.signals import BitsSignal

    d = [Wire(Bits(1), f"{name}_b{k}_next") for k in range(width)]
    q = [(KeepFFSet if (init >> k) & 1 else KeepFF)(clk=clk, rst=rst, d=d[k],
                                                    instance_name=f"{name}_b{k}").q
         for k in range(width)]
    cur = BitsSignal.concat(list(reversed(q))) if width > 1 else q[0]
    nxt = (cur.as_uint() + 1).as_bits(width)
    if modulus is not None and modulus != 1 << width:
        nxt = Mux(cur == Bits(width)(modulus - 1), nxt, Bits(width)(0))
    val = Mux(en, cur, nxt)
    for k in range(width):
        d[k].assign(val[k])
    return cur


def replicated(clk, rst, d, n: int, name: str, init: int = 0) -> list:
    """``n`` kept copies of the register ``d`` -> ``q`` (instances ``{name}_{i}``; reset to
    ``init``): their outputs, each to drive one part of a wide load."""
    ff = KeepFFSet if init else KeepFF
    return [ff(clk=clk, rst=rst, d=d, instance_name=f"{name}_{i}").q for i in range(n)]


def kept_copies(clk, rst, n: int, name: str, next_of) -> list:
    """``n`` kept 1-bit registers (instances ``{name}_{i}``, reset to 0), copy ``i``'s next
    value ``next_of(i, q_i)`` of its own output and whatever else the caller gives it: copies
    of one register, each computing its next value beside itself from the signals its part of
    the die has. Returns their outputs."""
    from pycde.constructs import Wire

    out = []
    for i in range(n):
        d = Wire(Bits(1), f"{name}_{i}_next")
        q = KeepFF(clk=clk, rst=rst, d=d, instance_name=f"{name}_{i}").q
        d.assign(next_of(i, q))
        out.append(q)
    return out


def toggles(clk, rst, flip, n: int, name: str) -> list:
    """``n`` kept copies of a 1-bit register that starts at 0 and flips on an edge where
    ``flip`` is high (instances ``{name}_{i}``): their outputs. Each copy's next value is its
    own output XOR ``flip``, so ``flip`` is the only net that reaches all of them; with one
    next value shared (:func:`replicated` of ``q ^ flip``) the copies spread over the die
    wait for one LUT somewhere between them (the read router's output take -> the shared
    pointer next value -> a 1.90 ns route to a copy, on the placed 8x8's seed 1 at 614cbf2)."""
    return kept_copies(clk, rst, n, name, lambda _, q: q ^ flip)
