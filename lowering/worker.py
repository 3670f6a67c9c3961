"""Run one stage's pass pipeline in its own process: ``python -m pycde_accel.lowering.worker``.

A C++ abort inside a pass takes down only this process. The parent (:mod:`.pipeline`) reads
the markers this worker prints on stderr to name the pass that failed:

    @@pass <pass>        before each top-level pass
    @@error <message>    a pass (or the parse) failed with a diagnostic; exit status 3

Usage (this is also the reproduction command saved next to a failed stage):

    python -m pycde_accel.lowering.worker --mlir circt --pipeline 'P1,P2' IN.mlir OUT.mlir
        [--generic-out OUT.generic.mlir] [--sv OUT.sv]

The pipeline is a comma-separated list of top-level passes, as in ``builtin.module(...)``.
Names in :data:`pycde_accel.lowering.passes.REGISTRY` are the project's own passes (Python);
``export-verilog`` writes SystemVerilog to ``--sv``; ``pycde-accel-per-top(P1,P2,...)`` runs
its inner passes on each top-level function alone (a copy of the module holding only that
function) and puts the results back into one module, in order: for passes that accept one top
only (lower-handshake-to-hw), when a module holds several kernels (a model's post-ops); all
others go to MLIR's PassManager.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def split_pipeline(pipeline: str) -> list[str]:
    """Split at top-level commas (not inside ``{}`` or ``()``)."""
    out, depth, cur = [], 0, []
    for ch in pipeline:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return [p for p in out if p]


def _marker(kind: str, text: str) -> None:
    text = " ".join(str(text).split())
    sys.stderr.write(f"@@{kind} {text}\n")
    sys.stderr.flush()


def run(mlir: str, pipeline: str, src: Path, dst: Path, generic_out: Path | None,
        sv: Path | None) -> int:
    from . import bridge

    ir, pm, _ = bridge.bindings(mlir)
    ctx = bridge.context(mlir)
    _marker("pass", "<parse>")
    try:
        module = ir.Module.parse(src.read_text(), ctx)
    except Exception as e:  # noqa: BLE001
        _marker("error", e)
        return 3
    try:
        module = _run_passes(ir, pm, ctx, module, split_pipeline(pipeline), sv)
    except Exception as e:  # noqa: BLE001
        _marker("error", e)
        return 3
    dst.write_text(str(module))
    if generic_out is not None:
        generic_out.write_text(bridge.generic(module))
    return 0


PER_TOP = "pycde-accel-per-top"
_TOPS = ("func.func", "handshake.func", "calyx.component")


def _run_passes(ir, pm, ctx, module, passes: list[str], sv: Path | None):
    """Run ``passes`` on ``module`` (a pass may replace it: the module is returned)."""
    from .passes import REGISTRY

    for p in passes:
        _marker("pass", p)
        if p.startswith(PER_TOP + "("):
            module = _per_top(ir, pm, ctx, module, split_pipeline(p[p.index("(") + 1:p.rindex(")")]), sv)
        elif p == "export-verilog":
            import pycde.circt as circt
            if sv is None:
                raise ValueError("export-verilog needs --sv")
            with open(sv, "w") as f:
                circt.export_verilog(module, f)
        elif p.split("{")[0] in REGISTRY:
            REGISTRY[p.split("{")[0]].run(module, p)
            module.operation.verify()
        else:
            pm.PassManager.parse(f"builtin.module({p})", ctx).run(module.operation)
    return module


def _sym(op) -> str:
    return str(op.attributes["sym_name"]).strip('"')


def _attrs(module) -> dict[str, str]:
    amap = module.operation.attributes
    return {amap[i].name: str(amap[i].attr) for i in range(len(amap))}


def _per_top(ir, pm, ctx, module, passes: list[str], sv: Path | None):
    text = module.operation.get_asm(print_generic_op_form=True)
    names = [_sym(op.operation) for op in module.body.operations if op.operation.name in _TOPS]
    if len(names) <= 1:
        return _run_passes(ir, pm, ctx, module, passes, sv)
    attrs = _attrs(module)
    bodies, seen = [], set()
    for name in names:
        one = ir.Module.parse(text, ctx)
        for op in list(one.body.operations):
            if op.operation.name in _TOPS and _sym(op.operation) != name:
                op.operation.erase()
        one = _run_passes(ir, pm, ctx, one, passes, sv)
        # a symbol every piece defines (lower-scf-to-calyx's @main wrapper) becomes <top>_<sym>
        for op in list(one.body.operations):
            if "sym_name" not in op.operation.attributes:
                continue
            sym = _sym(op.operation)
            if sym in seen:
                new = f"{name}_{sym}"
                ir.SymbolTable.replace_all_symbol_uses(sym, new, one.operation)
                op.operation.attributes["sym_name"] = ir.StringAttr.get(new, ctx)
                sym = new
            seen.add(sym)
        bodies += [str(op) for op in one.body.operations]
        for k, v in _attrs(one).items():  # module attributes: the first piece's value wins
            attrs.setdefault(k, v)
    _marker("pass", f"{PER_TOP}: merge")
    head = ", ".join(f"{k} = {v}" for k, v in attrs.items())
    merged = ir.Module.parse(f"module attributes {{{head}}} {{\n" + "\n".join(bodies) + "\n}", ctx)
    merged.operation.verify()
    return merged


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pycde_accel.lowering.worker")
    ap.add_argument("--mlir", choices=("torch", "circt"), required=True)
    ap.add_argument("--pipeline", required=True)
    ap.add_argument("--generic-out", type=Path, default=None)
    ap.add_argument("--sv", type=Path, default=None)
    ap.add_argument("input", type=Path)
    ap.add_argument("output", type=Path)
    a = ap.parse_args(argv)
    return run(a.mlir, a.pipeline, a.input, a.output, a.generic_out, a.sv)


if __name__ == "__main__":
    raise SystemExit(main())
