"""``maxpool2d``: ``kernel``, ``stride``, ``padding``, ``dilation`` as (h, w), ``ceil_mode``;
``one_d``: MaxPool1d on an (N, C, L) tensor, as height 1.

Ceil mode's last window may hang over the input (and its padding): those taps are -128 like
the padding. Dilation 1 lowers to MAXPOOL, any other to MAXPOOLD (MAXPOOL with a dilation).

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
    dilation: tuple[int, int] = (1, 1)
    ceil_mode: bool = False
    one_d: bool = False
    kind: ClassVar[str] = "maxpool2d"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.max_pool2d.default", "aten.max_pool1d.default")
    SUPPORTED: ClassVar[str] = "MaxPool2d/1d (any dilation, ceil_mode)"
    ORDER: ClassVar[int] = 40

    def attrs(self) -> dict:
        d = {"kernel": list(self.kernel), "stride": list(self.stride), "padding": list(self.padding)}
        if tuple(self.dilation) != (1, 1) or self.ceil_mode or self.one_d:
            d.update(dilation=list(self.dilation), ceil_mode=self.ceil_mode, one_d=self.one_d)
        return d

    @classmethod
    def capture(cls, cx, n) -> None:
        args = list(n.args)
        one_d = str(n.target) == "aten.max_pool1d.default"
        lift = (lambda v: (1, common.pair(v)[0])) if one_d else common.pair
        lift_p = (lambda v: (0, common.pair(v)[0])) if one_d else common.pair
        kernel = lift(args[1])
        stride = cx.arg(n, 2, "stride", None)
        stride = kernel if not stride else lift(stride)
        padding = lift_p(cx.arg(n, 3, "padding", 0))
        dilation = lift(cx.arg(n, 4, "dilation", 1))
        cx.emit(cls(n.name, (cx.act(n, args[0]),), cx.shape(n), **cx.common(n), kernel=kernel,
                    stride=stride, padding=padding, dilation=dilation,
                    ceil_mode=bool(cx.arg(n, 5, "ceil_mode", False)), one_d=one_d), n)

    def _out_hw(self):
        return (1, self.shape[2]) if self.one_d else (self.shape[2], self.shape[3])

    def _ends(self, h, w):
        """Bottom/right -128 padding that covers every window (ceil mode's overhang)."""
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = self.kernel, self.stride, self.padding, self.dilation
        oh, ow = self._out_hw()
        return (max(ph, (oh - 1) * sh + dh * (kh - 1) + 1 - h - ph),
                max(pw, (ow - 1) * sw + dw * (kw - 1) + 1 - w - pw))

    def _pool(self, x, pad_value):
        from .conv2d import im2col_general
        x4 = x[:, :, None, :] if self.one_d else x
        n, c, h, w = x4.shape
        eh, ew = self._ends(h, w)
        cols = im2col_general(x4.reshape(n * c, 1, h, w), self.kernel, self.stride,
                              (self.padding[0], self.padding[1], eh, ew), self.dilation, pad_value)
        oh, ow = self._out_hw()
        return cols.max(axis=1).reshape(self.shape)

    def float_eval(self, ins, run):
        if self.attrs().keys() == {"kernel", "stride", "padding"}:
            return common.maxpool2d(ins[0], self.kernel, self.stride, self.padding, -np.inf)
        return self._pool(np.asarray(ins[0], np.float64), -np.inf)

    def reference(self, ins, lq, run):
        if self.attrs().keys() == {"kernel", "stride", "padding"}:
            return common.maxpool2d(ins[0], self.kernel, self.stride, self.padding, q.INT8_MIN)
        return self._pool(np.asarray(ins[0], np.int64), q.INT8_MIN)

    def int_forward(self, m, ins, inputs):
        """Max over the window taps, one strided slice per tap (no integer max_pool2d needed)."""
        import torch
        x = ins[0][:, :, None, :] if self.one_d else ins[0]
        eh, ew = self._ends(x.shape[2], x.shape[3])
        if self.padding != (0, 0) or eh or ew:
            ph, pw = self.padding
            x = torch.nn.functional.pad(x, (pw, ew, ph, eh), value=-128)
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.stride, self.dilation
        oh, ow = self._out_hw()
        y = None
        for i in range(kh):
            for j in range(kw):
                tap = x[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                y = tap if y is None else torch.maximum(y, tap)
        return y[:, :, 0, :] if self.one_d else y

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_, kernel=tuple(attrs["kernel"]), stride=tuple(attrs["stride"]),
                   padding=tuple(attrs["padding"]), dilation=tuple(attrs.get("dilation", (1, 1))),
                   ceil_mode=attrs.get("ceil_mode", False), one_d=attrs.get("one_d", False)), None

    def lower(self, cx) -> None:
        if self.attrs().keys() != {"kernel", "stride", "padding"}:
            return self._lower_general(cx)
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

    def _lower_general(self, cx) -> None:
        """Ceil mode, dilation, MaxPool1d: MAXPOOL (dilation 1) or MAXPOOLD."""
        from .conv2d import channels_last_4d, output_channels_last
        v, pitch = channels_last_4d(cx, self, "the input")
        n, c, h, w = v.shape
        oh, ow = self._out_hw()
        vin = L.View(v.buffer, v.shape, (v.strides[0], 1, v.strides[2], pitch), v.offset)
        out = output_channels_last(cx, self, n, c, oh, ow)
        if out.strides[2] != pitch:
            raise cx.refuse(self, f"max-pool input pitch {pitch} differs from its output's {out.strides[2]}")
        o = out.transpose((0, 3, 1, 2))
        (kh, kw), (sh, sw), (ph, pw) = self.kernel, self.stride, self.padding
        dil = P.pack2(*self.dilation)

        def build(Lo, i):
            args = (i, 0, cx.base(vin), cx.base(o), n, c, h, w, oh, ow, P.pack2(kh, kw),
                    P.pack2(sh, sw), P.pack2(ph, pw), vin.strides, o.strides)
            if tuple(self.dilation) == (1, 1):
                return P.MaxPool(*args, name=self.name, module=self.module)
            return P.MaxPoolDilated(*args, dil, name=self.name, module=self.module)
        cx.emit(build, {"kind": "maxpool2d"})

    def postop(self, lq, base):
        taps = int(self.kernel[0]) * int(self.kernel[1])
        k = kernels.maxpool(math.prod(self.shape), k=taps, name=f"{base}_maxpool")
        return k, "maxpool", {"window": list(self.kernel), "stride": list(self.stride),
                              "padding": list(self.padding)}
