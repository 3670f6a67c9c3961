"""pycde-accel-backedge-buffers: one 1-slot seq buffer on each loop-header mux's back edge.

Rewrite 3 of docs/toolchain.md (used instead of handshake-insert-buffers). lower-cf-to-handshake makes a
``mux`` per loop-carried value in the loop header, selected by a ``buffer ... {initValues}`` of
the loop condition: input 0 is the value entering the loop, input 1 the value coming back
around. A cycle of handshake units with no register in it cannot be lowered to hardware (a
combinational loop) and a deep buffer in it lowers throughput; one ``seq`` slot on the back
edge cuts the cycle and lets a new iteration enter every clock.

Before:  %m = mux %sel [%init, %next] : i1, index
After:   %b = buffer [1] seq %next : index     %m = mux %sel [%init, %b] : i1, index
"""

from __future__ import annotations

from ._util import apply_patterns, defining_op, ir_of, is_buffer, recreate, seq_buffer

NAME = "pycde-accel-backedge-buffers"


def run(module) -> None:
    ir = ir_of(module)

    def header_select(value) -> bool:
        op = defining_op(ir, value)
        while op is not None and op.name == "handshake.fork":
            op = defining_op(ir, op.operands[0])
        return op is not None and op.name == "handshake.buffer" and "initValues" in op.attributes

    def buffer_backedge(op, rewriter):
        op = op.operation
        ops = list(op.operands)
        if len(ops) != 3 or not header_select(ops[0]) or is_buffer(ir, ops[2]):
            return True
        with rewriter.ip, op.location:
            ops[2] = seq_buffer(ir, ops[2])
        recreate(ir, rewriter, op, ops)
        return False

    apply_patterns(module, [("handshake.mux", buffer_backedge)])
