"""pycde-accel-calyx-fold-mult: a one-cycle multiply starts in the last cycle of the group before it.

After pycde-accel-calyx-static-mult (and -calyx-merge-groups) a multiply is a group of one cycle:
it raises its ``std_mult_pipe``'s ``go``, the multiplier captures ``left * right`` on that
cycle's edge, and readers take the product from the multiplier's ``out`` from the next cycle on.
Its FSM state still costs a cycle per loop iteration. When the operands it feeds the multiplier
already hold their values in the last cycle of the group enabled before it (that group's done
cycle), the multiplier can be started there: this pass moves the multiply group's assignments
(operands and the combinational cells computing them) into the previous group, raises each
multiplier's ``go`` guarded by the previous group's done signal, and drops the multiply group
from the schedule. The product is then in ``out`` from the cycle after the previous group ends,
the cycle the multiply group used to start in: one state less, the same arithmetic, and the
multiplier's input path is the same (operands -> multiplier -> ``out``), so Fmax does not drop.

It applies to consecutive enables ``P; M`` of a ``calyx.seq``, each enabled once, when

* ``M`` is a static multiply group: its done is a ``calyx.std_not`` of a multiplier's ``done``
  (or a ``calyx.std_and`` tree of such, merged multiplies), every multiplier it drives is one of
  those, and it drives no other sequential cell nor memory port;
* ``P``'s done is one unguarded value; ``M`` drives nothing ``P`` reads or drives; ``M`` reads
  no cell ``P`` drives (a register ``P`` writes would change on that very edge), except an input
  memory that ``P`` reads (``content_en`` 1, ``write_en`` 0) with its ``done`` among the terms of
  ``P``'s done: a seq_mem's ``read_data`` is valid in the cycle its ``done`` is high (the
  streaming wrapper, :func:`..stream.calyx_stream_module`, passes the beat through in that
  cycle);
* no continuous assignment reads ``M``'s multipliers, and the ``std_not``/``std_and`` cells of
  ``M``'s done are used by ``M`` only (they go with it).

A multiplier's ``done`` is then low in ``P``'s done cycle: it is high only in the cycle after its
``go``, and its only ``go`` is ``P``'s done cycle one iteration earlier.

Transform of the custom-form text through :mod:`._calyx_text` (no Python bindings for calyx ops).

Before:  calyx.group @r { ... calyx.assign %arg_mem_0_content_en = %true : i1 ...
             calyx.group_done %arg_mem_0_done : i1 }
         calyx.group @m { calyx.assign %mul.left = %arg_mem_0_read_data : i32
             calyx.assign %mul.right = %in1 : i32  %0 = comb.xor %mul.done, %true : i1
             calyx.assign %mul.go = %0 ? %true : i1  calyx.assign %m_first.in = %mul.done : i1
             calyx.group_done %m_first.out : i1 }
         calyx.seq { calyx.enable @r  calyx.enable @m  calyx.enable @w }
After:   calyx.group @r { ... calyx.assign %mul.left = %arg_mem_0_read_data : i32
             calyx.assign %mul.right = %in1 : i32
             calyx.assign %mul.go = %arg_mem_0_done ? %true : i1
             calyx.group_done %arg_mem_0_done : i1 }
         calyx.seq { calyx.enable @r  calyx.enable @w }        (@m and %m_first gone)
"""

from __future__ import annotations

from . import _calyx_groups as G
from . import _calyx_text as C

NAME = "pycde-accel-calyx-fold-mult"


def _and_leaves(g: G.Group, value: str, cells: dict[str, C.Op], aux: set[str]) -> list[str] | None:
    """The values ``value`` is the ``std_and`` of (through std_and cells ``g`` drives); the
    std_and cells walked are added to ``aux``. None if an input is guarded or undriven."""
    c = G.cell_of(value)
    if not (c in cells and cells[c].name == "calyx.std_and" and value == f"%{c}.out"):
        return [value]
    dst = {a.dst: a for a in g.assigns}
    out = []
    for port in ("left", "right"):
        a = dst.get(f"%{c}.{port}")
        if a is None or a.guard:
            return None
        sub = _and_leaves(g, a.src, cells, aux)
        if sub is None:
            return None
        out += sub
    aux.add(c)
    return out


