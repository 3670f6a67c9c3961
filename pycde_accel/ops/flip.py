"""``flip``: ``torch.flip(x, dims)`` of a 4-D NCHW activation over any of C, H, W, or of a 2-D
(N, F) activation over F.

* quantization: none (the scale passes through; the codes only move).
* reference: ``np.flip(x, dims)``.
* back end: one GATHER (:mod:`._gather`): H and W flips are the gather's source addressing
  (mode FLIP_H / FLIP_W), a C flip is its channel matrix B (the reversal permutation); the
  requantization is the identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..backend import program as P
from . import _gather as G
from .base import Node, register


@register
@dataclass
class Flip(Node):
    dims: tuple[int, ...] = ()
    kind: ClassVar[str] = "flip"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.flip.default",)
    SUPPORTED: ClassVar[str] = "flip"
    ORDER: ClassVar[int] = 71

    def attrs(self) -> dict:
        return {"dims": list(self.dims)}

    @classmethod
    def capture(cls, cx, n) -> None:
        x = cx.act(n, n.args[0])
        rank = len(cx.nodes[x].shape)
        dims = tuple(sorted({int(d) % rank for d in cx.arg(n, 1, "dims")}))
        if rank not in (2, 4) or 0 in dims:
            raise cx.fail(n, f"aten.flip.default over dims {list(dims)} of a rank-{rank} tensor "
                             f"(only C, H, W of NCHW or F of (N, F))")
        cx.emit(cls(n.name, (x,), cx.shape(n), **cx.common(n), dims=dims), n)

    def float_eval(self, ins, run):
        return np.flip(ins[0], self.dims).copy()

    def reference(self, ins, lq, run):
        return np.flip(ins[0], self.dims).copy()

    def int_forward(self, m, ins, inputs):
        import torch
        return torch.flip(ins[0], list(self.dims))

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_, dims=tuple(attrs["dims"])), None

    def lower(self, cx) -> None:
        c = G.geometry(self.shape)[1]
        B = np.eye(c, dtype=np.int64)
        if 1 in self.dims:
            B = B[::-1]
        mode = (P.G_FLIP_H if 2 in self.dims else 0) | (P.G_FLIP_W if 3 in self.dims else 0)
        G.emit(cx, self, [self.inputs[0]], self.shape, B, [G.IDENTITY[0]] * c, [0] * c, mode=mode)
