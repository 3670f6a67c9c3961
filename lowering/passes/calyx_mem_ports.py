"""pycde-accel-calyx-mem-ports: each ``calyx.seq_mem`` of the top component becomes its ports.

lower-calyx-to-hw cannot convert ``calyx.seq_mem`` ("couldn't convert to core primitive"), and
the kernel's memories are the accelerator's anyway (its streams answer them, :mod:`..stream`).
So each memory cell ``@M`` of the top component turns into component ports with the seq_mem's
protocol: outputs ``M_addr0`` (``M_addr1`` ...), ``M_content_en``, ``M_write_en``,
``M_write_data``; inputs ``M_read_data``, ``M_done``. Every use of ``%M.<port>`` becomes the
port; the memory's clk/reset assignments go. A port the component does not use is left out
(a memory that is only read has no ``M_write_data``, one only written no ``M_read_data``), so
that no SV output floats and no input is unused. Ports keep the seq_mem timing: the
accelerator raises ``M_done`` when the access is done, and ``M_read_data`` is the read value
from that cycle on (valid with ``done``) until the next read.

Transform of the custom-form text through :mod:`._calyx_text` (no Python bindings for calyx
ops; the ports are edited in the component header, which the custom form prints as a list).

Before:  calyx.component @k(%clk: i1 {clk}, %reset: i1 {reset}, %go: i1 {go}) -> (%done: i1 {done}) {
           %m.addr0, %m.clk, %m.reset, %m.content_en, %m.write_en, %m.write_data, %m.read_data,
             %m.done = calyx.seq_mem @m <[8] x 8> [3] : i3, i1, i1, i1, i1, i8, i8, i1
           ... calyx.assign %m.addr0 = %s.out : i3 ... calyx.group_done %m.done : i1
After:   calyx.component @k(%clk: i1 {clk}, ..., %m_read_data: i8, %m_done: i1)
             -> (%done: i1 {done}, %m_addr0: i3, %m_content_en: i1, %m_write_en: i1, ...) {
           ... calyx.assign %m_addr0 = %s.out : i3 ... calyx.group_done %m_done : i1
"""

from __future__ import annotations

from . import _calyx_text as C

NAME = "pycde-accel-calyx-mem-ports"
_IN = ("read_data", "done")
_DROP = ("clk", "reset")


def _is_top(op: C.Op) -> bool:
    return any(t.text == "toplevel" for t in op.parts[-1])


def rewrite(text: str) -> str:
    top = C.parse(text)
    for comp_op in [op for op in top.walk_ops() if op.name == "calyx.component"]:
        if not _is_top(comp_op):
            continue
        comp = C.component(comp_op)
        body = comp_op.regions[0]
        mapping: dict[str, str] = {}
        dropped: set[str] = set()
        outs: list[C.Port] = []
        for cell in [c for c in comp.cells() if c.name == "calyx.seq_mem"]:
            mem = cell.sym
            ports = C.cell_ports(cell)
            for (port, ssa), ty in zip(ports.items(), C.cell_types(cell)):
                if port in _DROP:
                    dropped.add(ssa)
                    continue
                p = C.Port(f"{mem}_{port}", ty, "")
                mapping[ssa] = f"%{p.name}"
                (comp.inputs if port in _IN else outs).append(p)
            body.ops.remove(cell)
        if not mapping:
            continue
        comp.outputs += outs
        for op in list(comp.wires.walk_ops()):
            if op.name == "calyx.assign" and C.parse_assign(op).dst in dropped:
                comp.wires.remove(op)
        comp_op.rename(mapping)
        # a port nothing uses is left out (no floating outputs, no unused inputs in the SV)
        driven = {C.parse_assign(o).dst for o in comp.wires.walk_ops() if o.name == "calyx.assign"}
        read: set[str] = set()
        for o in comp_op.regions[0].walk_ops():
            if o.name == "calyx.assign":
                a = C.parse_assign(o)
                read |= {a.src} | {t.text for t in a.guard if t.kind == "ssa"}
            else:
                read |= set(o.uses())
        comp.outputs = [p for p in comp.outputs if p not in outs or f"%{p.name}" in driven]
        comp.inputs = [p for p in comp.inputs if f"%{p.name}" not in mapping.values()
                       or f"%{p.name}" in read]
        comp.set_ports()
    return C.print_module(top)


def run(module) -> None:
    C.replace_module(module, rewrite(str(module)))
