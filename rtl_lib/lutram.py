"""A simple dual-port RAM (synchronous write, asynchronous read) as a PyCDE extern module.

PyCDE has no memory construct besides ``seq.FIFO``, whose CIRCT lowering puts a counter, a
full/empty compare and a compare-with-depth wrap on the pointer paths. The systolic core's
output FIFO is built from this RAM and its own registered pointers instead (see ``systolic``).
``Lutram(width, depth)``: ports ``clk``, ``we``, ``waddr``, ``wdata``, ``raddr`` -> ``rdata``
(``rdata`` is ``mem[raddr]`` combinationally; a write on an edge is visible after it).
``SOURCE`` (``lutram.sv``) defines it: a synthesis *and* simulation source, listed in
``filelist.f`` by ``emit_module(..., sources=[SOURCE])``.
"""

from __future__ import annotations

from pathlib import Path

from pycde import Clock, Input, Module, Output
from pycde.module import modparams
from pycde.types import Bits

SOURCE = Path(__file__).resolve().parent / "lutram.sv"


def addr_width(depth: int) -> int:
    return max(1, (depth - 1).bit_length())


@modparams
def Lutram(WIDTH: int, DEPTH: int, ADDR_WIDTH: int):
    class pycde_accel_lutram(Module):
        module_name = "pycde_accel_lutram"
        clk = Clock()
        we = Input(Bits(1))
        waddr = Input(Bits(ADDR_WIDTH))
        wdata = Input(Bits(WIDTH))
        raddr = Input(Bits(ADDR_WIDTH))
        rdata = Output(Bits(WIDTH))

    return pycde_accel_lutram
