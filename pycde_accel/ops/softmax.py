"""``softmax``: ``softmax(x, dim=-1)`` (``aten.softmax.int``, ``aten._softmax.default``) and
``F.scaled_dot_product_attention`` (``aten.scaled_dot_product_attention.default``: no mask, not
causal, no dropout; ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` export to it).

Softmax is captured as the integer-only chain that computes it, no node of its own (as
``einsum`` is); every step is a node with its own per-tensor scale:

1. ``m = max(x)`` broadcast over the row: ``rowmax`` (exact; one ROWRED, the vector engine's
   row-reduction unit at a beat per cycle -- before it, ``ceil(log2 L)`` steps of a rotation by
   a permutation GEMM and an element-wise max, the same integers);
2. ``t = x - m`` (``sub``, <= 0);
3. ``e = exp(a * t)``: ``lut`` ``exp_scaled`` (``a`` is 1, or the attention's ``1/sqrt(d)``);
   every row has an element with ``t = 0``, ``e = 1``, so ``e`` uses the whole int8 range;
4. ``s = sum(e)`` broadcast over the row: ``rowmix`` sum (exact integer row sum, requantized;
   one ROWRED);
5. ``r = 1 / s``: ``lut`` ``reciprocal``;
6. ``y = e * r``: ``mul``.

Error bound: ``frontend/quantize.py``, "LayerNorm, softmax and GELU".

Scaled dot-product attention ``softmax(q @ k^T * a) @ v`` of ``(..., L, D)`` operands: each
operand reshaped to ``(B, L, D)`` (B the product of the leading dims), ``scores = matmul(q,
transpose(k))``, the softmax chain above with ``a = scale or 1/sqrt(D)``, ``matmul(p, v)``,
reshaped back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from . import rowmix
from .base import REGISTRY, Node, register


def chain(cx, n, x: str, scale: float = 1.0, prefix: str | None = None) -> str:
    """Emit the softmax chain of ``x`` over its last dim; returns the result node's name."""
    shape = tuple(cx.nodes[x].shape)
    common = cx.common(n)
    base = n.name if prefix is None else prefix

    def add(kind, suffix, inputs, **kw):
        node = REGISTRY[kind](f"{base}{suffix}", tuple(inputs), shape, **common, **kw)
        cx.graph.nodes.append(node)
        cx.nodes[node.name] = node
        return node.name

    named = _Named(n, base)
    m = add("rowmax", "_max", (x,))
    t = add("sub", "_shift", (x, m))
    e = add("lut", "_exp", (t,), fn="exp_scaled", params=(float(scale),))
    s = rowmix.emit(cx, named, e, "sum", suffix="_sum")
    # 1 / sum <= 1 and the probabilities <= 1 (the max's exp is 1): their scales cover that
    r = add("lut", "_recip", (s,), fn="reciprocal", params=(), known_max=1.0)
    return add("mul", "", (e, r), known_max=1.0)


class _Named:
    """An fx node seen under another name (the nodes of a chain inside a larger capture)."""

    def __init__(self, n, name):
        self._n, self.name = n, name

    def __getattr__(self, item):
        return getattr(self._n, item)


@register
@dataclass
class Softmax(Node):
    kind: ClassVar[str] = "softmax"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.softmax.int", "aten._softmax.default",
                                       "aten.scaled_dot_product_attention.default")
    SUPPORTED: ClassVar[str] = "softmax over the last dim, scaled_dot_product_attention"
    ORDER: ClassVar[int] = 86

    @classmethod
    def capture(cls, cx, n) -> None:
        t = str(n.target)
        if t == "aten.scaled_dot_product_attention.default":
            cx.alias[n.name] = _sdpa(cx, n)
            return
        x = cx.act(n, n.args[0])
        shape = tuple(cx.nodes[x].shape)
        dim = int(cx.arg(n, 1, "dim", -1))
        if dim % len(shape) != len(shape) - 1:
            raise cx.fail(n, f"{t} over dim {dim} of a {list(shape)} tensor (only the last dim)")
        cx.alias[n.name] = chain(cx, n, x)


def _sdpa(cx, n) -> str:
    t = str(n.target)
    q, k, v = (cx.act(n, a) for a in n.args[:3])
    mask = cx.arg(n, 3, "attn_mask")
    if mask is not None:
        raise cx.fail(n, f"{t} with an attention mask")
    if float(cx.arg(n, 4, "dropout_p", 0.0)) != 0.0:
        raise cx.fail(n, f"{t} with dropout")
    if cx.arg(n, 5, "is_causal", False):
        raise cx.fail(n, f"{t} with is_causal=True")
    if n.kwargs.get("enable_gqa", False):
        raise cx.fail(n, f"{t} with enable_gqa=True")
    sq, sk, sv = (tuple(cx.nodes[a].shape) for a in (q, k, v))
    if len(sq) < 2 or sq[:-2] != sk[:-2] or sk[:-2] != sv[:-2] or sq[-1] != sk[-1] \
            or sk[-2] != sv[-2]:
        raise cx.fail(n, f"{t} with broadcasting or mismatched shapes {list(sq)}, {list(sk)}, "
                         f"{list(sv)}")
    scale = cx.arg(n, 6, "scale")
    scale = 1.0 / math.sqrt(sq[-1]) if scale is None else float(scale)
    B = math.prod(sq[:-2])
    add = cx.expander(n)

    q3 = add("reshape", [q], (B,) + sq[-2:])
    k3 = add("reshape", [k], (B,) + sk[-2:])
    v3 = add("reshape", [v], (B,) + sv[-2:])
    kt = add("transpose", [k3], (B, sk[-1], sk[-2]), perm=(0, 2, 1))
    scores = add("matmul", [q3, kt], (B, sq[-2], sk[-2]))
    p = chain(cx, n, scores, scale, prefix=f"{n.name}_softmax")
    y = add("matmul", [p, v3], (B, sq[-2], sv[-1]))
    return add("reshape", [y], sq[:-1] + (sv[-1],))
