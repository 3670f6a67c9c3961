"""pycde-accel-store-input-buffers{slots=N}: seq buffers on each store's address and control.

Rewrite 4 of docs/toolchain.md. A ``handshake.store`` fires when address, data and control tokens are all
there. Address and control arrive early (straight from the loop header), the data late (after
the load and the arithmetic); unbuffered, the early tokens hold back the header until the data
arrives. One slot each lets the header move on to the next iteration.

Before:  %d, %a = store [%addr] %data, %ctl : index, i8
After:   %ab = buffer [1] seq %addr  %cb = buffer [1] seq %ctl  %d, %a = store [%ab] %data, %cb
"""

from __future__ import annotations

from ._util import apply_patterns, ir_of, is_buffer, recreate, seq_buffer

NAME = "pycde-accel-store-input-buffers"


def run(module, slots: int | str = 1) -> None:
    """``slots`` per buffer: 1 reaches 1 element/cycle with a 1-cycle memory; a memory answering
    after L cycles needs about L+1 (the address and control wait that long for the data)."""
    ir = ir_of(module)
    slots = int(slots)

    def buffer_inputs(op, rewriter):
        op = op.operation
        ops = list(op.operands)  # addresses..., data, control
        idx = list(range(len(ops) - 2)) + [len(ops) - 1]
        if all(is_buffer(ir, ops[i]) for i in idx):
            return True
        with rewriter.ip, op.location:
            for i in idx:
                if not is_buffer(ir, ops[i]):
                    ops[i] = seq_buffer(ir, ops[i], slots)
        recreate(ir, rewriter, op, ops)
        return False

    apply_patterns(module, [("handshake.store", buffer_inputs)])
