"""``rowmax``: the maximum over the last dim, broadcast back over that dim (``y[..., j] =
max_k x[..., k]``). No ATen target of its own: softmax (``ops/softmax.py``) is captured with it
as the first step of its chain.

* quantization: none; the scale passes through (a maximum of codes is the code of the
  maximum: exact).
* reference: ``y = max(x, axis=-1)`` broadcast (int8 codes in, int8 codes out).
* back end: one ROWRED with op max (``backend/program.py``; the vector engine's row-reduction
  unit, VEC ROWRED, a whole beat per cycle); its requantization is the identity
  (``m0 = 2^31 - 1``, shift 0: ``SRDHM(x, 2^31 - 1) = x`` for int8 ``x``). It replaces the
  ``ceil(log2 L)`` rotate-by-permutation GEMMs and element-wise maxima the chain had before,
  with the same integers.
* post-op kernel: none (the unit's lowered ``row_lanes`` and requantize kernels).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .base import Node, register

#: the identity requantization of an int8 code (SRDHM(x, 2^31 - 1) = x for |x| <= 128)
IDENT_M0, IDENT_SHIFT = (1 << 31) - 1, 0


@register
@dataclass
class RowMax(Node):
    kind: ClassVar[str] = "rowmax"
    ATEN: ClassVar[tuple[str, ...]] = ()
    SUPPORTED: ClassVar[str] = ""
    ORDER: ClassVar[int] = 87

    def float_eval(self, ins, run):
        x = np.asarray(ins[0], np.float64)
        return np.broadcast_to(x.max(axis=-1, keepdims=True), x.shape).copy()

    def reference(self, ins, lq, run):
        x = np.asarray(ins[0], np.int64)
        return np.broadcast_to(x.max(axis=-1, keepdims=True), x.shape).copy()

    def int_forward(self, m, ins, inputs):
        x = ins[0]
        return x.amax(dim=-1, keepdim=True).expand(x.shape)

    def lower(self, cx) -> None:
        from .. import contract
        from .rowmix import emit_rowred
        if not emit_rowred(cx, self, contract.ROW_MAX, IDENT_M0, IDENT_SHIFT):
            raise cx.refuse(self, "the input rows are not equal byte runs at a constant "
                                  "beat-aligned stride; re-laying them out needs a COPY")
