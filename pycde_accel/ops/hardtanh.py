"""``hardtanh``: ``clamp(x, min_val, max_val)`` with ``min_val = 0 < max_val``: ReLU6
(``nn.ReLU6``, ``F.relu6``), ``nn.Hardtanh(0, b)``, ``torch.clamp(x, 0, b)``.

* capture: ``aten.hardtanh(_).default`` (ReLU6 exports as ``hardtanh(x, 0, 6)``),
  ``aten.relu6.default``, ``aten.clamp.default``. Bounds other than a lower bound of 0 and a
  positive upper bound become a ``lut`` node (the function table, ops/lut.py): the VEC ADD's
  clamp is the int8 range [-128, 127] or the ReLU range [0, 127], and only the lower bound 0
  maps onto one of them exactly.
* quantization: the output scale is calibrated on the clamped output, so
  ``127 * s_out <= max_val``: the upper bound is the int8 saturation at 127 (as for any tensor,
  values above the calibrated range saturate there). The input is rescaled to the output scale
  with the residual add's multipliers: ``(ma, 0, shift) = add_multipliers(s_in / s_out, 0)``
  (``s_out >= s_in / 2^14`` so that ``shift = 0`` always fits).
* reference: ``y = clip(RoundingDivideByPOT(x * ma, shift), 0, 127)`` =
  ``residual_add(x, x, ma, 0, shift, relu=True)``: the vector engine's VEC ADD with RELU.
* back end: one ADD layer (the engine function of ``add``) with both operands the input, mb = 0
  and the RELU flag; no new command, engine or RTL.
* post-op kernel: ``residual_add`` clamped to [0, 127].

Not fused into its producer (a following ReLU is; a clamp would also need the producer's output
scale calibrated after the clamp): a ReLU6 after a conv costs one VEC pass over the tensor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..frontend import quantize as q
from ..lowering import kernels
from . import add
from .base import Node, register


@register
@dataclass
class Hardtanh(Node):
    min_val: float = 0.0
    max_val: float = 6.0
    kind: ClassVar[str] = "hardtanh"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.hardtanh.default", "aten.hardtanh_.default",
                                       "aten.relu6.default", "aten.clamp.default")
    SUPPORTED: ClassVar[str] = "ReLU6/Hardtanh/clamp with min 0"
    ORDER: ClassVar[int] = 35

    def attrs(self) -> dict:
        return {"min_val": self.min_val, "max_val": self.max_val}

    @classmethod
    def capture(cls, cx, n) -> None:
        t = str(n.target)
        if t == "aten.relu6.default":
            lo, hi = 0.0, 6.0
        elif t == "aten.clamp.default":
            lo, hi = cx.arg(n, 1, "min"), cx.arg(n, 2, "max")
        else:
            lo, hi = cx.arg(n, 1, "min_val", -1.0), cx.arg(n, 2, "max_val", 1.0)
        if not all(isinstance(v, (int, float)) or v is None for v in (lo, hi)):
            raise cx.fail(n, f"{t} with bounds [{lo}, {hi}] (only constant bounds)")
        if lo != 0 or hi is None or not hi > 0:
            # any other bounds: the element-wise function table (ops/lut.py)
            from . import lut
            lut.emit(cx, n, "hardtanh", tuple(None if v is None else float(v) for v in (lo, hi)))
            return
        cx.emit(cls(n.name, (cx.act(n, n.args[0]),), cx.shape(n), **cx.common(n),
                    min_val=float(lo), max_val=float(hi)), n)

    def quantize(self, scales, maxabs):
        s_in = scales[self.inputs[0]]
        s_out = max(q.act_scale(maxabs[self.name]), s_in / 2.0 ** 14)
        ma, mb, shift = q.add_multipliers(s_in / s_out, 0.0)
        return s_out, q.LayerQuant(ma=ma, mb=mb, shift=shift)

    def float_eval(self, ins, run):
        return np.clip(ins[0], self.min_val, self.max_val)

    def reference(self, ins, lq, run):
        return q.residual_add(ins[0], ins[0], lq.ma, 0, lq.shift, relu=True)

    def int_setup(self, m, lq) -> None:
        add.add_int_setup(self, m, lq)

    def int_forward(self, m, ins, inputs):
        return add.add_torch(m, self, ins[0], ins[0], relu=True)

    def quant_json(self, lq) -> dict:
        return {"ma": int(lq.ma), "shift": int(lq.shift)}

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return (cls(**common_, min_val=attrs["min_val"], max_val=attrs["max_val"]),
                q.LayerQuant(ma=int(quant["ma"]), mb=0, shift=int(quant["shift"])))

    def lower(self, cx) -> None:
        add.emit_vec_add(cx, self, self.inputs[0], self.inputs[0], True, cx.qm.layers[self.name])

    def postop(self, lq, base):
        k = kernels.residual_add(math.prod(self.shape), lo=0, hi=127, name=f"{base}_residual_add")
        return k, "residual_add", {"ma": [int(lq.ma)], "mb": [0], "s": [int(lq.shift)]}
