"""pycde-accel-calyx-hoist-comb: a group's private combinational cells as continuous assignments.

calyx-remove-groups-fsm guards every assignment of a group by the group's go (``go ? v : 0``
in the SV), also those that only feed one combinational cell from another. A body that is a
long chain of combinational cells (lut: 255 compare/selects) then becomes a chain of twice as
many muxes, every link gated by the FSM state: more logic and a longer path (lut's SV: 123 kB,
53 kB after this pass). This pass moves the assignments that drive a combinational cell out of the group
into the component's wires, unguarded, when the cell is private to the group:

* the cell has no ``clk`` port (``calyx.std_add``, ``std_mux``, ``std_slice``, ``std_slt`` ...:
  its outputs are a function of its inputs only);
* every assignment to any of its ports is in this group and unguarded, with a source that is a
  port or constant (not a value defined in the group, such as a ``comb.xor`` guard);
* its outputs are read by this group only (no other group, continuous assignment or control
  condition reads them).

The cell then computes the same function in every cycle; in the group's cycles, the only ones
in which anything reads it, its value is what it was (the group's reads of it stay guarded, so
what leaves the group, a register write or a memory port, is still gated by the FSM).

Transform of the custom-form text through :mod:`._calyx_text` (no Python bindings for calyx ops).

Before:  calyx.group @w { calyx.assign %add.left = %arg_mem_0_read_data : i8
             calyx.assign %add.right = %c1_i8 : i8
             calyx.assign %arg_mem_1_write_data = %add.out : i8 ... }
After:   calyx.assign %add.left = %arg_mem_0_read_data : i8      (in calyx.wires)
         calyx.assign %add.right = %c1_i8 : i8
         calyx.group @w { calyx.assign %arg_mem_1_write_data = %add.out : i8 ... }
"""

from __future__ import annotations

from . import _calyx_groups as G
from . import _calyx_text as C

NAME = "pycde-accel-calyx-hoist-comb"


def _refs(op: C.Op) -> set[str]:
    """Cells whose ports ``op`` (and the ops in its regions) reads or drives."""
    return {G.cell_of(t.text) for o in op.walk() for part in o.parts for t in part
            if t.kind == "ssa"}


def rewrite(text: str) -> str:
    top = C.parse(text)
    for comp_op in [op for op in top.walk_ops() if op.name == "calyx.component"]:
        comp = C.component(comp_op)
        cells = {c.sym: c for c in comp.cells()}
        comb = {c for c, op in cells.items()
                if op.name.startswith("calyx.std_") and "clk" not in C.cell_ports(op)}
        groups = [o for o in comp.wires.ops if o.name == "calyx.group"]
        # cells referred to outside each group (other groups, continuous wires, the control)
        outside_wires = [_refs(o) for o in comp.wires.ops]
        control = {G.cell_of(t.text) for o in comp.control.walk_ops() for part in o.parts
                   for t in part if t.kind == "ssa"}
        hoisted = []
        for g in groups:
            body = g.regions[0].ops
            local = {r for o in body for r in o.results}
            elsewhere = set(control)
            for o, refs in zip(comp.wires.ops, outside_wires):
                if o is not g:
                    elsewhere |= refs
            assigns = [(o, C.parse_assign(o)) for o in body if o.name == "calyx.assign"]
            driven: dict[str, list] = {}
            for o, a in assigns:
                driven.setdefault(G.cell_of(a.dst), []).append((o, a))
            for c, drv in driven.items():
                if c not in comb or c in elsewhere:
                    continue
                if any(a.guard or a.src in local for _, a in drv):
                    continue
                for o, a in drv:
                    body.remove(o)
                    hoisted += C.parse_ops(C.assign_text("      ", a.dst, a.src, a.ty))
        if hoisted:
            k = next((i for i, o in enumerate(comp.wires.ops) if o.name == "calyx.group"),
                     len(comp.wires.ops))
            comp.wires.ops[k:k] = hoisted
    return C.print_module(top)


def run(module) -> None:
    C.replace_module(module, rewrite(str(module)))
