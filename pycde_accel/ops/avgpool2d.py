"""``avgpool2d``: average pooling of every spelling: ``nn.AvgPool2d`` / ``F.avg_pool2d``
(``kernel``, ``stride``, ``padding`` as (h, w), ``ceil_mode``, ``count_include_pad``),
``nn.AdaptiveAvgPool2d`` / ``F.adaptive_avg_pool2d`` (``adaptive``: any output size, larger than
the input or not dividing it), ``x.mean((2, 3))`` / ``x.mean((-1, -2), keepdim=...)`` (an
adaptive pool to 1x1, 2-D output without keepdim) and the 1-d forms on (N, C, L) tensors
(``nn.AvgPool1d``, ``nn.AdaptiveAvgPool1d``, ``x.mean(2)``; ``one_d``, as height 1).

* quantization: the output scale is calibrated (raised where needed so that every multiplier is
  below 1); one requantize record per class of window counts: ``(m0, shift)`` of
  ``s_in / (s_out * count)`` (``count`` = the taps PyTorch divides by at that output: the taps
  inside the input, or inside the padded extent with count_include_pad; ``divisor_override`` the
  same for all).
* reference: ``acc = UNIT * (sum of the window's int8 taps)`` (int32), ``requantize(acc, m0[r],
  shift[r])`` with r the output's record (:meth:`pycde_accel.backend.program.WinGemm.record`) and
  multipliers of ``s_in / (s_out * count * UNIT)``. ``UNIT`` = 64 is the weight of every tap: it
  only moves 6 bits of the requantize's rounding from the high-mul into the final shift, so the
  double rounding of a small sum costs at most 2^-7 of a step instead of up to half a step.
* back end: one WGEMM (:class:`pycde_accel.backend.program.WinGemm`, a depthwise conv with unit
  weights): per n-tile the im2col of its ``cols`` channels, weight 1 on each channel's taps, the
  STORE's requantize with the record of its tile's window class (PER_TENSOR records, tiles
  never mix classes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..backend import layout as L
from ..backend import program as P
from ..backend.tiling import align
from ..frontend import quantize as q
from . import common
from .base import Node, register
from .conv2d import channels_last_4d, emit_wgemm, output_channels_last


@register
@dataclass
class AvgPool2d(Node):
    kernel: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    count_include_pad: bool = True
    adaptive: bool = False
    divisor: int = 0                 # divisor_override (0: none)
    one_d: bool = False
    in_shape: tuple = ()             # the input's shape (the windows depend on it)
    kind: ClassVar[str] = "avgpool2d"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.avg_pool2d.default", "aten.adaptive_avg_pool2d.default",
                                       "aten._adaptive_avg_pool2d.default", "aten.mean.dim",
                                       "aten.avg_pool1d.default", "aten.adaptive_avg_pool1d.default")
    SUPPORTED: ClassVar[str] = "AvgPool2d/1d, AdaptiveAvgPool2d/1d, mean over spatial dims"
    #: the weight of every tap (see the module docstring)
    UNIT: ClassVar[int] = 64
    ORDER: ClassVar[int] = 41

    def attrs(self) -> dict:
        return {"kernel": list(self.kernel), "stride": list(self.stride), "padding": list(self.padding),
                "count_include_pad": self.count_include_pad, "adaptive": self.adaptive,
                "divisor": self.divisor, "one_d": self.one_d, "in_shape": list(self.in_shape)}

    # ---- capture ---------------------------------------------------------------------------
    @classmethod
    def capture(cls, cx, n) -> None:
        t = str(n.target)
        args = list(n.args)
        x_shape = cx.shape(args[0]) if hasattr(args[0], "meta") else None
        out = cx.shape(n)
        if x_shape is None or len(x_shape) not in (3, 4):
            raise cx.fail(n, f"{t} on a tensor that is not (N, C, H, W) or (N, C, L)")
        one_d = len(x_shape) == 3
        kw = {}
        if t == "aten.mean.dim":
            dims = cx.arg(n, 1, "dim", None)
            dims = [dims] if isinstance(dims, int) else list(dims or [])
            nd = len(x_shape)
            spatial = {d % nd for d in dims}
            if spatial != set(range(2, nd)) or cx.arg(n, 3, "dtype", None) is not None:
                raise cx.fail(n, f"mean over dims {dims} of a {nd}-d tensor (only over all spatial "
                                 f"dims of (N, C, H, W) or (N, C, L))")
            kw = dict(adaptive=True)
        elif "adaptive" in t:
            kw = dict(adaptive=True)
        else:
            lift = (lambda v: (1, common.pair(v)[0])) if one_d else common.pair
            lift_p = (lambda v: (0, common.pair(v)[0])) if one_d else common.pair
            kernel = lift(args[1])
            stride = cx.arg(n, 2, "stride", None)
            stride = kernel if not stride else lift(stride)
            padding = lift_p(cx.arg(n, 3, "padding", 0))
            cip = bool(cx.arg(n, 5, "count_include_pad", True))
            div = cx.arg(n, 6, "divisor_override", None) if not one_d else None
            kw = dict(kernel=kernel, stride=stride, padding=padding, count_include_pad=cip,
                      divisor=int(div or 0))
        node = cls(n.name, (cx.act(n, args[0]),), out, **cx.common(n), one_d=one_d,
                   in_shape=tuple(x_shape), **kw)
        if node.adaptive:
            node.kernel = node._adaptive_kernel(x_shape)
        cx.emit(node, n)

    # ---- geometry --------------------------------------------------------------------------
    def _in_hw(self, x_shape):
        return (1, x_shape[2]) if self.one_d else (x_shape[2], x_shape[3])

    def _out_hw(self):
        s = self.shape
        if len(s) == 2:
            return 1, 1
        if self.one_d:
            return 1, s[2]
        return s[2], s[3]

    def _adaptive_kernel(self, x_shape):
        (h, w), (oh, ow) = self._in_hw(x_shape), self._out_hw()

        def k(n_in, n_out):
            return max(-(-((o + 1) * n_in) // n_out) - (o * n_in) // n_out for o in range(n_out))
        return (k(h, oh), k(w, ow))

    def geometry(self, x_shape) -> P.WinGemm:
        """The WGEMM descriptor's window fields (no addresses): tap placement and record classes."""
        h, w = self._in_hw(x_shape)
        oh, ow = self._out_hw()
        mode = P.WG_ADAPTIVE if self.adaptive else (P.WG_AVG_PAD if self.count_include_pad else P.WG_AVG)
        return P.WinGemm(in_h=h, in_w=w, out_h=oh, out_w=ow, kernel=P.pack2(*self.kernel),
                         stride=P.pack2(*self.stride), pad=P.pack2(*self.padding),
                         dilation=P.pack2(1, 1), mode=mode)

    def classes(self, g: P.WinGemm) -> list[int]:
        """The divisor of each record (h-major pairs of count classes)."""
        ch, cw = g.count_classes()
        return [self.divisor or a * b for a in ch for b in cw]

    # ---- quantization and semantics --------------------------------------------------------
    def quantize(self, scales, maxabs):
        s_in = scales[self.inputs[0]]
        g = self.geometry(self.in_shape)
        divs = self.classes(g)
        s_out = max(q.act_scale(maxabs[self.name]), s_in / min(divs) * (1 + 2.0 ** -20))
        mults = [q.quantize_multiplier(float(s_in / (s_out * d * self.UNIT))) for d in divs]
        return s_out, q.LayerQuant(m0=np.array([m for m, _ in mults], np.int64),
                                   shift=np.array([s for _, s in mults], np.int64))

    def _windows(self, x_shape):
        """(gather index [OH*OW, KH*KW] into the flattened H*W input, -1 outside; record per
        output pixel)."""
        g = self.geometry(x_shape)
        kh, kw = self.kernel
        h, w = self._in_hw(x_shape)
        idx = np.full((g.out_h * g.out_w, kh * kw), -1, np.int64)
        rec = np.zeros(g.out_h * g.out_w, np.int64)
        for oh in range(g.out_h):
            for ow in range(g.out_w):
                p = oh * g.out_w + ow
                rec[p] = g.record(oh, ow)
                for ki in range(kh):
                    ih = g.tap(0, oh, ki)
                    for kj in range(kw):
                        iw = g.tap(1, ow, kj)
                        if ih is not None and iw is not None:
                            idx[p, ki * kw + kj] = ih * w + iw
        return idx, rec, g

    def _sum(self, x: np.ndarray, pad_value=0):
        n, c = x.shape[:2]
        idx, rec, g = self._windows(x.shape)
        flat = x.reshape(n, c, -1)
        taps = np.where(idx >= 0, flat[:, :, np.maximum(idx, 0)], pad_value)   # [N, C, P, T]
        return taps.sum(axis=-1), rec, g

    def _shape_out(self, y: np.ndarray) -> np.ndarray:
        return y.reshape(self.shape)

    def float_eval(self, ins, run):
        s, rec, g = self._sum(np.asarray(ins[0], np.float64), 0.0)
        divs = np.array(self.classes(g), np.float64)
        return self._shape_out(s / divs[rec])

    def reference(self, ins, lq, run):
        s, rec, _ = self._sum(np.asarray(ins[0], np.int64), 0)
        s = common.check_acc(self.name, s * self.UNIT)
        y = q.requantize(s, lq.m0[rec], lq.shift[rec])
        return self._shape_out(y)

    def int_setup(self, m, lq) -> None:
        x_shape = m.qm.graph.node(self.inputs[0]).shape
        idx, rec, _ = self._windows(x_shape)
        hw = int(np.prod(self._in_hw(x_shape)))
        # a zero appended at index hw stands for the taps outside the window
        m.buf(self.name, "idx", np.where(idx >= 0, idx, hw).reshape(-1))
        m.buf(self.name, "m0", lq.m0[rec], np.int32)
        m.buf(self.name, "shift", lq.shift[rec])
        m.masks(self.name, lq.shift[rec])

    def int_forward(self, m, ins, inputs):
        import torch
        from ..frontend import intmodule as im
        x = ins[0]
        n, c = x.shape[0], x.shape[1]
        flat = x.reshape(n * c, -1)
        flat = torch.cat([flat, torch.zeros_like(flat[:, :1])], dim=1)
        idx = m.const(self.name, "idx")
        oh, ow = self._out_hw()
        taps = torch.index_select(flat, 1, idx).reshape(n * c, oh * ow, -1)
        acc = taps.sum(dim=2) * self.UNIT
        c_ = lambda key: m.const(self.name, key)  # noqa: E731
        y = im.clamp(im.rdbpot(im.srdhm(acc, c_("m0"), m.shift31), c_("shift"), c_("mask"), c_("half")), False)
        return y.reshape(self.shape)

    # ---- design.json -----------------------------------------------------------------------
    def quant_json(self, lq) -> dict:
        return {"m0": common.json_ints(lq.m0), "shift": common.json_ints(lq.shift)}

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        node = cls(**common_, kernel=tuple(attrs["kernel"]), stride=tuple(attrs["stride"]),
                   padding=tuple(attrs["padding"]), count_include_pad=attrs["count_include_pad"],
                   adaptive=attrs["adaptive"], divisor=attrs["divisor"], one_d=attrs["one_d"],
                   in_shape=tuple(attrs["in_shape"]))
        return node, q.LayerQuant(m0=np.atleast_1d(np.array(quant["m0"], np.int64)),
                                  shift=np.atleast_1d(np.array(quant["shift"], np.int64)))

    # ---- back end --------------------------------------------------------------------------
    def lower(self, cx) -> None:
        lq = cx.qm.layers[self.name]
        v, pitch = channels_last_4d(cx, self, "the input")
        n, c, h, w = v.shape
        g = self.geometry((n, c, h, w) if not self.one_d else (n, c, w))
        out = output_channels_last(cx, self, n, c, g.out_h, g.out_w)
        C, AB = cx.C, cx.axi
        kh, kw = self.kernel
        K = kh * kw * C
        kp = align(K, AB)
        panel = np.zeros((C, kp), np.int8)
        for t in range(kh * kw):
            panel[np.arange(C), t * C + np.arange(C)] = self.UNIT
        weight = panel                      # one panel for every n-tile (W_SHARED)
        n_rec = len(lq.m0)
        recs = L.pack_params(None, lq.m0, lq.shift, n_rec)
        recs += bytes(align(len(recs), 64) - len(recs))
        emit_wgemm(cx, self, v, pitch, out, kernel=self.kernel, stride=self.stride, pad=self.padding,
                   dilation=(1, 1), N=c, slice_=C, step=C, mode=g.mode, records=recs, n_records=n_rec,
                   weight=weight.tobytes(), relu=False, bias=False, group_in=1, shared=True)
