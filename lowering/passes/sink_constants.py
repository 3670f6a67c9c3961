"""pycde-accel-sink-constants: give every block its own copy of the constants it uses.

Rewrite 2 of docs/toolchain.md (constants sourced where used). In cf form the loop bounds and the
linalg body's constants sit in the entry block; lower-cf-to-handshake then carries each one
around the loop as a token through a header mux and a branch, so every iteration waits for it.
With a copy in each using block, ``lower-cf-to-handshake{source-constants}`` drives each from a
``handshake.source`` right there: no loop-carried constants.

Before:  ^bb0: %c = arith.constant 5 : i8   cf.br ^bb1     ^bb1: ... arith.addi %x, %c
After:   ^bb1: %c_1 = arith.constant 5 : i8  ... arith.addi %x, %c_1    (%c gone if unused)
"""

from __future__ import annotations

from ._util import apply_patterns, ir_of

NAME = "pycde-accel-sink-constants"


def run(module) -> None:
    ir = ir_of(module)

    def sink(op, rewriter):
        own = op.operation.block
        uses = [(getattr(u.owner, "operation", u.owner), u.operand_number) for u in op.result.uses]
        foreign = [(o, i) for o, i in uses if o.block != own]
        if not foreign:
            return True  # no match
        copies = []  # (block, copy); Block wrappers compare by ==, not by id()
        for owner, idx in foreign:
            blk = owner.block
            copy = next((c for b, c in copies if b == blk), None)
            if copy is None:  # one copy per block, before the first user in it
                first = next(o.operation for o in blk.operations
                             if any(o.operation == u for u, _ in foreign if u.block == blk))
                copy = op.operation.clone(ir.InsertionPoint(first))
                copies.append((blk, copy))
            owner.operands[idx] = copy.result
        if not list(op.result.uses):
            rewriter.erase_op(op)
        return False

    apply_patterns(module, [("arith.constant", sink)])
