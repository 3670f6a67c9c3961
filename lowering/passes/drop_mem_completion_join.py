"""pycde-accel-drop-mem-completion-join: stop each iteration from waiting for its memory.

Rewrite 1 of docs/toolchain.md. handshake-lower-extmem-to-hw joins, per iteration, the loop's control
token with the completion tokens of that iteration's memory accesses (a load's data arrival,
turned into a token by a ``join``, and a store's ``done`` token); the next iteration's control
waits on that join, so a loop runs at most one iteration per memory round trip.

This pass removes the memory completion operands from such joins and sinks them instead; the
loop's control then runs ahead and memory accesses overlap. The value that made the function's
``out0`` mean "all stores done" is gone with it: ``out0`` now means "all accesses issued", and
completion is counted outside the kernel, by counting the store handshakes (``N`` stores for an
``N``-element kernel; see :mod:`pycde_accel.lowering.stream`). The store-done port stays and is
still consumed every time.

A memory completion token is a memory port argument (``argNames`` containing ``_ld`` or ``_st``)
or a fork/join of only such values. Run after handshake-materialize-forks-sinks.

Before:  %d:2 = fork [2] %ld_data   %t = join %d#1   %c = join %ctl, %t, %st_done
After:   %d:2 = fork [2] %ld_data   %t = join %d#1   sink %t   sink %st_done   (%ctl used as %c)
"""

from __future__ import annotations

from ._util import apply_patterns, arg_names, defining_op, ir_of

NAME = "pycde-accel-drop-mem-completion-join"


def run(module) -> None:
    ir = ir_of(module)

    def func_of(op):
        while op is not None and op.name != "handshake.func":
            op = op.parent
        return op

    def is_mem(value, names) -> bool:
        op = defining_op(ir, value)
        if op is None:
            n = ir.BlockArgument(value).arg_number
            return n < len(names) and ("_ld" in names[n] or "_st" in names[n])
        if op.name in ("handshake.fork", "handshake.join"):
            return all(is_mem(v, names) for v in op.operands)
        return False

    def drop(op, rewriter):
        op = op.operation
        names = arg_names(func_of(op))
        ops = list(op.operands)
        mem = [is_mem(v, names) for v in ops]
        if all(mem) or not any(mem):
            return True
        with rewriter.ip, op.location:
            for v, m in zip(ops, mem):
                if m:
                    ir.Operation.create("handshake.sink", operands=[v])
            ctl = [v for v, m in zip(ops, mem) if not m]
            none_t = ir.NoneType.get(op.context)
            if len(ctl) == 1 and ctl[0].type == none_t:
                rewriter.replace_op(op, [ctl[0]])
                return False
            new = ir.Operation.create("handshake.join", results=[op.results[0].type], operands=ctl)
        rewriter.replace_op(op, new)
        return False

    apply_patterns(module, [("handshake.join", drop)])
