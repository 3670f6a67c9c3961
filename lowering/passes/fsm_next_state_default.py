"""pycde-accel-fsm-next-state-default: the FSM's ``always_comb`` case gets a default branch.

convert-fsm-to-sv (pycde 0.12.1's CIRCT) lowers an ``fsm.machine`` to an ``sv.alwayscomb``
holding an ``sv.case`` over the state register with a ``default`` whose block is empty. Two
things go wrong with it: Yosys infers a latch for ``state_next`` and for each output
(``Latch inferred for ... state_next from always_comb``), and the module's printed form does not
parse back (an empty block prints as ``{ }``, which parses as a region with no block, and an
``sv.case`` region needs one). This pass gives the default a block that
keeps the state (``state_next = state``) and drives every other destination the cases assign to
0, so each is assigned on every path.

Works on the IR through the Python bindings (sv ops are created by name with
``Operation.create``; the sv dialect is registered in pycde's context), no text rewriting.

Before:  sv.alwayscomb { sv.case %state : ... case A: { sv.bpassign %next, %B ... } default: { } }
After:   sv.alwayscomb { sv.case %state : ... case A: { ... } default: {
             sv.bpassign %next, %state   sv.bpassign %out0, %c0 ... } }
"""

from __future__ import annotations

from ._util import ir_of, walk_ops

NAME = "pycde-accel-fsm-next-state-default"


def _inner_type(ir, inout_type):
    from pycde.circt.dialects import hw
    return hw.InOutType(inout_type).element_type


def run(module) -> None:
    ir = ir_of(module)
    with module.context, ir.Location.unknown():
        for op in walk_ops(module.operation):
            if op.name != "sv.case" or op.parent.name != "sv.alwayscomb":
                continue
            regions = list(op.regions)
            empty = [r for r in regions
                     if len(r.blocks) == 0 or len(list(r.blocks[0].operations)) == 0]
            if not empty:
                continue
            state = op.operands[0]
            dests, seen = [], set()
            for r in regions:
                for blk in r.blocks:
                    for a in blk.operations:
                        if a.operation.name == "sv.bpassign":
                            d = a.operation.operands[0]
                            key = d.get_name() if hasattr(d, "get_name") else str(d)
                            if key not in seen:
                                seen.add(key)
                                dests.append(d)
            always = op.parent
            for r in empty:
                blk = r.blocks[0] if len(r.blocks) else r.blocks.append()
                with ir.InsertionPoint(blk):
                    for d in dests:
                        ty = _inner_type(ir, d.type)
                        if ty == state.type:
                            src = state
                        else:
                            with ir.InsertionPoint(always):
                                src = ir.Operation.create(
                                    "hw.constant", results=[ty],
                                    attributes={"value": ir.IntegerAttr.get(ty, 0)}).result
                        ir.Operation.create("sv.bpassign", operands=[d, src])
