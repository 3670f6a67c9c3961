"""``layer_norm``: ``nn.LayerNorm`` / ``F.layer_norm`` over the last dim, with or without the
affine ``gamma``/``beta`` (``aten.layer_norm.default``, ``aten.native_layer_norm.default``:
its first result only).

Captured as the integer-only chain that computes it, no node of its own (as ``einsum`` is);
each step is a node with its own calibrated per-tensor scale, so the chain's integer reference
is the reference of those nodes:

1. ``d = x - mean(x)``: ``rowmix`` center, the exact integer ``q_x @ (L*I - J)`` requantized
   (rows longer than 128, whose ``L - 1`` is no int8 weight: ``rowmix`` mean, then ``sub``);
2. ``d2 = d * d``: ``mul`` (the exact int16 product requantized);
3. ``v = mean(d2)`` broadcast over the row: ``rowmix`` mean (exact row sum requantized);
4. ``r = 1 / sqrt(v + eps)``: ``lut`` ``rsqrt`` (a 256-entry table of the int8 ``v`` code);
5. ``n = d * r``: ``mul``;
6. ``y = gamma * n + beta``: a per-element affine map of the last dim (``linear`` with the
   diagonal weight ``gamma`` and bias ``beta``); left out without the affine parameters.

Error bound: every step rounds once, to half an output step of its own scale
(``frontend/quantize.py``, "LayerNorm, softmax and GELU" states the bound of the chain).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from . import _affine, rowmix
from .base import REGISTRY, Node, register


def chain(cx, n, x: str, eps: float, gamma, beta) -> str:
    """Emit the LayerNorm chain of ``x`` over its last dim; returns the result node's name."""
    shape = tuple(cx.nodes[x].shape)
    common = cx.common(n)

    def add(kind, suffix, inputs, **kw):
        node = REGISTRY[kind](f"{n.name}{suffix}", tuple(inputs), shape, **common, **kw)
        cx.graph.nodes.append(node)
        cx.nodes[node.name] = node
        return node.name

    if shape[-1] <= rowmix.MAX_ROW:
        d = rowmix.emit(cx, n, x, "center", suffix="_center")
    else:                   # L - 1 is no int8 weight: the mean, then a subtraction
        mean = rowmix.emit(cx, n, x, "mean", suffix="_mean")
        d = add("sub", "_center", (x, mean))
    d2 = add("mul", "_sq", (d, d))
    v = rowmix.emit(cx, n, d2, "mean", suffix="_var")
    r = add("lut", "_rstd", (v,), fn="rsqrt", params=(float(eps),))
    y = add("mul", "_norm" if gamma is not None or beta is not None else "", (d, r))
    if gamma is None and beta is None:
        return y
    g = np.ones(shape[-1]) if gamma is None else np.asarray(gamma, np.float64)
    b = np.zeros(shape[-1]) if beta is None else np.asarray(beta, np.float64)

    _affine.emit(cx, n, y, g, b, "LayerNorm")
    return cx.alias[n.name]


@register
@dataclass
class LayerNorm(Node):
    kind: ClassVar[str] = "layer_norm"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.layer_norm.default", "aten.native_layer_norm.default")
    SUPPORTED: ClassVar[str] = "LayerNorm over the last dim"
    ORDER: ClassVar[int] = 85

    @classmethod
    def capture(cls, cx, n) -> None:
        t = str(n.target)
        x = cx.act(n, n.args[0])
        shape = tuple(cx.nodes[x].shape)
        norm = list(cx.arg(n, 1, "normalized_shape", ()))
        if [int(v) for v in norm] != [int(shape[-1])]:
            raise cx.fail(n, f"{t} over {norm} of a {list(shape)} tensor (only over the last dim)")
        gamma = cx.const(n, cx.arg(n, 2, "weight"))
        beta = cx.const(n, cx.arg(n, 3, "bias"))
        eps = float(cx.arg(n, 4, "eps", 1e-5))
        y = chain(cx, n, x, eps, gamma, beta)
        if t == "aten.native_layer_norm.default":
            def getitem(cx_, g, i, y=y):
                if i == 0:
                    cx_.alias[g.name] = y
                elif g.users:           # the mean or rstd, used: not computed
                    raise cx_.fail(g, f"{t} result {i} (the mean or rstd; only the output)")
            cx.multi[n.name] = getitem
            cx.alias[n.name] = y
        else:
            cx.alias[n.name] = y
