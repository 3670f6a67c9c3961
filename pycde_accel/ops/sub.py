"""``sub``: the element-wise difference ``a - b`` of two activations of the same shape;
``relu``: a fused ReLU.

* capture: ``aten.sub.Tensor`` (``a - b``, ``torch.sub``) with ``alpha=1``; with a constant
  or parameter operand it is an affine map (:mod:`._affine`).
* quantization: the residual add's form with a negative multiplier of ``b``:
  ``(ma, mb, shift) = add_multipliers(s_a / s_y, -s_b / s_y)``, ``s_y >= max(s_a, s_b) / 2^14``.
* reference: ``y = sat8(RoundingDivideByPOT(a * ma + b * mb, shift))``
  (:func:`~pycde_accel.frontend.quantize.residual_add`; ``mb < 0``).
* back end: one ADD (the vector engine's VEC ADD, signed multipliers) over the operands'
  common padded layout, as ``add``.
* post-op kernel: ``residual_add``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from ..frontend import quantize as q
from ..lowering import kernels
from . import _affine, add
from .base import Node, register


@register
@dataclass
class Sub(Node):
    relu: bool = False
    kind: ClassVar[str] = "sub"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.sub.Tensor", "aten.sub_.Tensor", "aten.sub.Scalar",
                                       "aten.rsub.Scalar", "aten.rsub.Tensor")
    SUPPORTED: ClassVar[str] = "sub of two activations"
    ORDER: ClassVar[int] = 51
    FUSES_RELU: ClassVar[bool] = True

    def attrs(self) -> dict:
        return {"relu": self.relu}

    @classmethod
    def capture(cls, cx, n) -> None:
        t = str(n.target)
        if not _affine.capture_binary(cx, n, "r-" if t.startswith("aten.rsub") else "-"):
            add.capture_pair(cls, cx, n, "-", "difference")

    def quantize(self, scales, maxabs):
        sa, sb = scales[self.inputs[0]], scales[self.inputs[1]]
        s_out = max(q.act_scale(maxabs[self.name]), max(sa, sb) / 2.0 ** 14)
        ma, mb, shift = q.add_multipliers(sa / s_out, -sb / s_out)
        return s_out, q.LayerQuant(ma=ma, mb=mb, shift=shift)

    def float_eval(self, ins, run):
        return ins[0] - ins[1]

    def reference(self, ins, lq, run):
        return q.residual_add(ins[0], ins[1], lq.ma, lq.mb, lq.shift, self.relu)

    def int_setup(self, m, lq) -> None:
        add.add_int_setup(self, m, lq)

    def int_forward(self, m, ins, inputs):
        return add.add_torch(m, self, ins[0], ins[1], self.relu)

    def quant_json(self, lq) -> dict:
        return {"ma": int(lq.ma), "mb": int(lq.mb), "shift": int(lq.shift)}

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_, relu=attrs["relu"]), q.LayerQuant(ma=int(quant["ma"]), mb=int(quant["mb"]),
                                                                shift=int(quant["shift"]))

    def lower(self, cx) -> None:
        add.emit_vec_add(cx, self, self.inputs[0], self.inputs[1], self.relu, cx.qm.layers[self.name])

    def postop(self, lq, base):
        k = kernels.residual_add(math.prod(self.shape), lo=0 if self.relu else -128, hi=127,
                                 name=f"{base}_residual_add")
        return k, "residual_add", {"ma": [int(lq.ma)], "mb": [int(lq.mb)], "s": [int(lq.shift)]}
