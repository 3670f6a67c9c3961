"""What the calyx throughput passes need to know about a group: the cells it drives and reads.

A port ``%cell.port`` belongs to ``cell``; a component port made from a memory by
pycde-accel-calyx-mem-ports (``%arg_mem_0_read_data``) belongs to the memory ``arg_mem_0``; any
other component port or constant is its own name.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _calyx_text as C

MEM_PORTS = ("addr0", "addr1", "content_en", "write_en", "write_data", "read_data", "done")


def cell_of(ssa: str) -> str:
    name = ssa[1:].split("#")[0]
    if "." in name:
        return name.rpartition(".")[0]
    for p in MEM_PORTS:
        if name.endswith("_" + p) and name.startswith("arg_mem_"):
            return name[:-len(p) - 1]
    return name


@dataclass
class Group:
    op: C.Op
    name: str
    assigns: list[C.Assign]
    done: C.Op               # the calyx.group_done op
    done_value: str | None   # its operand when unguarded, else None

    @property
    def writes(self) -> set[str]:
        return {cell_of(a.dst) for a in self.assigns}

    @property
    def reads(self) -> set[str]:
        out = set()
        for a in self.assigns:
            out.add(cell_of(a.src))
            out |= {cell_of(t.text) for t in a.guard if t.kind == "ssa"}
        for o in self.op.regions[0].ops:
            if o.name not in ("calyx.assign", "calyx.group_done"):
                out |= {cell_of(u) for u in o.uses()}
        out |= {cell_of(u) for u in self.done.uses()}
        return out


def group(op: C.Op) -> Group:
    body = op.regions[0].ops
    done = next(o for o in body if o.name == "calyx.group_done")
    toks = [t for t in done.head if t.kind != "nl"]
    # calyx.group_done [GUARD ?] VALUE : i1
    value = toks[1].text if len(toks) == 4 and toks[1].kind == "ssa" else None
    return Group(op, op.sym, [C.parse_assign(o) for o in body if o.name == "calyx.assign"],
                 done, value)


def independent(a: Group, b: Group) -> bool:
    """Neither reads a cell the other drives, and they drive no cell in common."""
    return not (a.writes & (b.reads | b.writes)) and not (b.writes & a.reads)


def groups_of(comp: C.Component) -> dict[str, Group]:
    return {op.sym: group(op) for op in comp.wires.ops if op.name == "calyx.group"}


def seqs(comp: C.Component):
    """Every ``calyx.seq`` op of the control, with the enables' group names in order."""
    for op in comp.control.walk_ops():
        if op.name == "calyx.seq":
            yield op
