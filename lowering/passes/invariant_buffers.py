"""pycde-accel-invariant-buffers{slots=N}: decouple loop-invariant inputs from the datapath.

A fifth rewrite, beyond the four of docs/toolchain.md (which were measured on a kernel with constants only).
A scalar kernel input (requantize's ``m0``, ``shift``) is carried around the loop unchanged:
header ``mux`` -> ``cond_br`` -> ``fork`` with one output back to the mux and the others into
the body. A fork takes its next token only when all outputs were taken, and the body takes its
copy only when the iteration's loaded data arrived, so the invariant - and with it the loop -
advanced once per memory round trip (0.2 elements/cycle measured). ``N`` seq slots on each body
output of such a fork let the invariant run ahead like the loop index does.

Before:  %v:3 = fork [3] %cb_true   (%v#0 -> buffer -> header mux; %v#1, %v#2 -> arith)
After:   %b1 = buffer [N] seq %v#1   %b2 = buffer [N] seq %v#2   (arith uses %b1, %b2)
Run after pycde-accel-backedge-buffers.
"""

from __future__ import annotations

from ._util import apply_patterns, defining_op, ir_of, is_buffer, seq_buffer

NAME = "pycde-accel-invariant-buffers"


def run(module, slots: int | str = 4) -> None:
    ir = ir_of(module)
    slots = int(slots)

    def through(value, names=("handshake.fork", "handshake.buffer")):
        op = defining_op(ir, value)
        while op is not None and op.name in names:
            value = op.operands[0]
            op = defining_op(ir, value)
        return op

    def single_user(value):
        uses = list(value.uses)
        if len(uses) != 1:
            return None
        o = uses[0].owner
        return getattr(o, "operation", o)

    def invariant_fork(fork) -> int | None:
        """Index of the output that goes back to a header mux carrying the fork's own value."""
        if fork.operands[0].type == ir.NoneType.get(fork.context):
            return None  # the control token: its body uses are ordered by the memory ops
        cb = defining_op(ir, fork.operands[0])
        if cb is None or cb.name != "handshake.cond_br":
            return None
        for i, r in enumerate(fork.results):
            user = single_user(r)
            if user is not None and user.name == "handshake.buffer":
                user = single_user(user.results[0])
            if user is None or user.name != "handshake.mux" or len(user.operands) != 3:
                continue
            if through(cb.operands[1], ("handshake.fork",)) == user:
                return i
        return None

    def buffer_body_uses(op, rewriter):
        op = op.operation
        back = invariant_fork(op)
        if back is None:
            return True
        changed = False
        for i, r in enumerate(op.results):
            user = single_user(r)
            if i == back or user is None or user.name == "handshake.buffer":
                continue
            with rewriter.ip, op.location:
                b = seq_buffer(ir, r, slots)
            r.replace_all_uses_except(b, defining_op(ir, b))
            changed = True
        return not changed

    apply_patterns(module, [("handshake.fork", buffer_body_uses)])
