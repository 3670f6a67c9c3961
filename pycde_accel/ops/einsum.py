"""``einsum``: ``torch.einsum`` of two operands whose equation is a (batched) matmul: every
index is a batch index (both operands and the output), a contracted index (both operands, not
the output) or a free index of one operand (and the output); no repeated index in an operand.

Captured as the nodes that compute it, no node of its own: each operand permuted and reshaped
to ``(B, M, K)`` and ``(B, K, N)`` (``transpose`` and ``reshape``: views), one ``matmul`` of two
activations, or a ``linear`` when the second operand is a constant (a parameter: ``W`` is
``(K, N)``, no batch index), then reshaped and permuted to the output's order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .base import Node, register


def _parse(eq: str, n_ops: int):
    eq = eq.replace(" ", "")
    if "->" not in eq or "." in eq:
        return None
    lhs, out = eq.split("->")
    ins = lhs.split(",")
    if len(ins) != n_ops or any(len(set(s)) != len(s) for s in ins + [out]):
        return None
    return ins, out


@register
@dataclass
class Einsum(Node):
    kind: ClassVar[str] = "einsum"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.einsum.default",)
    SUPPORTED: ClassVar[str] = "einsum that is a matmul"
    ORDER: ClassVar[int] = 81

    @classmethod
    def capture(cls, cx, n) -> None:
        eq, operands = n.args[0], list(n.args[1])
        parsed = _parse(eq, len(operands)) if len(operands) == 2 else None
        if parsed is None:
            raise cx.fail(n, f"aten.einsum.default {eq!r} (only two operands, no ellipsis or "
                             f"repeated index)")
        (ia, ib), io = parsed
        a_act, b_act = cx.is_act(operands[0]), cx.is_act(operands[1])
        if not a_act:
            raise cx.fail(n, f"aten.einsum.default {eq!r} with a constant first operand")
        a = cx.act(n, operands[0])
        sa = dict(zip(ia, cx.nodes[a].shape))
        if b_act:
            b = cx.act(n, operands[1])
            sb = dict(zip(ib, cx.nodes[b].shape))
        else:
            w = cx.const(n, operands[1])
            sb = dict(zip(ib, w.shape))
        batch = [i for i in io if i in ia and i in ib]
        contr = [i for i in ia if i in ib and i not in io]
        fa = [i for i in ia if i not in ib]
        fb = [i for i in ib if i not in ia]
        if sorted(batch + fa + fb) != sorted(io) or any(i not in io for i in fa + fb) or \
                any(sa[i] != sb[i] for i in batch + contr):
            raise cx.fail(n, f"aten.einsum.default {eq!r} that is no matmul (or a sum over an "
                             f"index of one operand)")
        if not b_act and batch:
            raise cx.fail(n, f"aten.einsum.default {eq!r} with a constant operand that has a batch index")
        size = lambda ix, s: math.prod(s[i] for i in ix)  # noqa: E731
        B, M, K, N = size(batch, sa), size(fa, sa), size(contr, sa), size(fb, sb)
        add = cx.expander(n)

        def arrange(x, ix, order, shape3):
            perm = tuple(ix.index(i) for i in order)
            if perm != tuple(range(len(ix))):
                x = add("transpose", [x], [cx.nodes[x].shape[p] for p in perm], perm=perm)
            return add("reshape", [x], shape3)

        xa = arrange(a, ia, batch + fa + contr, (B, M, K))
        if b_act:
            xb = arrange(b, ib, batch + contr + fb, (B, K, N))
            y = add("matmul", [xa, xb], (B, M, N))
        else:
            perm = [ib.index(i) for i in contr + fb]
            wkn = np.transpose(w, perm).reshape(K, N)
            y = add("linear", [xa], (B, M, N), weight=np.ascontiguousarray(wkn.T), bias=None)
        shp = dict(sa)
        shp.update(sb)
        mid = batch + fa + fb
        y = add("reshape", [y], [shp[i] for i in mid])
        perm = tuple(mid.index(i) for i in io)
        if perm != tuple(range(len(io))):
            y = add("transpose", [y], [shp[i] for i in io], perm=perm)
        cx.alias[n.name] = y
