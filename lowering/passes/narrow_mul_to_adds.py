"""pycde-accel-narrow-mul-to-adds: a multiply of two sign-extended narrow values as shifts and adds.

On the calyx route every ``arith.muli`` becomes a ``calyx.std_mult_pipe`` group, one FSM state
(pycde-accel-calyx-static-mult), and multiplies that depend on each other cost a state each:
mul_requantize's int8 x int8 product feeding SRDHM's multiply makes its loop body five states.
Calyx has no combinational multiplier (an assignment's source must be a port), but a product
of a ``v``-bit signed value is ``v`` shifted copies of the other operand, selected by its bits:
``x * y = sum_{k<v-1} y_k (x << k) - y_{v-1} (x << (v-1))`` (two's complement), exact in any
width. This pass rewrites ``arith.muli(extsi(a), extsi(b))`` with ``a``, ``b`` of at most
``max-bits`` bits (option, default 8) that way, before lower-scf-to-calyx; the adds become
combinational cells of the group that uses the product, and the multiply group goes.

Works on the IR through the Python bindings (arith ops created by name with Operation.create).

Before:  %x = arith.extsi %a : i8 to i32   %y = arith.extsi %b : i8 to i32
         %p = arith.muli %x, %y : i32
After:   %m0 = arith.andi %y, %c1 : i32   %s0 = arith.cmpi ne, %m0, %c0 : i32
         %t0 = arith.select %s0, %x, %c0 : i32          (and so on for bits 1..6 of %y, x << k)
         %m7 = arith.andi %y, %c128 ...  %t7 = arith.select %s7, %x7, %c0 : i32
         %p = arith.subi (t0 + ... + t6), %t7 : i32
"""

from __future__ import annotations

from ._util import defining_op, ir_of, walk_ops

NAME = "pycde-accel-narrow-mul-to-adds"


def _width(ty) -> int:
    return int(str(ty)[1:])


def _narrow(ir, value, limit: int) -> int | None:
    """Bits of the signed value that ``value`` sign-extends, if at most ``limit``."""
    op = defining_op(ir, value)
    if op is None or op.name != "arith.extsi":
        return None
    w = _width(op.operands[0].type)
    return w if w <= limit else None


def run(module, **opts) -> None:
    limit = int(opts.get("max-bits", 8))
    ir = ir_of(module)
    with module.context:
        for op in walk_ops(module.operation):
            if op.name != "arith.muli" or not str(op.results[0].type).startswith("i"):
                continue
            x, y = op.operands[0], op.operands[1]
            wx, wy = _narrow(ir, x, limit), _narrow(ir, y, limit)
            if wx is None or wy is None:
                continue
            if wx < wy:  # select over the narrower operand's bits
                x, y, wx, wy = y, x, wy, wx
            ty = op.results[0].type
            loc = op.location

            def mk(name, operands, attrs=None, rty=ty):
                return ir.Operation.create(name, results=[rty], operands=operands,
                                           attributes=attrs or {}, loc=loc).result

            def const(v):
                return mk("arith.constant", [], {"value": ir.IntegerAttr.get(ty, v)})

            i1 = ir.IntegerType.get_signless(1)
            ne = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)  # arith.cmpi "ne"
            with ir.InsertionPoint(op):
                zero = const(0)
                terms = []
                for k in range(wy):
                    bit = mk("arith.andi", [y, const(1 << k)])
                    sel = mk("arith.cmpi", [bit, zero], {"predicate": ne}, rty=i1)
                    shifted = x if k == 0 else mk("arith.shli", [x, const(k)])
                    terms.append(mk("arith.select", [sel, shifted, zero]))
                acc = zero if wy == 1 else terms[0]
                for t in terms[1:-1]:
                    acc = mk("arith.addi", [acc, t])
                acc = mk("arith.subi", [acc, terms[-1]])
            op.results[0].replace_all_uses_with(acc)
            op.erase()
