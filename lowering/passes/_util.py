"""Helpers shared by the project's passes (either MLIR: the module says which)."""

from __future__ import annotations


def ir_of(module):
    """The ``ir`` bindings module that ``module`` belongs to (torch-mlir's or pycde's)."""
    if type(module).__module__.startswith("torch_mlir"):
        from torch_mlir import ir
    else:
        from pycde.circt import ir
    return ir


def rewrite_of(module):
    if type(module).__module__.startswith("torch_mlir"):
        from torch_mlir import rewrite
    else:
        from pycde.circt import rewrite
    return rewrite


def walk_ops(op):
    """All operations nested in ``op`` (pre-order), as a list (safe to mutate after)."""
    out = []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                out.append(inner.operation)
                out.extend(walk_ops(inner.operation))
    return out


def apply_patterns(module, patterns: list[tuple[str, object]]) -> None:
    """Apply (root op name, callback) patterns with MLIR's walk-based driver (no folding).

    A callback gets (op, rewriter) and returns a falsy value when it rewrote the op.
    """
    rw = rewrite_of(module)
    with module.context:
        rps = rw.RewritePatternSet()
        for root, fn in patterns:
            rps.add(root, fn)
        rw.walk_and_apply_patterns(module.operation, rps.freeze())


def defining_op(ir, value):
    """The op defining ``value``, or None for a block argument."""
    if isinstance(value.owner, ir.Block):
        return None
    return value.owner.operation if hasattr(value.owner, "operation") else value.owner


def attrs_of(op) -> dict:
    """An op's attributes as a dict (iteration yields names or NamedAttributes by version)."""
    out = {}
    for a in op.attributes:
        if isinstance(a, str):
            out[a] = op.attributes[a]
        else:
            out[a.name] = a.attr
    return out


def recreate(ir, rewriter, op, operands):
    """A copy of ``op`` (same name, result types, attributes) with new operands; replaces it."""
    with rewriter.ip, op.location:
        new = ir.Operation.create(op.name, results=[r.type for r in op.results],
                                  operands=list(operands),
                                  attributes=attrs_of(op))
    rewriter.replace_op(op, new)
    return new


def seq_buffer(ir, value, slots: int = 1):
    """A ``handshake.buffer [slots] seq`` of ``value`` at the current insertion point."""
    ctx = value.context
    return ir.Operation.create(
        "handshake.buffer", results=[value.type], operands=[value],
        attributes={"bufferType": ir.Attribute.parse("#handshake<buffer_type_enum seq>", ctx),
                    "slots": ir.IntegerAttr.get(ir.IntegerType.get_signless(32, ctx), slots)},
    ).result


def is_buffer(ir, value) -> bool:
    op = defining_op(ir, value)
    return op is not None and op.name == "handshake.buffer"


def arg_names(func_op) -> list[str]:
    if "argNames" not in func_op.attributes:
        return []
    return [str(a).strip('"') for a in func_op.attributes["argNames"]]
