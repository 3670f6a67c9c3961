"""``maximum``: the element-wise ``max(a, b)`` of two activations of the same shape
(``torch.maximum``, ``torch.max(a, b)``).

* quantization: ``s_y = max(s_a, s_b)`` (``|max(a, b)|`` never exceeds the larger range, so no
  calibration is needed and nothing saturates). The operand with the smaller scale (``x``;
  input ``m0`` of the LayerQuant, 0 or 1) is rescaled to ``s_y`` with the residual add's
  multiplier, ``(ma, 0, shift) = add_multipliers(s_x / s_y, 0)``; the other operand (``s``) is
  already at ``s_y``. Equal scales need no rescale (``ma = 0``).
* reference: ``y = max(pre(x), s)``, ``pre(x) = sat8(RoundingDivideByPOT(x * ma, shift))``
  (:func:`~pycde_accel.frontend.quantize.residual_add` with ``mb = 0``).
* back end: one VMAX (:class:`~pycde_accel.backend.program.VMax`): per chunk of the X buffer
  LOAD X x, [LOAD S ZERO + VEC ADD TO_X: the rescale in place], LOAD S s, VEC MAX to DRAM. The
  bus moves x, s and y once (ZERO S beats are no DMA read).
* post-op kernel: none (the vector engine's VEC MAX and VEC ADD).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..backend import program as P
from ..backend.layout import View, merge_loops, view_span
from ..errors import UserError
from ..frontend import quantize as q
from .base import Node, register

#: the exact negation ``sat8(-v)`` as a residual-add multiplier: ``-v * 2^14 / 2^14``
NEG_M, NEG_SHIFT = -(1 << 14), 14


def capture_pair(cls, cx, n) -> None:
    """Capture a merge of two activations of the same shape (maximum, minimum)."""
    t = str(n.target)
    if not all(cx.is_act(a) for a in n.args[:2]):
        raise cx.fail(n, f"{t} with a constant operand (only of two activations)")
    a, b = cx.act(n, n.args[0]), cx.act(n, n.args[1])
    if cx.nodes[a].shape != cx.nodes[b].shape:
        raise cx.fail(n, f"{t} with broadcasting {cx.nodes[a].shape}, {cx.nodes[b].shape}")
    cx.emit(cls(n.name, (a, b), cx.shape(n), **cx.common(n)), n)


def quantize_pair(node, scales, negate: bool):
    """``(s_y, LayerQuant(m0=index of x, ma, shift))``: x is the smaller-scale operand."""
    sa, sb = scales[node.inputs[0]], scales[node.inputs[1]]
    xi = 0 if sa < sb else 1
    s_out = max(sa, sb)
    ratio = min(sa, sb) / s_out
    if ratio == 1.0 and not negate:
        return s_out, q.LayerQuant(m0=xi, ma=0, shift=0)
    ma, _, shift = q.add_multipliers(-ratio if negate else ratio, 0.0)
    return s_out, q.LayerQuant(m0=xi, ma=ma, shift=shift)


def pre(x, lq):
    return q.residual_add(x, x, lq.ma, 0, lq.shift) if lq.ma else np.asarray(x, np.int64)


def pair_json(lq) -> dict:
    return {"x": int(lq.m0), "ma": int(lq.ma), "shift": int(lq.shift)}


def pair_from_json(quant) -> q.LayerQuant:
    return q.LayerQuant(m0=int(quant["x"]), ma=int(quant["ma"]), shift=int(quant["shift"]))


def pair_torch_pre(m, node, x, lq):
    from ..frontend import intmodule as im
    if not lq.ma:
        return x
    c = lambda key: m.const(node.name, key)  # noqa: E731
    return im.clamp(im.rdbpot(x * c("ma"), c("shift"), c("mask"), c("half")), False)


def pair_int_setup(node, m, lq) -> None:
    m.buf(node.name, "ma", np.int64(lq.ma))
    m.buf(node.name, "shift", np.int64(lq.shift))
    m.masks(node.name, lq.shift)


def vec_layout(cx, node, inputs: list, buf: str):
    """The common padded layout of ``inputs`` (node names) and a new output buffer ``buf``
    with it: ``(input views, output view, dims, strides)`` (as ``Compiler.eltwise``)."""
    ins = [cx.strided(i, node, "an operand") for i in inputs]
    a = ins[0]
    if any(v.strides != a.strides or v.shape != a.shape or v.offset % cx.axi for v in ins) \
            or any(s < 0 for s in a.strides):
        raise UserError(f"{cx.where(node)}: the operands are laid out differently (strides "
                        f"{[list(v.strides) for v in ins]}); re-laying one out needs a COPY")
    span = view_span(View("", a.shape, a.strides, 0))
    b = cx.layout.request("activation", buf, span, "activation", node.name)
    out = View(b, a.shape, a.strides, 0)
    loops = merge_loops(a.shape, *[v.strides for v in ins], out.strides)
    if loops is None:
        raise UserError(f"{cx.where(node)}: operands need more than {P.ND} strided loop dimensions")
    return ins, out, loops[0], loops[1]


def emit_vmax(cx, node, x: str, s: str, ma, shift_a, mb, shift_b) -> None:
    """One VMAX layer: ``node``'s output = post(max(pre(x), s)) (``x``, ``s`` tensor names)."""
    (vx, vs), out, dims, st = vec_layout(cx, node, [x, s], node.name)
    cx.put(node.name, out)
    cx.emit(lambda Lo, i: P.VMax(i, 0, cx.base(vx), cx.base(vs), cx.base(out), int(ma), int(shift_a),
                                 int(mb), int(shift_b), dims, st[0], st[1], st[2],
                                 name=node.name, module=node.module), {"kind": node.kind})


@register
@dataclass
class Maximum(Node):
    kind: ClassVar[str] = "maximum"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.maximum.default", "aten.max.other")
    SUPPORTED: ClassVar[str] = "maximum of two activations"
    ORDER: ClassVar[int] = 52

    @classmethod
    def capture(cls, cx, n) -> None:
        capture_pair(cls, cx, n)

    def quantize(self, scales, maxabs):
        return quantize_pair(self, scales, negate=False)

    def float_eval(self, ins, run):
        return np.maximum(ins[0], ins[1])

    def reference(self, ins, lq, run):
        x, s = ins[lq.m0], ins[1 - lq.m0]
        return np.maximum(pre(x, lq), s)

    def int_setup(self, m, lq) -> None:
        pair_int_setup(self, m, lq)

    def int_forward(self, m, ins, inputs):
        import torch
        lq = m.qm.layers[self.name]
        return torch.maximum(pair_torch_pre(m, self, ins[lq.m0], lq), ins[1 - lq.m0])

    def quant_json(self, lq) -> dict:
        return pair_json(lq)

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_), pair_from_json(quant)

    def lower(self, cx) -> None:
        lq = cx.qm.layers[self.name]
        emit_vmax(cx, self, self.inputs[lq.m0], self.inputs[1 - lq.m0], lq.ma, lq.shift, 0, 0)
