"""pycde-accel-calyx-fold-latch: the loop's induction-variable update rides on the body's last group.

lower-scf-to-calyx ends each while body with ``assign_while_N_latch``, a group that writes the
loop registers (``i = i + 1``) and is done by the register's ``done``, one cycle after the write:
two FSM states per iteration for an increment. This pass moves the latch's assignments into the
group enabled before it, with each register's ``write_en`` guarded by that group's done signal
(so the registers take the new value on the edge where the group ends, and the group's own
reads of them still see the old value), and drops the latch from the schedule. It applies when
the latch writes only registers and combinational cells that the previous group neither drives
nor reads through (:func:`._calyx_groups.independent` with the registers themselves allowed to
be read), and the previous group's done is one unguarded value.

Transform of the custom-form text through :mod:`._calyx_text` (no Python bindings for calyx ops).

Before:  calyx.group @w { ... calyx.group_done %m_done : i1 }
         calyx.group @latch { calyx.assign %i.in = %add.out : i32
             calyx.assign %i.write_en = %true : i1  ...  calyx.group_done %i.done : i1 }
         calyx.seq { ... calyx.enable @w  calyx.enable @latch }
After:   calyx.group @w { ... calyx.assign %i.in = %add.out : i32
             calyx.assign %i.write_en = %m_done ? %true : i1 ... calyx.group_done %m_done : i1 }
         calyx.seq { ... calyx.enable @w }
"""

from __future__ import annotations

from . import _calyx_groups as G
from . import _calyx_text as C

NAME = "pycde-accel-calyx-fold-latch"
_COMB = ("calyx.std_add", "calyx.std_sub", "calyx.std_slice", "calyx.std_pad", "calyx.std_and",
         "calyx.std_or", "calyx.std_xor", "calyx.std_not", "calyx.std_lsh", "calyx.std_rsh")


def rewrite(text: str) -> str:
    top = C.parse(text)
    for comp_op in [op for op in top.walk_ops() if op.name == "calyx.component"]:
        comp = C.component(comp_op)
        cells = {c.sym: c for c in comp.cells()}
        for seq in G.seqs(comp):
            ops = seq.regions[0].ops
            if len(ops) < 2 or ops[-1].name != "calyx.enable" or ops[-2].name != "calyx.enable":
                continue
            groups = G.groups_of(comp)
            latch, prev = groups[ops[-1].sym], groups[ops[-2].sym]
            regs = {c for c in latch.writes if c in cells and cells[c].name == "calyx.register"}
            if not regs or prev.done_value is None or latch.done_value is None \
                    or G.cell_of(latch.done_value) not in regs:
                continue
            if any(c not in cells or (c not in regs and cells[c].name not in _COMB)
                   for c in latch.writes):
                continue
            if latch.writes & prev.writes or (latch.writes - regs) & prev.reads \
                    or prev.writes & latch.reads:
                continue
            ind = prev.done.head[0].ws
            moved = []
            for o in latch.op.regions[0].ops:
                if o.name == "calyx.group_done":
                    continue
                if o.name == "calyx.assign":
                    a = C.parse_assign(o)
                    if a.dst.endswith(".write_en") and G.cell_of(a.dst) in regs:
                        if a.guard or a.src != "%true":
                            break
                        o = C.parse_ops(C.assign_text(ind, a.dst, "%true", "i1",
                                                      guard=prev.done_value))[0]
                moved.append(o)
            else:
                body = prev.op.regions[0].ops
                k = body.index(prev.done)
                body[k:k] = moved
                comp.wires.ops.remove(latch.op)
                del ops[-1]
    return C.print_module(top)


def run(module) -> None:
    C.replace_module(module, rewrite(str(module)))
