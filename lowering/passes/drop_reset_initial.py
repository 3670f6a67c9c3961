"""pycde-accel-drop-reset-initial: no ``initial`` value on a register that has a reset.

convert-fsm-to-core gives the FSM's state register both a reset value and a ``seq.initial``
with the same value. lower-seq-to-sv prints the latter as a declaration initializer
(``reg [2:0] state_reg = 3'h0;``) next to the reset in ``always_ff``, which Verilator -Wall
reports (PROCASSINIT) and which no other register of the design has. The reset already defines
the value, so the initial value is removed (and the then unused ``seq.initial``).

Works on the IR through the Python bindings (``seq.compreg`` recreated with
``Operation.create``, its operand segments without the initial value).

Before:  %0 = seq.initial() { ... }   %r = seq.compreg %d, %clk reset %rst, %c0 initial %0 : i3
After:   %r = seq.compreg %d, %clk reset %rst, %c0 : i3
"""

from __future__ import annotations

from ._util import attrs_of, ir_of, walk_ops

NAME = "pycde-accel-drop-reset-initial"


def run(module) -> None:
    ir = ir_of(module)
    with module.context:
        for op in walk_ops(module.operation):
            if op.name != "seq.compreg" or len(op.operands) != 5:
                continue  # input, clk, reset, reset value, initial value: all five present
            init = op.operands[4].owner
            attrs = attrs_of(op)
            attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([1, 1, 1, 1, 0])
            with ir.InsertionPoint(op), op.location:
                new = ir.Operation.create(op.name, results=[r.type for r in op.results],
                                          operands=list(op.operands)[:4], attributes=attrs)
            op.result.replace_all_uses_with(new.result)
            op.erase()
            init_op = getattr(init, "operation", init)
            if init_op.name == "seq.initial" and not list(init_op.results[0].uses):
                init_op.erase()
