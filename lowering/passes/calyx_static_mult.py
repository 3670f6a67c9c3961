"""pycde-accel-calyx-static-mult: a multiply group takes one cycle, its product read from the multiplier.

lower-scf-to-calyx turns ``arith.muli`` into a group that starts a ``calyx.std_mult_pipe`` and
latches its product in a register, done by that register's ``done``: three cycles (the
multiplier's ``done`` a cycle after ``go``, the register's ``done`` a cycle after its write).
lower-calyx-to-hw builds std_mult_pipe as one stage: on the edge where ``go`` is high and
``done`` low it captures ``left * right`` in its ``out`` register, which holds until the next
such edge. So the product is there from the cycle after ``go`` on, and the result register only
repeats it. This pass makes such a group a static one-cycle group: it keeps the multiplier's
``go`` (and the operand assignments), is done while the multiplier's ``done`` is still low (a
``calyx.std_not`` of it: the cycle ``go`` is high; a constant ``group_done`` is refused by the
verifier), and every reader of the result register reads the multiplier's ``out`` instead; the
register goes.

It applies when the group writes just the multiplier, the result register (``in`` = the
multiplier's ``out``, ``write_en`` = its ``done``) and combinational cells; no other group or
continuous assignment drives the multiplier or the register (their clk/reset aside); the
register is read outside the group only (never by it or by a continuous assignment) and its
``done`` only as the group's done; and the group is enabled once in the control. The last two
make the rewrite exact: the multiplier's ``out`` changes only in the group's cycle, where the
register was not read either, and the multiplier's ``done`` is low when the group starts (the
state before it is another group's or an FSM bookkeeping state, never the group itself), so
``go`` is high in that cycle and the product is captured.

Transform of the custom-form text through :mod:`._calyx_text` (no Python bindings for calyx ops).

Before:  calyx.group @m { calyx.assign %mul.left = ... calyx.assign %mul.right = ...
             calyx.assign %r.in = %mul.out : i64  calyx.assign %r.write_en = %mul.done : i1
             calyx.assign %mul.go = %0 ? %true : i1  calyx.group_done %r.done : i1 }
         calyx.group @use { calyx.assign %add.left = %r.out : i64 ... }
After:   %m_first.in, %m_first.out = calyx.std_not @m_first : i1, i1
         calyx.group @m { calyx.assign %mul.left = ... calyx.assign %mul.right = ...
             calyx.assign %mul.go = %0 ? %true : i1
             calyx.assign %m_first.in = %mul.done : i1  calyx.group_done %m_first.out : i1 }
         calyx.group @use { calyx.assign %add.left = %mul.out : i64 ... }
"""

from __future__ import annotations

from . import _calyx_groups as G
from . import _calyx_text as C

NAME = "pycde-accel-calyx-static-mult"


def _sequential(cell: C.Op) -> bool:
    return "clk" in C.cell_ports(cell)


def _enable_count(comp: C.Component, name: str) -> int:
    return sum(1 for o in comp.control.walk_ops() if o.name == "calyx.enable" and o.sym == name)


def _candidate(g: G.Group, cells: dict[str, C.Op]):
    """(multiplier, register) when ``g`` is a multiply group of the lowered shape, else None."""
    if g.done_value is None or not g.done_value.endswith(".done"):
        return None
    reg = g.done_value[1:-5]
    if reg not in cells or cells[reg].name != "calyx.register":
        return None
    pipes = [c for c in g.writes if c in cells and cells[c].name == "calyx.std_mult_pipe"]
    if len(pipes) != 1:
        return None
    mul = pipes[0]
    if any(c not in cells or (c not in (mul, reg) and _sequential(cells[c])) for c in g.writes):
        return None
    to_reg = {a.dst: a for a in g.assigns if G.cell_of(a.dst) == reg}
    a_in, a_we = to_reg.get(f"%{reg}.in"), to_reg.get(f"%{reg}.write_en")
    if set(to_reg) != {f"%{reg}.in", f"%{reg}.write_en"} or a_in.guard or a_we.guard \
            or a_in.src != f"%{mul}.out" or a_we.src != f"%{mul}.done":
        return None
    if any(G.cell_of(a.src) == reg for a in g.assigns) \
            or any(G.cell_of(t.text) == reg for a in g.assigns for t in a.guard if t.kind == "ssa") \
            or any(G.cell_of(u) == reg for o in g.op.regions[0].ops
                   if o.name not in ("calyx.assign", "calyx.group_done") for u in o.uses()):
        return None
    return mul, reg


def rewrite(text: str) -> str:
    top = C.parse(text)
    for comp_op in [op for op in top.walk_ops() if op.name == "calyx.component"]:
        comp = C.component(comp_op)
        cells = {c.sym: c for c in comp.cells()}
        groups = G.groups_of(comp)
        continuous = [C.parse_assign(o) for o in comp.wires.ops if o.name == "calyx.assign"]
        for g in list(groups.values()):
            found = _candidate(g, cells)
            if found is None or _enable_count(comp, g.name) != 1:
                continue
            mul, reg = found
            others = [h for h in groups.values() if h.name != g.name]
            if any(mul in h.writes or reg in h.writes for h in others):
                continue
            if any(G.cell_of(a.dst) in (mul, reg) and not a.dst.endswith((".clk", ".reset"))
                   for a in continuous):
                continue
            if any(G.cell_of(a.src) == reg or any(G.cell_of(t.text) == reg for t in a.guard
                                                   if t.kind == "ssa") for a in continuous):
                continue
            if any(f"%{reg}.done" in h.op.text() for h in others) or any(
                    f"%{reg}.done" in o.text() for o in comp.wires.ops if o.name != "calyx.group"):
                continue
            ind = g.done.head[0].ws
            body = g.op.regions[0].ops
            body[:] = [o for o in body if not (o.name == "calyx.assign"
                                               and G.cell_of(C.parse_assign(o).dst) == reg)
                       and o.name != "calyx.group_done"]
            first = f"{g.name}_first"  # high while the multiplier is not done: its go cycle
            comp_op.regions[0].ops.insert(
                comp_op.regions[0].ops.index(cells[reg]),
                C.parse_ops(f"    %{first}.in, %{first}.out = calyx.std_not @{first} : i1, i1\n")[0])
            body.extend(C.parse_ops(C.assign_text(ind, f"%{first}.in", f"%{mul}.done", "i1")
                                    + f"{ind}calyx.group_done %{first}.out : i1\n"))
            comp.wires.ops[:] = [o for o in comp.wires.ops if not (
                o.name == "calyx.assign" and G.cell_of(C.parse_assign(o).dst) == reg)]
            for o in comp.wires.ops:
                o.rename({f"%{reg}.out": f"%{mul}.out"})
            comp_op.regions[0].ops.remove(cells.pop(reg))
            groups = G.groups_of(comp)
            continuous = [C.parse_assign(o) for o in comp.wires.ops if o.name == "calyx.assign"]
    return C.print_module(top)


def run(module) -> None:
    C.replace_module(module, rewrite(str(module)))
