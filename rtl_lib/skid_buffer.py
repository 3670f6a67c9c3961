"""A 2-entry skid buffer whose ``in_ready`` is a flop: a valid/ready stream between two blocks,
cut so that no combinational path crosses it in either direction.

``make_skid_buffer(width)`` -> module ``skid_buffer_w{width}``
----------------------------------------------------------------
Ports (valid/ready streams, ``rtl_lib.stream``'s protocol: a beat moves on a rising edge where
``valid`` and ``ready`` are both high; a sender holds its beat until it is taken):

* ``clk``, ``rst`` (synchronous, active high: both entries emptied; the data registers are not
  reset).
* In: ``in_data`` (``width``), ``in_valid``, ``in_ready`` (out).
* Out: ``out_data`` (out, ``width``), ``out_valid`` (out), ``out_ready``.

Contract:

* ``in_ready``, ``out_valid`` and ``out_data`` are registers (``in_ready`` = the skid entry is
  empty): ``out_ready`` reaches only the buffer's own registers, and ``in_valid``/``in_data``
  reach only its registers, so neither side's logic reaches the other in one cycle.
* Latency 1: a beat taken on edge e is offered on ``out`` from edge e on (``out_valid`` high in
  the cycle after e) and is taken there at edge e + 1 at the earliest.
* Rate: one beat per cycle for as long as ``out_ready`` is high (the skid entry is never used
  then, and ``in_ready`` stays high).
* Capacity 2: the output register and the skid entry. While the output is held (``out_valid``
  and not ``out_ready``) one more beat is taken into the skid entry, and ``in_ready`` is low from
  the next cycle until the cycle after the output is taken.
* Beats leave in the order they came, none dropped, none repeated. Empty, it is idle:
  ``out_valid`` low and ``in_ready`` high (also in the cycle after reset).

The logic is ``common.register_slice`` (the form the engines use inline); this module puts it
behind a module boundary for a stream between two blocks: each engine's DMA write data on its
way into the write arbiter (``rtl_lib.write_arbiter``).

PyCDE's own channel buffer (``ChannelSignal.buffer``: an ``ESI_PipelineStage`` from pycde's
``ESIPrimitives.sv``) has the same 2-entry, latency-1, full-rate behaviour (it passes this
module's random back-pressure testbench), but its ``a_ready`` is ``~l_valid | x_ready_reg``
(logic on two flops, not a flop), it is an extern SV module whose immediate ``assert`` stays in
the ECP5 netlist as a ``$check`` cell, and the design's other slices are all
``register_slice``; ``seq.FIFO`` reads its data from LUT RAM, not from a register.
"""

from __future__ import annotations

from pycde import Clock, Module, Reset

from ..errors import ConfigError
from .common import register_slice
from .stream import Stream, module

#: entries (the output register and the skid entry)
DEPTH = 2
#: edges from a beat taken on ``in`` to the first edge it can be taken on ``out``
LATENCY = 1


def make_skid_buffer(width: int) -> type[Module]:
    """The skid buffer module class for ``width``-bit beats (see the module docstring); make it
    once per design and instantiate it as often as needed (one SV module)."""
    if width < 1:
        raise ConfigError(f"skid buffer: width must be >= 1, got {width}")
    s = Stream(data=width)
    io = {"clk": Clock(), "rst": Reset(), **s.sink("in"), **s.source("out")}

    def build(p):
        v, d, ready = register_slice(p.clk, p.rst, p.in_valid, p.in_data, p.out_ready, "buf")
        p.out_valid = v
        p.out_data = d
        p.in_ready = ready

    return module(f"skid_buffer_w{width}", io, build)
