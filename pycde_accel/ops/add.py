"""``add``: the element-wise sum of two activations of the same shape; ``relu``: a fused ReLU.
(An add of a constant or a parameter is an affine map, captured by :mod:`._affine`.)

* quantization: ``y_q = sat8(RoundingDivideByPOT(a_q * ma + b_q * mb, shift))``
  (:func:`~pycde_accel.frontend.quantize.residual_add`) with ``ma``, ``mb``, ``shift`` from
  :func:`~pycde_accel.frontend.quantize.add_multipliers`; ``s_y >= max(s_a, s_b) / 2^14``.
* back end: one ADD (the vector engine's VEC ADD) over the operands' common padded layout.
* post-op kernel: ``residual_add`` (clamp to [0, 127] with the ReLU).
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


def add_int_setup(node, m, lq) -> None:
    for k in ("ma", "mb", "shift"):
        m.buf(node.name, k, np.int64(getattr(lq, k)))
    m.masks(node.name, lq.shift)


def add_torch(m, node, a, b, relu: bool):
    """``sat8(RDBPOT(a * ma + b * mb, shift))`` (clamped at 0 with ``relu``) as torch ops."""
    from ..frontend import intmodule as im
    c = lambda key: m.const(node.name, key)  # noqa: E731
    return im.clamp(im.rdbpot(a * c("ma") + b * c("mb"), c("shift"), c("mask"), c("half")), relu)


def emit_vec_add(cx, node, a, b, relu: bool, lq) -> None:
    """One ADD layer ``node`` (the VEC ADD engine function) over ``a`` and ``b`` (node names)."""
    ins, out, dims, strides = cx.eltwise(node, [a, b])
    cx.emit(lambda Lo, i: P.Add(i, P.RELU if relu else 0, cx.base(ins[0]), cx.base(ins[1]),
                                cx.base(out), int(lq.ma), int(lq.mb), int(lq.shift), dims,
                                strides[0], strides[1], strides[2], name=node.name, module=node.module),
            {"kind": node.kind})


@register
@dataclass
class Add(Node):
    relu: bool = False
    kind: ClassVar[str] = "add"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.add.Tensor", "aten.add_.Tensor", "aten.add.Scalar")
    SUPPORTED: ClassVar[str] = "add of two activations"
    ORDER: ClassVar[int] = 50
    FUSES_RELU: ClassVar[bool] = True

    def attrs(self) -> dict:
        return {"relu": self.relu}

    @classmethod
    def capture(cls, cx, n) -> None:
        if not _affine.capture_binary(cx, n, "+"):
            capture_pair(cls, cx, n, "+", "sum")

    def quantize(self, scales, maxabs):
        sa, sb = scales[self.inputs[0]], scales[self.inputs[1]]
        s_out = max(q.act_scale(maxabs[self.name]), max(sa, sb) / 2.0 ** 14)
        ma, mb, shift = q.add_multipliers(sa / s_out, sb / s_out)
        return s_out, q.LayerQuant(ma=ma, mb=mb, shift=shift)

    def float_eval(self, ins, run):
        return ins[0] + ins[1]

    def reference(self, ins, lq, run):
        return q.residual_add(ins[0], ins[1], lq.ma, lq.mb, lq.shift, self.relu)

    def int_setup(self, m, lq) -> None:
        add_int_setup(self, m, lq)

    def int_forward(self, m, ins, inputs):
        return add_torch(m, self, ins[0], ins[1], self.relu)

    def quant_json(self, lq) -> dict:
        return {"ma": int(lq.ma), "mb": int(lq.mb), "shift": int(lq.shift)}

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_, relu=attrs["relu"]), q.LayerQuant(ma=int(quant["ma"]), mb=int(quant["mb"]),
                                                                shift=int(quant["shift"]))

    def lower(self, cx) -> None:
        emit_vec_add(cx, self, self.inputs[0], self.inputs[1], self.relu, cx.qm.layers[self.name])

    def postop(self, lq, base):
        k = kernels.residual_add(math.prod(self.shape), lo=0 if self.relu else -128, hi=127,
                                 name=f"{base}_residual_add")
        return k, "residual_add", {"ma": [int(lq.ma)], "mb": [int(lq.mb)], "s": [int(lq.shift)]}


def capture_pair(cls, cx, n, sym: str, what: str) -> None:
    """Capture ``a (sym) b`` of two same-shape activations as ``cls`` (add, sub); anything
    else is refused naming the op (``what``: "sum", "difference")."""
    t = str(n.target)
    if not all(cx.is_act(a) for a in n.args[:2]):
        raise cx.fail(n, f"{t} with a constant operand (only the {what} of two activations)")
    if n.kwargs.get("alpha", 1) != 1:
        raise cx.fail(n, f"{t} with alpha={n.kwargs['alpha']}")
    a, b = cx.act(n, n.args[0]), cx.act(n, n.args[1])
    if cx.nodes[a].shape != cx.nodes[b].shape:
        raise cx.fail(n, f"{t} with broadcasting {cx.nodes[a].shape} {sym} {cx.nodes[b].shape}")
    cx.emit(cls(n.name, (a, b), cx.shape(n), **cx.common(n)), n)
