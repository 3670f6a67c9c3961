"""pycde-accel-calyx-drop-ref-wrapper: the kernel's component becomes the top, no memory wrapper.

lower-scf-to-calyx emits a ``@main`` component that owns the memories (``seq_mem ... {external
= true}``) and only invokes the kernel's component, passing them by reference
(``calyx.invoke @k_instance[arg_mem_0 = mem_0, ...]``); the kernel's component holds its own
``seq_mem @arg_mem_K`` cells that the reference binds. lower-calyx-to-hw lowers neither
``calyx.instance`` nor the by-reference binding, and the memories are to be the accelerator's
(pycde-accel-calyx-mem-ports turns them into ports), so the wrapper goes and the kernel's
component is the top (``{toplevel}``, ``calyx.entrypoint``). A module that holds one component
only (a model's module split per kernel) gets that component as its entry point.

Transform of the custom-form text through :mod:`._calyx_text` (there are no Python bindings for
calyx ops in this CIRCT; see that module for the parser).

Before:  module attributes {calyx.entrypoint = "main"} {
           calyx.component @main(...) { seq_mem @mem_0 {external = true}; instance @k_instance of @k
             ... control { seq { invoke @k_instance[arg_mem_0 = mem_0]() -> () } } } {toplevel}
           calyx.component @k(...) { ... } }
After:   module attributes {calyx.entrypoint = "k"} {
           calyx.component @k(...) { ... } {toplevel} }
"""

from __future__ import annotations

from . import _calyx_text as C

NAME = "pycde-accel-calyx-drop-ref-wrapper"


def _is_wrapper(comp: C.Component) -> str | None:
    """The invoked component's name if ``comp`` holds only external memories and one instance
    that its control invokes once."""
    cells = comp.cells()
    insts = [c for c in cells if c.name == "calyx.instance"]
    others = [c for c in cells if c.name not in ("calyx.instance", "calyx.seq_mem")]
    if len(insts) != 1 or others:
        return None
    invokes = [op for op in comp.control.ops for op in op.walk() if op.name == "calyx.invoke"]
    if len(invokes) != 1 or invokes[0].sym != insts[0].sym:
        return None
    toks = [t.text for t in insts[0].head]
    return toks[toks.index("of") + 1][1:]


def rewrite(text: str) -> str:
    top = C.parse(text)
    mod = next(op for op in top.ops if op.name == "module" or op.name == "builtin.module")
    body = mod.regions[0]
    comps = {c.name: c for c in (C.component(op) for op in body.find("calyx.component"))}
    for name, comp in list(comps.items()):
        inner = _is_wrapper(comp)
        if inner is None or inner not in comps:
            continue
        body.ops.remove(comp.op)
        _set_top(comps[inner].op)
        _set_entry(mod, inner)
    if len(body.find("calyx.component")) == 1:
        # one component left (also a module split per kernel): it is the entry point
        only = C.component(body.find("calyx.component")[0])
        _set_top(only.op)
        _set_entry(mod, only.name)
    return C.print_module(top)


def _set_entry(mod: C.Op, name: str) -> None:
    head = mod.head
    for i, t in enumerate(head):
        if t.text == "calyx.entrypoint" and head[i + 1].text == "=":
            head[i + 2].text = f'"{name}"'


def _set_top(op: C.Op) -> None:
    tail = op.parts[-1]
    if not any(t.text == "toplevel" for t in tail):
        nl = [t for t in tail if t.kind == "nl"]
        rest = [t for t in tail if t.kind != "nl"]
        op.parts[-1] = rest + C.tokenize(" {toplevel}")[:-1] + nl


def run(module) -> None:
    C.replace_module(module, rewrite(str(module)))
