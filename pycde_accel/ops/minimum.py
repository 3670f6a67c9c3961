"""``minimum``: the element-wise ``min(a, b)`` of two activations of the same shape
(``torch.minimum``, ``torch.min(a, b)``), as ``-max(-x', -s)`` on the vector engine.

* quantization: as ``maximum`` (``s_y = max(s_a, s_b)``; ``x`` the smaller-scale operand,
  rescaled *and negated*: ``(ma, 0, shift) = add_multipliers(-s_x / s_y, 0)``).
* reference: ``ns = neg(s)``, ``y = neg(max(pre(x), ns))`` with ``neg(v) = sat8(-v)`` (the
  residual add with ``m = -2^14``, ``shift = 14``: exact but for ``-(-128) = 127``, so an operand
  at code -128 gives -127) and ``pre`` as in ``maximum``.
* back end: two layers: an ADD ``<node>.neg`` writing ``ns`` (the S operand has to come from
  DRAM), then a VMAX with ``pre`` = the negating rescale of x and ``post`` = ``neg``.
* post-op kernel: none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..backend import program as P
from ..frontend import quantize as q
from . import maximum as mx
from .base import Node, register


def neg(v):
    return q.residual_add(v, v, mx.NEG_M, 0, mx.NEG_SHIFT)


class _NegLayer:
    """The node the negation layer reports as."""
    kind = "minimum"

    def __init__(self, name, module, source):
        self.name, self.module, self.source = name, module, source


@register
@dataclass
class Minimum(Node):
    kind: ClassVar[str] = "minimum"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.minimum.default", "aten.min.other")
    SUPPORTED: ClassVar[str] = "minimum of two activations"
    ORDER: ClassVar[int] = 53

    @classmethod
    def capture(cls, cx, n) -> None:
        mx.capture_pair(cls, cx, n)

    def quantize(self, scales, maxabs):
        return mx.quantize_pair(self, scales, negate=True)

    def float_eval(self, ins, run):
        return np.minimum(ins[0], ins[1])

    def reference(self, ins, lq, run):
        x, s = ins[lq.m0], ins[1 - lq.m0]
        return neg(np.maximum(mx.pre(x, lq), neg(s)))

    def int_setup(self, m, lq) -> None:
        mx.pair_int_setup(self, m, lq)
        m.buf(self.name, "neg", np.int64(mx.NEG_M))
        m.buf(self.name, "neg_shift", np.int64(mx.NEG_SHIFT))
        m.buf(self.name, "neg_mask", np.int64((1 << mx.NEG_SHIFT) - 1))
        m.buf(self.name, "neg_half", np.int64((1 << mx.NEG_SHIFT) - 1 >> 1))

    def int_forward(self, m, ins, inputs):
        import torch
        from ..frontend import intmodule as im
        lq = m.qm.layers[self.name]
        c = lambda key: m.const(self.name, key)  # noqa: E731

        def ng(v):
            return im.clamp(im.rdbpot(v * c("neg"), c("neg_shift"), c("neg_mask"), c("neg_half")), False)
        return ng(torch.maximum(mx.pair_torch_pre(m, self, ins[lq.m0], lq), ng(ins[1 - lq.m0])))

    def quant_json(self, lq) -> dict:
        return mx.pair_json(lq)

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_), mx.pair_from_json(quant)

    def lower(self, cx) -> None:
        lq = cx.qm.layers[self.name]
        x, s = self.inputs[lq.m0], self.inputs[1 - lq.m0]
        nm = f"{self.name}.neg"
        (vs,), tmp, dims, st = mx.vec_layout(cx, self, [s], nm)
        cx.put(nm, tmp)
        layer = _NegLayer(nm, self.module, self.source)
        cx.emit(lambda Lo, i: P.Add(i, 0, cx.base(vs), cx.base(vs), cx.base(tmp), mx.NEG_M, 0,
                                    mx.NEG_SHIFT, dims, st[0], st[0], st[1], name=nm,
                                    module=self.module), {"kind": layer.kind})
        mx.emit_vmax(cx, self, x, nm, lq.ma, lq.shift, mx.NEG_M, mx.NEG_SHIFT)
