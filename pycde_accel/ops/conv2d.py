"""``conv2d``: groups=1, dilation=1; W ``[OC, C, KH, KW]``; ``stride``, ``padding`` as (h, w);
``relu``: a fused ReLU.

* capture: ``aten.conv2d.default`` and ``aten.convolution.default`` (not transposed) with
  integer padding; a BatchNorm right after folds into it.
* quantization: as ``linear`` (per-output-channel weights and multipliers, int32 bias).
* reference: a matmul through im2col: ``A = im2col(x)`` (one row per output pixel in (n, oh, ow)
  order, one column per (c, kh, kw), zero padding), ``B = W_q.reshape(OC, -1).T``, then as
  ``linear``; the (n, oh, ow, oc) result is transposed back to NCHW.
* back end: one GEMM with IM2COL addressing over the channels-last input (K = KH*KW*pitch; the
  packed weight is zero past the real channels).
* post-op kernel: ``requantize_pc`` with ``channel_stride`` = OH*OW.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..backend import layout as L
from ..backend import program as P
from ..backend.tiling import align, conv_out
from ..frontend import quantize as q
from . import common, linear
from .base import Node, register


@register
@dataclass
class Conv2d(Node):
    weight: np.ndarray = None
    bias: np.ndarray | None = None
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    relu: bool = False
    kind: ClassVar[str] = "conv2d"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.conv2d.default", "aten.convolution.default")
    SUPPORTED: ClassVar[str] = "Conv2d (groups=1, dilation=1)"
    ORDER: ClassVar[int] = 20
    FUSES_RELU: ClassVar[bool] = True

    def attrs(self) -> dict:
        oc, c, kh, kw = (int(v) for v in self.weight.shape)
        return {"in_channels": c, "out_channels": oc, "kernel": [kh, kw],
                "stride": list(self.stride), "padding": list(self.padding),
                "bias": self.bias is not None, "relu": self.relu}

    @classmethod
    def capture(cls, cx, n) -> None:
        args = list(n.args)
        if str(n.target) == "aten.convolution.default":
            stride, padding, dilation, transposed, groups = args[3], args[4], args[5], args[6], args[8]
            if transposed:
                raise cx.fail(n, "conv_transpose2d")
        else:
            stride, padding = cx.arg(n, 3, "stride", 1), cx.arg(n, 4, "padding", 0)
            dilation, groups = cx.arg(n, 5, "dilation", 1), cx.arg(n, 6, "groups", 1)
        if isinstance(padding, str):
            raise cx.fail(n, f"conv2d with padding={padding!r} (give integer padding)")
        if groups != 1:
            raise cx.fail(n, f"conv2d with groups={groups}")
        if common.pair(dilation) != (1, 1):
            raise cx.fail(n, f"conv2d with dilation={list(common.pair(dilation))}")
        w = cx.const(n, args[1])
        if w.ndim != 4:
            raise cx.fail(n, f"conv with a {w.ndim - 2}-d kernel")
        cx.emit(cls(n.name, (cx.act(n, args[0]),), cx.shape(n), **cx.common(n), weight=w,
                    bias=cx.const(n, cx.arg(n, 2, "bias")), stride=common.pair(stride),
                    padding=common.pair(padding)), n)

    def folds_batchnorm(self) -> bool:
        return True

    def macs(self, graph) -> int:
        """One per output value and weight tap (of its group's input channels)."""
        return math.prod(self.shape) * math.prod(self.weight.shape[1:])

    def quantize(self, scales, maxabs):
        return linear.quantize_weighted(self, scales, maxabs)

    def float_eval(self, ins, run):
        x = ins[0]
        oc, c, kh, kw = self.weight.shape
        cols = common.im2col(x, (kh, kw), self.stride, self.padding, 0.0)
        y = cols @ self.weight.reshape(oc, -1).T
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(x.shape[0], self.shape[2], self.shape[3], oc).transpose(0, 3, 1, 2)

    def reference(self, ins, lq, run):
        x = ins[0]
        oc, c, kh, kw = lq.weight.shape
        cols = common.im2col(x, (kh, kw), self.stride, self.padding, 0)
        acc = common.matmul_acc(cols, lq.weight.reshape(oc, -1).T, lq.bias, self.name)
        run.acc[self.name] = acc
        oh, ow = common.conv_out_hw(x.shape, (kh, kw), self.stride, self.padding)
        y = q.requantize(acc, lq.m0, lq.shift, self.relu)
        return y.reshape(x.shape[0], oh, ow, oc).transpose(0, 3, 1, 2)

    def int_setup(self, m, lq) -> None:
        linear.weighted_int_setup(self, m, lq)
        n, c, h, w_ = m.qm.graph.node(self.inputs[0]).shape
        kh, kw = lq.weight.shape[2:]
        ph, pw = self.padding
        # im2col as a gather: indices into the zero-padded input, flattened per sample
        idx = np.arange(c * (h + 2 * ph) * (w_ + 2 * pw)).reshape(1, c, h + 2 * ph, w_ + 2 * pw)
        m.buf(self.name, "idx", common.im2col(idx, (kh, kw), self.stride, (0, 0)))

    def int_forward(self, m, ins, inputs):
        import torch
        x = ins[0]
        ph, pw = self.padding
        xp = torch.nn.functional.pad(x, (pw, pw, ph, ph)) if (ph or pw) else x
        idx = m.const(self.name, "idx")                               # [OH*OW, C*KH*KW]
        cols = torch.index_select(xp.reshape(x.shape[0], -1), 1, idx.reshape(-1))
        acc = torch.matmul(cols.reshape(-1, idx.shape[1]), m.const(self.name, "w")) + m.const(self.name, "b")
        y = linear.requant_torch(m, acc, self)
        n, oc, oh, ow = self.shape
        return y.reshape(n, oh, ow, oc).permute(0, 3, 1, 2)

    def quant_json(self, lq) -> dict:
        return linear.weighted_quant_json(self, lq)

    def weight_arrays(self, lq) -> dict:
        return linear.weighted_arrays(self, lq)

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        w, lq = linear.weighted_from_json(quant, arrays)
        return cls(**common_, weight=w.astype(np.float64), bias=None, stride=tuple(attrs["stride"]),
                   padding=tuple(attrs["padding"]), relu=attrs["relu"]), lq

    def lower(self, cx) -> None:
        v = cx.strided(self.inputs[0], self, "the input")
        oc, c, kh, kw = cx.qm.layers[self.name].weight.shape
        n, _, h, w = v.shape
        (sh, sw), (ph, pw) = self.stride, self.padding
        pin = v.strides[3] if w > 1 else align(c, cx.C)
        if not (v.strides[1] == 1 or c == 1) or pin % cx.axi or pin < c or \
                (h > 1 and v.strides[2] % cx.axi) or (n > 1 and v.strides[0] % cx.axi) or v.offset % cx.axi:
            raise cx.refuse(self, f"im2col needs a channels-last input whose pixel stride "
                                  f"is a beat-aligned channel pitch (strides {list(v.strides)}); re-laying "
                                  f"it out needs a COPY, which the accelerator's commands cannot express")
        oh, ow = conv_out(h, kh, sh, ph), conv_out(w, kw, sw, pw)
        M, K = n * oh * ow, kh * kw * pin
        k_map = np.full((kh, kw, pin), -1, np.int64)
        k_map[:, :, :c] = np.arange(c * kh * kw).reshape(c, kh, kw).transpose(1, 2, 0)
        out = cx.padded(self.name, (n, oh, ow, oc), self.name)
        cx.put(self.name, out.transpose((0, 3, 1, 2)))
        lq = cx.qm.layers[self.name]
        fields = dict(a_base=lambda Lo, v=v: cx.base(v), a_stride_batch=v.strides[0],
                      in_c=pin, in_h=h, in_w=w, out_h=oh, out_w=ow, kernel=P.pack2(kh, kw),
                      stride=P.pack2(sh, sw), pad=P.pack2(ph, pw), in_stride_c=1,
                      in_stride_h=v.strides[2], in_stride_w=pin, c_stride_m=out.strides[2],
                      c_stride_batch=L.view_span(out))
        cx.gemm(self, name=self.name, M=M, N=oc, K=K, batch=1, a_pass=M * K, b_packed=True,
                per_tensor=False, fields=fields, flags=P.IM2COL, out_buf=out.buffer, relu=self.relu,
                has_bias=lq.bias is not None,
                weight=L.ConstSpec(f"{self.name}.weight", self.name, "weight", "conv2d", k_map.ravel()))

    def postop(self, lq, base):
        return linear.weighted_postop(self, lq, base, math.prod(self.shape[2:]))
