"""pycde-accel-prefix-modules{top=NAME}: make a kernel's helper modules unique to it.

lower-handshake-to-hw names its unit modules by type (``handshake_fork_in_ui8_out_ui8_ui8``),
so two kernels imported into one PyCDE System would define the same module twice. This pass
renames every ``hw.module`` other than the top (the one named like the kernel; with no
``top`` option, the last one) to ``<top>_<name>`` and updates the instances.

Before:  hw.module @handshake_fork_x ...   hw.module @clamp { hw.instance "f" @handshake_fork_x }
After:   hw.module @clamp_handshake_fork_x ...  hw.module @clamp { hw.instance "f" @clamp_handshake_fork_x }
"""

from __future__ import annotations

from ._util import ir_of, walk_ops

NAME = "pycde-accel-prefix-modules"


def run(module, top: str | None = None) -> None:
    ir = ir_of(module)
    ctx = module.context
    mods = [op.operation for op in module.body.operations
            if op.operation.name in ("hw.module", "hw.module.extern")]
    if not mods:
        return
    name_of = lambda op: ir.StringAttr(op.attributes["sym_name"]).value  # noqa: E731
    if top is None:
        top = name_of(mods[-1])
    rename = {name_of(m): f"{top}_{name_of(m)}" for m in mods
              if name_of(m) != top and not name_of(m).startswith(f"{top}_")}
    for m in mods:
        old = name_of(m)
        if old in rename:
            m.attributes["sym_name"] = ir.StringAttr.get(rename[old], ctx)
            if "verilogName" in m.attributes:
                del m.attributes["verilogName"]
    for op in walk_ops(module.operation):
        if op.name == "hw.instance":
            ref = ir.FlatSymbolRefAttr(op.attributes["moduleName"]).value
            if ref in rename:
                op.attributes["moduleName"] = ir.FlatSymbolRefAttr.get(rename[ref], ctx)
