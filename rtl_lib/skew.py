"""Skew and deskew buffers: lane i of a bus delayed by a lane-dependent number of cycles.

A systolic array needs its operands staggered (row p of A enters p cycles after row 0, column
j of B j cycles after column 0) and its results re-aligned when they leave (column j of the
result leaves the array j cycles after column 0, so it is delayed ``lanes - 1 - j`` cycles).

``make_skew(lanes, width, descending=False, reset=False)``: input ``d_in`` holds ``lanes`` lanes of ``width``
bits (lane i at bits ``[i*width, (i+1)*width)``); output ``d_out`` has lane i delayed i cycles
(``descending=False``) or ``lanes - 1 - i`` cycles (``descending=True``). Lane delays of 0 are
wires. ``lanes * (lanes - 1) / 2 * width`` flip-flops, no enable: the array is free running.
Data skews have no reset; ``reset=True`` adds a synchronous ``rst`` that clears every stage
(for the valid flags that mark bubbles, so that a reset in mid-tile leaves no stale beat).
"""

from __future__ import annotations

from pycde import Clock, Input, Module, Output, Reset, generator
from pycde.signals import BitsSignal
from pycde.types import Bits

from .common import name_module


def make_skew(lanes: int, width: int, descending: bool = False,
              reset: bool = False) -> type[Module]:
    kind = ("deskew" if descending else "skew") + ("_rst" if reset else "")

    class Skew(Module):
        clk = Clock()
        if reset:
            rst = Reset()
        d_in = Input(Bits(lanes * width))
        d_out = Output(Bits(lanes * width))

        @generator
        def build(ports):
            outs = []
            for i in range(lanes):
                sig = ports.d_in[i * width:(i + 1) * width]
                delay = (lanes - 1 - i) if descending else i
                for n in range(delay):
                    sig = sig.reg(ports.clk, ports.rst if reset else None,
                                  name=f"lane{i}_d{n}")
                outs.append(sig)
            # concat takes the most significant part first.
            ports.d_out = BitsSignal.concat(list(reversed(outs)))

    return name_module(Skew, f"systolic_{kind}_l{lanes}_w{width}")