def _static_mult(g: G.Group, cells: dict[str, C.Op]):
    """(multipliers, done cells) when ``g`` is a one-cycle multiply group, else None."""
    if g.done_value is None:
        return None
    aux: set[str] = set()
    leaves = _and_leaves(g, g.done_value, cells, aux)
    if not leaves:
        return None
    dst = {a.dst: a for a in g.assigns}
    pipes = []
    for v in leaves:
        c = G.cell_of(v)
        a = dst.get(f"%{c}.in")
        if not (c in cells and cells[c].name == "calyx.std_not" and v == f"%{c}.out") \
                or a is None or a.guard or not a.src.endswith(".done"):
            return None
        pipe = a.src[1:-5]
        if pipe not in cells or cells[pipe].name != "calyx.std_mult_pipe":
            return None
        aux.add(c)
        pipes.append(pipe)
    for c in g.writes:
        if c not in cells:  # a memory or component port
            return None
        if c not in pipes and "clk" in C.cell_ports(cells[c]):
            return None
    if {c for c in g.writes if cells[c].name == "calyx.std_mult_pipe"} != set(pipes):
        return None
    return pipes, aux


def _reads_memory(p: G.Group, mem: str, cells: dict[str, C.Op]) -> bool:
    """``p`` reads input memory ``mem`` and is done only when that read is."""
    dst = {a.dst: a for a in p.assigns}
    en, we = dst.get(f"%{mem}_content_en"), dst.get(f"%{mem}_write_en")
    if en is None or we is None or en.guard or we.guard or en.src != "%true" or we.src != "%false":
        return False
    leaves = _and_leaves(p, p.done_value, cells, set()) or []
    return f"%{mem}_done" in leaves


def _enable_count(comp: C.Component, name: str) -> int:
    return sum(1 for o in comp.control.walk_ops() if o.name == "calyx.enable" and o.sym == name)


def _foldable(comp: C.Component, p: G.Group, m: G.Group, cells: dict[str, C.Op], text: str):
    found = _static_mult(m, cells)
    if found is None or p.done_value is None:
        return None
    pipes, aux = found
    if _enable_count(comp, p.name) != 1 or _enable_count(comp, m.name) != 1:
        return None
    if m.writes & (p.reads | p.writes):
        return None
    for c in m.reads & p.writes:
        if c in cells or not c.startswith("arg_mem_") or not _reads_memory(p, c, cells):
            return None
    continuous = [C.parse_assign(o) for o in comp.wires.ops if o.name == "calyx.assign"]
    if any(G.cell_of(a.src) in pipes or any(G.cell_of(t.text) in pipes for t in a.guard
                                            if t.kind == "ssa") for a in continuous):
        return None
    others = "".join(o.text() for o in comp.wires.ops if o is not m.op)
    if any(f"%{c}." in others for c in aux):
        return None
    if "%true = hw.constant true" not in text:
        return None
    return pipes, aux


def rewrite(text: str) -> str:
    top = C.parse(text)
    for comp_op in [op for op in top.walk_ops() if op.name == "calyx.component"]:
        comp = C.component(comp_op)
        cells = {c.sym: c for c in comp.cells()}
        for seq in G.seqs(comp):
            ops = seq.regions[0].ops
            i = 0
            while i + 1 < len(ops):
                a, b = ops[i], ops[i + 1]
                if a.name != "calyx.enable" or b.name != "calyx.enable":
                    i += 1
                    continue
                groups = G.groups_of(comp)
                p, m = groups[a.sym], groups[b.sym]
                found = _foldable(comp, p, m, cells, text)
                if found is None:
                    i += 1
                    continue
                pipes, aux = found
                moved = []
                for o in m.op.regions[0].ops:
                    if o.name == "calyx.group_done":
                        continue
                    if o.name == "calyx.assign":
                        d = C.parse_assign(o).dst
                        if G.cell_of(d) in aux or d in {f"%{q}.go" for q in pipes}:
                            continue
                    moved.append(o)
                # drop what only fed the dropped assignments (the `not done` of go's guard)
                while True:
                    used = {u for o in moved for u in o.uses()}
                    keep = [o for o in moved if o.name == "calyx.assign"
                            or any(r in used for r in o.results)]
                    if len(keep) == len(moved):
                        break
                    moved = keep
                # values local to M get names P does not use
                local = {r: f"%{m.name}_{r[1:].replace('#', '_')}" for o in moved for r in o.results}
                for o in moved:
                    o.rename(local)
                ind = p.done.head[0].ws
                go = "".join(C.assign_text(ind, f"%{q}.go", "%true", "i1", guard=p.done_value)
                             for q in pipes)
                body = p.op.regions[0].ops
                k = body.index(p.done)
                body[k:k] = moved + C.parse_ops(go)
                comp.wires.ops.remove(m.op)
                for c in aux:
                    comp_op.regions[0].ops.remove(cells.pop(c))
                del ops[i + 1]
    return C.print_module(top)


def run(module) -> None:
    C.replace_module(module, rewrite(str(module)))
