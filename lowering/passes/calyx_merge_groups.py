"""pycde-accel-calyx-merge-groups: independent groups that finish together run as one group.

lower-calyx-to-fsm gives each enabled group its own FSM state, so a loop body that reads k
input memories one after the other spends k states on it, and residual_add's two multiplies
run one after the other. This pass merges consecutive enables ``G1; G2`` of a ``calyx.seq`` into
one group when (1) neither reads a cell the other drives and they drive no cell in common
(:func:`._calyx_groups.independent`), and (2) their done signals rise in the same cycle, which
holds for two kinds of group:

* a read of an input memory (``content_en`` = 1, ``write_en`` = 0, done = the memory's
  ``done`` port): the accelerator answers reads that are requested in the same cycle together
  (:func:`..stream.calyx_stream_module`);
* a multiply through ``calyx.std_mult_pipe`` of the same width, its result register's done as
  the group's done (same primitive, same latency);
* a static one-cycle multiply (what pycde-accel-calyx-static-mult makes of one), done by a
  ``calyx.std_not`` of its std_mult_pipe's done: done in its first cycle, as the merged group is.

The merged group holds both groups' assignments and is done when both are
(``calyx.std_and`` of the two done signals).

Transform of the custom-form text through :mod:`._calyx_text` (no Python bindings for calyx ops).

Before:  calyx.group @r0 { ... calyx.group_done %arg_mem_0_done : i1 }
         calyx.group @r1 { ... calyx.group_done %arg_mem_1_done : i1 }
         calyx.seq { calyx.enable @r0  calyx.enable @r1  calyx.enable @w }
After:   %merge_and_0.left, %merge_and_0.right, %merge_and_0.out = calyx.std_and @merge_and_0 : i1, i1, i1
         calyx.group @r0 { ...both... calyx.assign %merge_and_0.left = %arg_mem_0_done : i1
             calyx.assign %merge_and_0.right = %arg_mem_1_done : i1
             calyx.group_done %merge_and_0.out : i1 }
         calyx.seq { calyx.enable @r0  calyx.enable @w }
"""

from __future__ import annotations

from . import _calyx_groups as G
from . import _calyx_text as C

NAME = "pycde-accel-calyx-merge-groups"


def _kind(g: G.Group, cells: dict[str, C.Op]):
    if g.done_value is None:
        return None
    dst = {a.dst: a.src for a in g.assigns if not a.guard}
    first = G.cell_of(g.done_value)
    if first in cells and cells[first].name == "calyx.std_not":
        src = dst.get(f"%{first}.in", "")
        if src.endswith(".done") and src[1:-5] in cells \
                and cells[src[1:-5]].name == "calyx.std_mult_pipe":
            return ("static",)
    mem = G.cell_of(g.done_value)
    if g.done_value == f"%{mem}_done" and dst.get(f"%{mem}_content_en") == "%true" \
            and dst.get(f"%{mem}_write_en") == "%false":
        return ("read",)
    if g.done_value.endswith(".done") and g.done_value[1:-5] in cells:
        pipes = [c for c in g.writes if c in cells and cells[c].name == "calyx.std_mult_pipe"]
        if len(pipes) == 1 and cells[g.done_value[1:-5]].name == "calyx.register":
            return ("mult", tuple(C.cell_types(cells[pipes[0]])))
    return None


def rewrite(text: str) -> str:
    top = C.parse(text)
    for comp_op in [op for op in top.walk_ops() if op.name == "calyx.component"]:
        comp = C.component(comp_op)
        body = comp_op.regions[0]
        cells = {c.sym: c for c in comp.cells()}
        n_and = sum(1 for c in cells if c.startswith("merge_and_"))
        kinds: dict[str, tuple] = {}
        for seq in G.seqs(comp):
            ops = seq.regions[0].ops
            i = 0
            while i + 1 < len(ops):
                a, b = ops[i], ops[i + 1]
                if a.name != "calyx.enable" or b.name != "calyx.enable":
                    i += 1
                    continue
                groups = G.groups_of(comp)
                ga, gb = groups[a.sym], groups[b.sym]
                # a merged group keeps the kind of its parts (its done is now the and's out)
                ka = kinds.get(ga.name) or _kind(ga, cells)
                kb = _kind(gb, cells)
                if ka is None or ka != kb or not G.independent(ga, gb):
                    i += 1
                    continue
                nm = f"merge_and_{n_and}"
                n_and += 1
                cell = C.parse_ops(f"    %{nm}.left, %{nm}.right, %{nm}.out = "
                                   f"calyx.std_and @{nm} : i1, i1, i1\n")[0]
                body.ops.insert(next(j for j, o in enumerate(body.ops) if o.name == "calyx.wires"),
                                cell)
                cells[nm] = cell
                ind = ga.done.head[0].ws
                a_ops = ga.op.regions[0].ops
                b_ops = [o for o in gb.op.regions[0].ops if o.name != "calyx.group_done"]
                # values local to G2 (e.g. a comb.xor guard) get names G1 does not use
                local = {r: f"%{gb.name}_{r[1:].replace('#', '_')}" for o in b_ops for r in o.results}
                for o in b_ops:
                    o.rename(local)
                done_ops = C.parse_ops(
                    C.assign_text(ind, f"%{nm}.left", ga.done_value, "i1")
                    + C.assign_text(ind, f"%{nm}.right", local.get(gb.done_value, gb.done_value),
                                    "i1")
                    + f"{ind}calyx.group_done %{nm}.out : i1\n")
                a_ops[:] = [o for o in a_ops if o.name != "calyx.group_done"] + b_ops + done_ops
                kinds[ga.name] = ka
                comp.wires.ops.remove(gb.op)
                del ops[i + 1]
    return C.print_module(top)


def run(module) -> None:
    C.replace_module(module, rewrite(str(module)))
