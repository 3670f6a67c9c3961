"""pycde-accel-calyx-wire-clk-reset: every cell's clk and reset driven from the component's.

In place of CIRCT's calyx-clk-insertion and calyx-reset-insertion (not registered in pycde
0.12.1's CIRCT). Without them lower-calyx-to-hw leaves each register's clock and reset
undriven, and the SV clocks them by ``1'bz``. For each cell with a ``clk`` (``reset``) port that
no assignment drives, a continuous ``calyx.assign`` from the component's ``{clk}``
(``{reset}``) input is added to ``calyx.wires``.

Transform of the custom-form text through :mod:`._calyx_text` (no Python bindings for calyx ops).

Before:  %r.in, %r.write_en, %r.clk, %r.reset, %r.out, %r.done = calyx.register @r : ...
         calyx.wires { ... }
After:   calyx.wires { calyx.assign %r.clk = %clk : i1  calyx.assign %r.reset = %reset : i1 ... }
"""

from __future__ import annotations

from . import _calyx_text as C

NAME = "pycde-accel-calyx-wire-clk-reset"


def rewrite(text: str) -> str:
    top = C.parse(text)
    for comp_op in [op for op in top.walk_ops() if op.name == "calyx.component"]:
        comp = C.component(comp_op)
        src = {}
        for p in comp.inputs:
            for role in ("clk", "reset"):
                if p.attrs.strip("{} ") == role:
                    src[role] = f"%{p.name}"
        driven = {C.parse_assign(o).dst for o in comp.wires.walk_ops() if o.name == "calyx.assign"}
        ind = comp.wires.ops[0].head[0].ws if comp.wires.ops else "      "
        text_ = ""
        for cell in comp.cells():
            for port, ssa in C.cell_ports(cell).items():
                if port in src and ssa not in driven:
                    text_ += C.assign_text(ind, ssa, src[port], "i1")
        if text_:
            comp.wires.ops[0:0] = C.parse_ops(text_)
    return C.print_module(top)


def run(module) -> None:
    C.replace_module(module, rewrite(str(module)))
