"""``mul``: the element-wise product of two activations, same shape or with one operand
broadcast over the spatial dimensions (squeeze-and-excitation: ``(N, C, H, W) * (N, C, 1, 1)``,
either order); ``torch.mul``, ``*``, ``x.mul(y)``.

* quantization: ``y_q = sat8(RoundingDivideByPOT(SRDHM(a_q * b_q, m0), shift))``
  (:func:`~pycde_accel.frontend.quantize.requantize` of the exact int16 product) with
  ``(m0, shift) = quantize_multiplier(s_a * s_b / s_y)``; the output scale is calibrated and
  kept above ``s_a * s_b`` so that the multiplier is below 1.
* back end: one MUL layer (:class:`~pycde_accel.backend.program.Mul`), the vector engine's
  ``VEC MUL``: the small operand of a broadcast (one channel vector per image) sits in X and is
  re-read per pixel (the VEC's X period, field ``mb``), the large one streams through S.
* post-op kernel: ``mul_requantize`` (:func:`pycde_accel.lowering.kernels.mul_requantize`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..backend import program as P
from ..frontend import quantize as q
from ..lowering import kernels
from . import _affine
from .base import Node, register


def _bcast_kind(sa, sb) -> str | None:
    """``same``, ``b`` (b is (N, C, 1, 1) of a's (N, C, H, W)), ``a`` (the other way), None."""
    sa, sb = tuple(sa), tuple(sb)
    if sa == sb:
        return "same"
    if len(sa) == len(sb) == 4 and sa[:2] == sb[:2]:
        if sb[2:] == (1, 1):
            return "b"
        if sa[2:] == (1, 1):
            return "a"
    return None


@register
@dataclass
class Mul(Node):
    kind: ClassVar[str] = "mul"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.mul.Tensor", "aten.mul_.Tensor", "aten.mul.Scalar")
    SUPPORTED: ClassVar[str] = "mul of two activations (same shape or (N, C, H, W) * (N, C, 1, 1))"
    ORDER: ClassVar[int] = 52
    #: the largest |y| where that is known (softmax's probabilities: 1); see ``lut.Lut``
    known_max: float = 0.0

    @classmethod
    def capture(cls, cx, n) -> None:
        t = str(n.target)
        if _affine.capture_binary(cx, n, "*"):      # times a constant or a parameter: an affine map
            return
        if not all(cx.is_act(a) for a in n.args[:2]):
            raise cx.fail(n, f"{t} with a constant operand (only the product of two activations)")
        a, b = cx.act(n, n.args[0]), cx.act(n, n.args[1])
        sa, sb = cx.nodes[a].shape, cx.nodes[b].shape
        if _bcast_kind(sa, sb) is None:
            raise cx.fail(n, f"{t} with broadcasting {sa} * {sb} (same shapes or (N, C, H, W) * "
                             f"(N, C, 1, 1) only)")
        cx.emit(cls(n.name, (a, b), cx.shape(n), **cx.common(n)), n)

    def quantize(self, scales, maxabs):
        sa, sb = scales[self.inputs[0]], scales[self.inputs[1]]
        s_out = max(q.act_scale(max(maxabs[self.name], self.known_max)),
                    sa * sb * (1 + 2.0 ** -20))
        m0, shift = q.quantize_multiplier(sa * sb / s_out)
        return s_out, q.LayerQuant(m0=m0, shift=shift)

    def float_eval(self, ins, run):
        return ins[0] * ins[1]

    def reference(self, ins, lq, run):
        prod = np.asarray(ins[0], np.int64) * np.asarray(ins[1], np.int64)
        return q.requantize(prod, lq.m0, lq.shift)

    def int_setup(self, m, lq) -> None:
        m.buf(self.name, "m0", np.int64(lq.m0))
        m.buf(self.name, "shift", np.int64(lq.shift))
        m.masks(self.name, lq.shift)

    def int_forward(self, m, ins, inputs):
        from ..frontend import intmodule as im
        c = lambda key: m.const(self.name, key)  # noqa: E731
        return im.clamp(im.rdbpot(im.srdhm(ins[0] * ins[1], c("m0"), m.shift31), c("shift"),
                                  c("mask"), c("half")), False)

    def quant_json(self, lq) -> dict:
        return {"m0": int(lq.m0), "shift": int(lq.shift)}

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_), q.LayerQuant(m0=int(quant["m0"]), shift=int(quant["shift"]))

    def lower(self, cx) -> None:
        lq = cx.qm.layers[self.name]
        a, b = self.inputs
        kind = _bcast_kind(cx.tensor(a).shape, cx.tensor(b).shape)
        if kind == "same":
            ins, out, dims, strides = cx.eltwise(self, [a, b])
            cx.emit(lambda Lo, i: P.Mul(i, 0, cx.base(ins[0]), cx.base(ins[1]), cx.base(out),
                                        int(lq.m0), int(lq.shift), dims, strides[0], strides[1],
                                        strides[2], name=self.name, module=self.module),
                    {"kind": self.kind})
            return
        big, small = (a, b) if kind == "b" else (b, a)
        # the output takes the large operand's layout; the small one gives one channel
        # vector per image, re-read for every pixel
        ins, out, _, _ = cx.eltwise(self, [big])
        bv, sv = ins[0], cx.strided(small, self, "the broadcast operand")
        n, c, h, w = bv.shape
        ob, os_ = bv.offsets().reshape(n, c, h * w), sv.offsets().reshape(n, c)
        pitch = int(ob[0, 0, 1] - ob[0, 0, 0]) if h * w > 1 else -(-c // cx.axi) * cx.axi
        img_b = int(ob[1, 0, 0] - ob[0, 0, 0]) if n > 1 else 0
        img_s = int(os_[1, 0] - os_[0, 0]) if n > 1 else 0
        want_b = ob[:, :1, :1] + np.arange(h * w)[None, None, :] * pitch + \
            np.arange(c)[None, :, None]
        want_s = os_[:, :1] + np.arange(c)[None, :]
        if not (np.array_equal(ob, want_b) and np.array_equal(os_, want_s)) or pitch < c or \
                any(v % cx.axi for v in (pitch, img_b, img_s, bv.offset, sv.offset)) or \
                np.any(np.diff(ob[:, 0, 0]) != img_b) or np.any(np.diff(os_[:, 0]) != img_s):
            raise cx.refuse(self, "mul with broadcasting needs both operands channels-last "
                                  "with whole-beat pixels")
        dims = (1, n, h * w, pitch)
        cx.emit(lambda Lo, i: P.Mul(i, P.BCAST, cx.base(bv), cx.base(sv), cx.base(out),
                                    int(lq.m0), int(lq.shift), dims, (0, img_b, pitch, 1),
                                    (0, img_s, 0, 1), (0, img_b, pitch, 1), name=self.name,
                                    module=self.module),
                {"kind": self.kind})

    def postop(self, lq, base):
        k = kernels.mul_requantize(math.prod(self.shape), name=f"{base}_mul_requantize")
        return k, "mul_requantize", {"m0": [int(lq.m0)], "shift": [int(lq.shift)]}
