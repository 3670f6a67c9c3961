"""The bridge between torch-mlir's MLIR and the CIRCT inside pycde (docs/toolchain.md).

* Two MLIR versions: text crosses between them in generic op form only
  (``print_generic_op_form=True``); the pretty form of one may not parse in the other.
* pycde's context registers memref and calyx but loads them only after a pass that depends on
  them ran once in that context; :func:`circt_context` runs such passes on an empty module first,
  so that memref/calyx IR parses.

Both are imported lazily: a worker process loads only the MLIR it runs.
"""

from __future__ import annotations

#: The two MLIRs a stage can run in.
MLIRS = ("torch", "circt")


def bindings(which: str):
    """(ir, passmanager, rewrite) modules of ``which`` MLIR."""
    if which == "torch":
        from torch_mlir import ir, passmanager, rewrite
    elif which == "circt":
        from pycde.circt import ir, passmanager, rewrite
    else:
        raise ValueError(f"unknown MLIR {which!r}; one of {MLIRS}")
    return ir, passmanager, rewrite


def context(which: str):
    """A fresh context of ``which`` MLIR with every dialect the flow needs usable."""
    ir, pm, _ = bindings(which)
    ctx = ir.Context()
    if which == "circt":
        import pycde.circt as circt
        circt.register_dialects(ctx)
        empty = ir.Module.parse("module {}", ctx)
        # Loading happens when the pipeline starts, so a pass that then fails still loads them.
        for warm in ("flatten-memref", "lower-scf-to-calyx"):
            try:
                pm.PassManager.parse(f"builtin.module({warm})", ctx).run(empty.operation)
            except Exception:  # noqa: BLE001 - only the side effect matters
                pass
    return ctx


def generic(module) -> str:
    """Text of ``module`` that the other MLIR version parses."""
    return module.operation.get_asm(print_generic_op_form=True)
