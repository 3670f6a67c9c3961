"""Small PyCDE helpers shared by the rtl_lib modules."""

from __future__ import annotations

from pycde.constructs import Wire
from pycde.types import Bits


class NamedReg:
    """A register whose SV name is exactly ``name`` (PyCDE's ``Reg`` appends ``__reg1``).

    ``r = NamedReg(Bits(8), clk, rst, 0, "count")``; read ``r.q``; assign ``r.next(value)`` once.
    """

    def __init__(self, width: int, clk, rst=None, rst_value: int | None = None, ce=None,
                 name: str = "r"):
        self._d = Wire(Bits(width), f"{name}_next")
        if rst is not None and rst_value is None:
            rst_value = 0
        self.q = self._d.reg(clk, rst, rst_value=rst_value, ce=ce, name=name)

    def next(self, value) -> None:
        self._d.assign(value)


def dual_port_mem(clk, rst, name: str, width: int, depth: int, waddr, wdata, wen, raddr,
                  ren=None):
    """A simple dual-port memory ``name`` of ``depth`` words of ``width`` bits (``seq.hlmem``:
    one write port, write latency 1; one registered read port, read latency 1): returns the
    read data. Yosys maps it to block RAM. ``ren`` (optional): the read port's enable: the
    read data register loads ``mem[raddr]`` only on an edge where ``ren`` is high and holds
    otherwise (the block RAM's read clock enable), so a caller that must hold its read data
    while it stalls need not hold the address with a mux in front of the RAM. A read of the
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
    if ren is None:
        rd = raw_seq.ReadPortOp(ir.IntegerType.get_signless(width), mem, [raddr.value], 1)
        return _FromCirctValue(rd.result)
    rd = raw_seq.ReadPortOp(ir.IntegerType.get_signless(width), mem, [raddr.value], 0)
    return _FromCirctValue(rd.result).reg(clk, ce=ren, name=f"{name}_rd_q")


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


def register_slice(clk, rst, valid, data, ready, name: str):
    """A full-rate valid/ready register slice (2-entry skid buffer) between a sender
    (``valid``, ``data``) and a receiver (``ready``): returns ``(out_valid, out_data,
    in_ready)``. ``out_valid``/``out_data`` and ``in_ready`` are registers, so neither the
    sender's logic nor the receiver's reaches the other side in one cycle. Latency 1 (a beat
    taken on edge e is offered after e), 1 beat per cycle, order kept. Registers
    ``{name}_v``/``{name}_d`` (the output) and ``{name}_skid_v``/``{name}_skid_d``."""
    from pycde.constructs import Mux

    w = data.type.width
    main_v = NamedReg(1, clk, rst, 0, name=f"{name}_v")
    skid_v = NamedReg(1, clk, rst, 0, name=f"{name}_skid_v")
    in_ready = ~skid_v.q
    load = ~main_v.q | ready                     # the output register is empty or taken
    skid_d = NamedReg(w, clk, None, None, ce=in_ready, name=f"{name}_skid_d")
    skid_d.next(data)
    main_d = NamedReg(w, clk, None, None, ce=load, name=f"{name}_d")
    main_d.next(Mux(skid_v.q, data, skid_d.q))
    main_v.next(Mux(load, main_v.q, skid_v.q | valid))
    skid_v.next(Mux(load, skid_v.q | (valid & in_ready), Bits(1)(0)))
    return main_v.q, main_d.q, in_ready
