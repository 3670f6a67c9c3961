"""Small PyCDE helpers shared by the rtl_lib modules (``NamedReg`` and ``register_slice`` live
in :mod:`pycde_accel.regs`, which the lowering's stream wrappers use too)."""

from __future__ import annotations

from ..regs import (NamedReg, Ring3, fifo_slice, pick3, register_slice,  # noqa: F401
                    rotate3)  # re-exported for the rtl_lib modules


def dual_port_mem(clk, rst, name: str, width: int, depth: int, waddr, wdata, wen, raddr):
    """A simple dual-port memory ``name`` of ``depth`` words of ``width`` bits (``seq.hlmem``:
    one write port, write latency 1; one registered read port, read latency 1): returns the
    read data. Yosys maps it to block RAM. A read of the
    word written in the same cycle is undefined on the FPGA (the open flow marks memories
    ``no_rw_check``: no read-first emulation logic around the block RAM;
    ``fpga.yosys.MEMORY_ATTRS``): a caller never reads a word in the cycle it writes it (the
    engines' bank commits and hazard checks order them)."""
    from pycde.circt import ir
    from pycde.circt.dialects import seq as raw_seq
    from pycde.signals import _FromCirctValue

    mem = raw_seq.HLMemOp(ir.Type.parse(f"!seq.hlmem<{depth}xi{width}>"), clk.value,
                          rst.value, name).handle
    raw_seq.WritePortOp(mem, [waddr.value], wdata.value, wen.value, 1)
    rd = raw_seq.ReadPortOp(ir.IntegerType.get_signless(width), mem, [raddr.value], 1)
    return _FromCirctValue(rd.result)


def name_module(cls, name: str):
    """Give a generated module class its SV module name and its file name (``name.sv``)."""
    from pycde.circt import ir
    from pycde.circt.dialects import hw

    cls.module_name = name
    cls.__name__ = name
    cls.__qualname__ = name
    cls._builder.attributes["output_file"] = hw.OutputFileAttr.get_from_filename(
        ir.StringAttr.get(f"{name}.sv"), False, True)
    return cls
