"""pycde-accel-drop-returned-buffers: destination-passing style after bufferization.

One-shot bufferization of ``f(..., %out: tensor) -> tensor`` (which returns ``%out`` updated)
gives ``f(..., %out: memref) -> memref`` that returns its own argument. MLIR's
drop-equivalent-buffer-results leaves public functions alone, so this pass drops every returned
value that is a function argument, leaving ``f(..., %out: memref) -> ()``: every memref is an
argument (lower-scf-to-calyx and the handshake memory ports need that). A returned value that is
not an argument stays, and the later stages report it.

Before:  func.func @k(%a: memref<4xi8>, %o: memref<4xi8>) -> memref<4xi8> { ... return %o }
After:   func.func @k(%a: memref<4xi8>, %o: memref<4xi8>) { ... return }
"""

from __future__ import annotations

from ._util import ir_of

NAME = "pycde-accel-drop-returned-buffers"


def run(module) -> None:
    ir = ir_of(module)
    ctx = module.context
    for f in list(module.body.operations):
        if f.operation.name != "func.func" or not f.regions[0].blocks:
            continue
        args = list(f.regions[0].blocks[0].arguments)
        ft = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
        keep = None
        for block in f.regions[0].blocks:
            for op in block.operations:
                if op.operation.name != "func.return":
                    continue
                ops = list(op.operands)
                mask = [not (isinstance(v.owner, ir.Block) and any(v == a for a in args))
                        for v in ops]
                keep = mask if keep is None else [k and m for k, m in zip(keep, mask)]
        if keep is None or all(keep):
            continue
        for block in f.regions[0].blocks:
            for op in list(block.operations):
                if op.operation.name != "func.return":
                    continue
                with ir.InsertionPoint(op), op.location:
                    ir.Operation.create("func.return",
                                        operands=[v for v, k in zip(op.operands, keep) if k])
                op.operation.erase()
        results = [t for t, k in zip(ft.results, keep) if k]
        f.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(list(ft.inputs), results, context=ctx), context=ctx)
