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
