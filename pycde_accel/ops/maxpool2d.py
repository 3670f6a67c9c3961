"""``maxpool2d``: ``kernel``, ``stride``, ``padding`` as (h, w); dilation 1, floor mode.

* quantization: none (int8 values move, the scale passes through; padding is -128).
* reference: the max over each window (padding with -128).
* back end: one MAXPOOL layer over a channels-last input with a beat-aligned channel pitch.
* post-op kernel: ``maxpool`` with ``k = kh*kw`` taps.
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
from ..lowering import kernels
from . import common
from .base import Node, register


@register
@dataclass
class MaxPool2d(Node):
    kernel: tuple[int, int] = (2, 2)
    stride: tuple[int, int] = (2, 2)
    padding: tuple[int, int] = (0, 0)
    kind: ClassVar[str] = "maxpool2d"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.max_pool2d.default",)
    SUPPORTED: ClassVar[str] = "MaxPool2d"
    ORDER: ClassVar[int] = 40

    def attrs(self) -> dict:
        return {"kernel": list(self.kernel), "stride": list(self.stride), "padding": list(self.padding)}

    @classmethod
    def capture(cls, cx, n) -> None:
        args = list(n.args)
        kernel = common.pair(args[1])
        stride = cx.arg(n, 2, "stride", None)
        stride = kernel if not stride else common.pair(stride)
        padding = common.pair(cx.arg(n, 3, "padding", 0))
        if common.pair(cx.arg(n, 4, "dilation", 1)) != (1, 1):
            raise cx.fail(n, f"MaxPool2d with dilation={list(common.pair(cx.arg(n, 4, 'dilation')))}")
        if cx.arg(n, 5, "ceil_mode", False):
            raise cx.fail(n, "MaxPool2d with ceil_mode=True")
        cx.emit(cls(n.name, (cx.act(n, args[0]),), cx.shape(n), **cx.common(n), kernel=kernel,
                    stride=stride, padding=padding), n)

    def float_eval(self, ins, run):
        return common.maxpool2d(ins[0], self.kernel, self.stride, self.padding, -np.inf)

    def reference(self, ins, lq, run):
        return common.maxpool2d(ins[0], self.kernel, self.stride, self.padding, q.INT8_MIN)

    def int_forward(self, m, ins, inputs):
        """Max over the window taps, one strided slice per tap (no integer max_pool2d needed)."""
        import torch
        x = ins[0]
        if self.padding != (0, 0):
            ph, pw = self.padding
            x = torch.nn.functional.pad(x, (pw, pw, ph, ph), value=-128)
        (kh, kw), (sh, sw) = self.kernel, self.stride
        oh, ow = self.shape[2], self.shape[3]
        y = None
        for i in range(kh):
            for j in range(kw):
                tap = x[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
                y = tap if y is None else torch.maximum(y, tap)
        return y

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_, kernel=tuple(attrs["kernel"]), stride=tuple(attrs["stride"]),
                   padding=tuple(attrs["padding"])), None

    def lower(self, cx) -> None:
        v = cx.strided(self.inputs[0], self, "the input")
        n, c, h, w = v.shape
        (kh, kw), (sh, sw), (ph, pw) = self.kernel, self.stride, self.padding
        oh, ow = conv_out(h, kh, sh, ph), conv_out(w, kw, sw, pw)
        pitch = v.strides[3] if w > 1 else align(c, cx.C)
        if not (v.strides[1] == 1 or c == 1) or pitch % cx.axi or pitch < c:
            raise cx.refuse(self, f"max-pool needs a channels-last input with a "
                                  f"beat-aligned channel pitch (strides {list(v.strides)})")
        vin = L.View(v.buffer, v.shape, (v.strides[0], 1, v.strides[2], pitch), v.offset)
        ov = L.View(self.name, (n, oh, ow, c), (oh * ow * pitch, ow * pitch, pitch, 1))
        cx.layout.request("activation", self.name, L.view_span(ov), "activation", self.name)
        o = ov.transpose((0, 3, 1, 2))
        cx.put(self.name, o)
        cx.emit(lambda Lo, i: P.MaxPool(i, 0, cx.base(vin), cx.base(o), n, c, h, w, oh, ow,
                                        P.pack2(kh, kw), P.pack2(sh, sw), P.pack2(ph, pw), vin.strides,
                                        o.strides, name=self.name, module=self.module),
                {"kind": "maxpool2d"})

    def postop(self, lq, base):
        taps = int(self.kernel[0]) * int(self.kernel[1])
        k = kernels.maxpool(math.prod(self.shape), k=taps, name=f"{base}_maxpool")
        return k, "maxpool", {"window": list(self.kernel), "stride": list(self.stride),
                              "padding": list(self.padding)}
