"""``matmul``: matmul/bmm/mm of two activations (same leading batch shape, no broadcasting);
``relu``: a fused ReLU.

* quantization: one per-tensor ``(m0, shift)`` of ``s_a * s_b / s_out`` (``s_out`` raised so
  that the multiplier is below 1).
* reference: ``acc = a @ b`` (int32-checked) over the last two axes, then
  ``requantize(acc, m0, shift, relu)``.
* back end: one GEMM with per-tensor records. A must be available as rows (K contiguous) and
  B as rows of B^T (``q @ k.transpose(-1, -2)`` gives B^T = k directly). An operand available
  only as the transposed rows (``scores @ v``) is transposed on the array by an extra GEMM layer
  ``<node>.<operand>T`` (A = an identity constant, B^T rows = the operand's rows, requantize with
  m0 = 2^31-1, shift 0, which is exact for int8). Anything else is refused.
* post-op kernel: ``requantize`` (``requantize_relu``) with scalar m0/shift.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..backend import layout as L
from ..backend.tiling import align
from ..frontend import quantize as q
from ..lowering import kernels
from . import common, linear
from .base import Node, register

#: requantization that is the identity on int8 accumulators (transpose layers)
IDENTITY_M0, IDENTITY_SHIFT = (1 << 31) - 1, 0


class _TransposeLayer:
    """The node a transpose-on-the-array layer reports as (kind ``transpose``)."""
    kind = "transpose"

    def __init__(self, name, module, source):
        self.name, self.module, self.source = name, module, source


def as_rows(cx, v: L.View, node, operand: str) -> L.View:
    """``v`` (batch, X, Y) with contiguous rows; transposed on the array if only its
    transpose has them; else refused."""
    if cx.rows_ok(v):
        return v
    tv = v.transpose((0, 2, 1))
    if not cx.rows_ok(tv):
        raise cx.refuse(node, f"{operand} is neither row-contiguous nor its transpose "
                              f"(strides {list(v.strides)}); it would need a COPY, which the "
                              f"accelerator's commands cannot express")
    # T = tv^T computed as I @ tv^T: A = identity (Y x Y), B^T rows = rows of tv
    batch, X, Y = v.shape                    # tv: (batch, Y, X) rows contiguous
    name = f"{node.name}.{operand}T"
    out = cx.padded(name, (batch, X, Y), node.name)
    kp = align(X, cx.axi)
    eye = np.zeros((X, kp), np.int8)
    eye[np.arange(X), np.arange(X)] = 1
    esym = f"{name}.eye"
    cx.layout.request("const", esym, eye.size, "identity", node.name)
    cx.layout.consts.append(L.ConstSpec(esym, node.name, "data", data=eye.tobytes()))
    rec = np.array([0, IDENTITY_M0, IDENTITY_SHIFT, 0] * (L.ALIGN // 16), "<i4").tobytes()
    params = L.ConstSpec(f"{name}.params", node.name, "data", data=rec)
    fields = dict(a_base=lambda Lo: Lo.addr(esym), a_stride_m=kp, a_stride_k=1, a_stride_batch=0,
                  b_base=lambda Lo, tv=tv: cx.base(tv), b_stride_batch=tv.strides[0],
                  b_stride_k=1, b_stride_n=tv.strides[1],
                  c_stride_m=out.strides[1], c_stride_batch=out.strides[0])
    cx.gemm(_TransposeLayer(name, node.module, node.source), name=name, M=X, N=Y, K=X, batch=batch,
            a_pass=X * kp, b_packed=False, per_tensor=True, fields=fields, flags=0,
            out_buf=out.buffer, relu=False, params=params)
    return out


@register
@dataclass
class MatMul(Node):
    relu: bool = False
    kind: ClassVar[str] = "matmul"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.matmul.default", "aten.bmm.default", "aten.mm.default")
    SUPPORTED: ClassVar[str] = "matmul/bmm of two activations"
    ORDER: ClassVar[int] = 80
    FUSES_RELU: ClassVar[bool] = True

    def attrs(self) -> dict:
        return {"relu": self.relu}

    @classmethod
    def capture(cls, cx, n) -> None:
        t = str(n.target)
        if not all(cx.is_act(a) for a in n.args[:2]):
            raise cx.fail(n, f"{t} with a weight operand (use nn.Linear for weights)")
        a, b = cx.act(n, n.args[0]), cx.act(n, n.args[1])
        sa, sb = cx.nodes[a].shape, cx.nodes[b].shape
        if len(sa) < 2 or len(sa) != len(sb) or sa[:-2] != sb[:-2]:
            raise cx.fail(n, f"{t} with broadcasting or 1-d operands {sa} @ {sb}")
        cx.emit(cls(n.name, (a, b), cx.shape(n), **cx.common(n)), n)

    def quantize(self, scales, maxabs):
        sa, sb = scales[self.inputs[0]], scales[self.inputs[1]]
        s_out = max(q.act_scale(maxabs[self.name]), sa * sb * (1 + 2.0 ** -20))
        m0, shift = q.quantize_multiplier(sa * sb / s_out)
        return s_out, q.LayerQuant(m0=m0, shift=shift)

    def float_eval(self, ins, run):
        return np.matmul(ins[0], ins[1])

    def reference(self, ins, lq, run):
        acc = common.matmul_acc(ins[0], ins[1], None, self.name)
        run.acc[self.name] = acc
        return q.requantize(acc, lq.m0, lq.shift, self.relu)

    def int_setup(self, m, lq) -> None:
        m.buf(self.name, "m0", np.int64(lq.m0))
        m.buf(self.name, "shift", np.int64(lq.shift))
        m.masks(self.name, lq.shift)

    def int_forward(self, m, ins, inputs):
        import torch
        return linear.requant_torch(m, torch.matmul(ins[0], ins[1]), self)

    def quant_json(self, lq) -> dict:
        return {"m0": common.json_ints(lq.m0), "shift": common.json_ints(lq.shift)}

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_, relu=attrs["relu"]), q.LayerQuant(m0=int(quant["m0"]), shift=int(quant["shift"]))

    def macs(self, graph) -> int:
        """One per output value and step of the reduction (the first operand's last axis)."""
        return math.prod(self.shape) * graph.node(self.inputs[0]).shape[-1]

    def lower(self, cx) -> None:
        sa, sb = cx.tensor(self.inputs[0]).shape, cx.tensor(self.inputs[1]).shape
        M, K, N = sa[-2], sa[-1], sb[-1]
        batch = int(np.prod(sa[:-2], dtype=np.int64))
        a = cx.strided(self.inputs[0], self, "operand A").reshape((batch, M, K))
        b = cx.strided(self.inputs[1], self, "operand B").reshape((batch, K, N))
        if a is None or b is None:
            raise cx.refuse(self, "the batch dims of an operand do not merge into one "
                                  "strided dim; it would need a COPY")
        a = as_rows(cx, a, self, "a")
        bt = as_rows(cx, b.transpose((0, 2, 1)), self, "b")     # rows of B^T
        out = cx.padded(self.name, (batch, M, N), self.name)
        cx.set_tensor(self.name, out.buffer, out.offsets().reshape(self.shape))
        fields = dict(a_base=lambda Lo, a=a: cx.base(a), a_stride_batch=a.strides[0],
                      a_stride_m=a.strides[1], a_stride_k=1,
                      b_base=lambda Lo, bt=bt: cx.base(bt), b_stride_batch=bt.strides[0],
                      b_stride_k=1, b_stride_n=bt.strides[1], c_stride_m=out.strides[1],
                      c_stride_batch=out.strides[0])
        cx.gemm(self, name=self.name, M=M, N=N, K=K, batch=batch, a_pass=M * align(K, cx.axi),
                b_packed=False, per_tensor=True, fields=fields, flags=0, out_buf=out.buffer,
                relu=self.relu)

    def postop(self, lq, base):
        kind = "requantize_relu" if self.relu else "requantize"
        k = kernels.requantize(math.prod(self.shape), relu=self.relu, name=f"{base}_{kind}")
        return k, kind, {"m0": common.int_list(lq.m0), "shift": common.int_list(lq.shift)}
