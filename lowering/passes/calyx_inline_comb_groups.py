"""pycde-accel-calyx-inline-comb-groups: comb groups become continuous assignments.

In place of CIRCT's calyx-remove-comb-groups (not registered in pycde 0.12.1's CIRCT).
lower-scf-to-calyx puts each loop condition in a ``calyx.comb_group`` used as
``calyx.while %port with @group``; lower-calyx-to-fsm rejects a comb group in the schedule. The
cells a comb group drives are private to it (lower-scf-to-calyx makes one comparator per
condition), so its assignments can hold all the time: they move into ``calyx.wires`` as
continuous assignments and the ``with @group`` goes. A destination that anything else also
drives would get two drivers: the pass refuses that (ValueError) instead of guessing.

Transform of the custom-form text through :mod:`._calyx_text` (no Python bindings for calyx ops).

Before:  calyx.wires { calyx.comb_group @bb0_0 { calyx.assign %lt.left = %i.out : i32 } ... }
         calyx.control { ... calyx.while %lt.out with @bb0_0 { ... } }
After:   calyx.wires { calyx.assign %lt.left = %i.out : i32 ... }
         calyx.control { ... calyx.while %lt.out { ... } }
"""

from __future__ import annotations

from . import _calyx_text as C

NAME = "pycde-accel-calyx-inline-comb-groups"


def _drop_with(op: C.Op, groups: set[str]) -> None:
    head = op.parts[0]
    for i, t in enumerate(head):
        if t.kind == "id" and t.text == "with" and i + 1 < len(head) \
                and head[i + 1].kind == "sym" and head[i + 1].text[1:] in groups:
            del head[i:i + 2]
            return


def rewrite(text: str) -> str:
    top = C.parse(text)
    for comp_op in [op for op in top.walk_ops() if op.name == "calyx.component"]:
        comp = C.component(comp_op)
        combs = comp.wires.find("calyx.comb_group")
        if not combs:
            continue
        names = {g.sym for g in combs}
        moved = [a for g in combs for a in g.regions[0].ops if a.name == "calyx.assign"]
        driven: dict[str, int] = {}
        for op in comp.wires.ops:
            for o in op.walk():
                if o.name == "calyx.assign":
                    dst = C.parse_assign(o).dst
                    driven[dst] = driven.get(dst, 0) + 1
        for a in moved:
            if driven[C.parse_assign(a).dst] > 1:
                raise ValueError(f"comb group destination {C.parse_assign(a).dst} in "
                                 f"@{comp.name} has another driver; cannot inline")
        indent = combs[0].head[0].ws
        keep = [op for op in comp.wires.ops if op.name != "calyx.comb_group"]
        for a in moved:
            a.head[0].ws = indent
        comp.wires.ops[:] = moved + keep
        for op in comp.control.ops:
            for o in op.walk():
                if o.name in ("calyx.while", "calyx.if"):
                    _drop_with(o, names)
    return C.print_module(top)


def run(module) -> None:
    C.replace_module(module, rewrite(str(module)))
