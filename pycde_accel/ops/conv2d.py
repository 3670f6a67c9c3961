"""``conv2d``: W ``[OC, C/groups, KH, KW]``; ``stride``, ``padding`` as (h, w) (top, left);
``relu``: a fused ReLU; ``groups``, ``dilation`` (h, w) and ``pad_end`` (bottom, right; None:
``padding``) when not the defaults; ``one_d``: a Conv1d on an (N, C, L) tensor, as height 1.

Grouped, depthwise, dilated and asymmetrically padded convolutions (``padding='same'`` gives
those for even kernels) and Conv1d: the reference expands the grouped weight block-diagonally
(:func:`dense_weight`, exact: the zeros add nothing) over a dilated, padded im2col; the back end
lowers them to one WGEMM (:class:`pycde_accel.backend.program.WinGemm`): per n-tile of ``cols``
output channels, the im2col of the input channel slice those channels read (for a depthwise conv
``cols`` channels, so K = KH*KW*cols instead of KH*KW*pitch), with the slice's weights packed as
one panel. The plain case (groups 1, dilation 1, symmetric) keeps the GEMM with IM2COL below.
A depthwise conv (groups == channels, channel multiplier 1) on an array with cols == AXI bytes
runs on the core's depthwise mode (WGEMM flag DEPTHWISE, EXEC DW, rtl_lib/systolic.py): A beat
t is the word of tap t of every lane (the slice's ``cols`` channels), column j multiplies byte j
of it by lane j of the panel, which holds channel j's taps: K = KH*KW per output and no channel
padding (``sim``'s padding_waste 0 at a multiple of ``cols`` channels; the last n-tile's empty
columns otherwise). Elsewhere (cols != AXI bytes, or ``compile_program(depthwise=False)``) it
stays the slice WGEMM above, whose array MACs are ``cols`` times its model MACs (each output
channel's weights face one of the slice's ``cols`` channels: 87.5% waste on 8 columns, shown).

* capture: ``aten.conv2d.default`` and ``aten.convolution.default`` (not transposed) with
  integer padding; a BatchNorm right after folds into it.
* quantization: as ``linear`` (per-output-channel weights and multipliers, int32 bias).
* reference: a matmul through im2col: ``A = im2col(x)`` (one row per output pixel in (n, oh, ow)
  order, one column per (c, kh, kw), zero padding), ``B = W_q.reshape(OC, -1).T``, then as
  ``linear``; the (n, oh, ow, oc) result is transposed back to NCHW.
* back end: one GEMM with IM2COL addressing over the channels-last input (K = KH*KW*pitch; the
  packed weight is zero past the real channels). A conv (groups 1, any stride, padding,
  dilation, Conv1d too) whose input is a model input that nothing else reads, and whose
  channels do not fill whole beats, takes its input im2col'd from the host instead
  (:func:`host_im2col`): one row of ``round_up(KH*KW*C, AB)`` bytes per output pixel, K =
  KH*KW*C in (kh, kw, c) order, padded once to the beat, so a 3x3 RGB conv streams
  ``ceil(27/AB)`` beats and K = 27 per output pixel instead of ``9 * pitch/AB`` beats and K =
  9 * pitch; it is then a plain GEMM (A rows at a constant stride, no IM2COL). The host writes
  ``KH*KW/(sh*sw)`` times the input's bytes (the placement's ``gather`` map); the DMA reads no
  more than the DMA im2col did. A conv in the middle of a network cannot get its input packed
  this way: a STORE writes whole beats of ``cols`` channels at beat-aligned addresses, so the
  producing layer cannot scatter its 3 channels to the unaligned (kh, kw, c) positions of up to
  KH*KW rows; packing there would be a GATHER on the array, as costly as the padded conv.
* post-op kernel: ``requantize_pc`` with ``channel_stride`` = OH*OW.
"""

from __future__ import annotations

import dataclasses
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
    groups: int = 1
    dilation: tuple[int, int] = (1, 1)
    pad_end: tuple[int, int] | None = None
    one_d: bool = False
    kind: ClassVar[str] = "conv2d"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.conv2d.default", "aten.convolution.default",
                                       "aten.conv2d.padding", "aten.conv1d.default",
                                       "aten.conv1d.padding")
    SUPPORTED: ClassVar[str] = "Conv2d/Conv1d (any groups, dilation, padding)"
    ORDER: ClassVar[int] = 20
    FUSES_RELU: ClassVar[bool] = True

    def attrs(self) -> dict:
        oc, c, kh, kw = (int(v) for v in self.weight.shape)
        d = {"in_channels": c * self.groups, "out_channels": oc, "kernel": [kh, kw],
             "stride": list(self.stride), "padding": list(self.padding),
             "bias": self.bias is not None, "relu": self.relu}
        if not self.plain():       # only then: the plain conv's design.json stays as it was
            d.update(groups=self.groups, dilation=list(self.dilation), pad_end=list(self.pads()[2:]),
                     one_d=self.one_d)
        return d

    def plain(self) -> bool:
        """groups 1, dilation 1, symmetric padding, 2-d: the GEMM with IM2COL."""
        return self.groups == 1 and tuple(self.dilation) == (1, 1) and not self.one_d and \
            (self.pad_end is None or tuple(self.pad_end) == tuple(self.padding))

    def pads(self) -> tuple[int, int, int, int]:
        """(top, left, bottom, right)."""
        e = self.padding if self.pad_end is None else self.pad_end
        return (int(self.padding[0]), int(self.padding[1]), int(e[0]), int(e[1]))

    def dense_weight(self, w: np.ndarray) -> np.ndarray:
        """The grouped weight ``[OC, C/g, KH, KW]`` as the dense ``[OC, C, KH, KW]`` it means."""
        return dense_weight(w, self.groups)

    def cols(self, x: np.ndarray, pad_value=0) -> np.ndarray:
        """im2col of NCHW ``x`` with this conv's kernel, stride, dilation and padding."""
        kh, kw = self.weight.shape[2:]
        return im2col_general(x, (kh, kw), self.stride, self.pads(), self.dilation, pad_value)

    def out_hw(self, x_shape) -> tuple[int, int]:
        kh, kw = self.weight.shape[2:]
        t, l_, b, r = self.pads()
        dh, dw = self.dilation
        sh, sw = self.stride
        return ((x_shape[2] + t + b - dh * (kh - 1) - 1) // sh + 1,
                (x_shape[3] + l_ + r - dw * (kw - 1) - 1) // sw + 1)

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
        w = cx.const(n, args[1])
        if w.ndim not in (3, 4):
            raise cx.fail(n, f"conv with a {w.ndim - 2}-d kernel")
        one_d = w.ndim == 3
        if one_d:
            w = w[:, :, None, :]
            x_shape = cx.shape(args[0]) if hasattr(args[0], "meta") else None
            if x_shape is None or len(x_shape) != 3:
                raise cx.fail(n, "conv1d on a tensor that is not (N, C, L)")
        lift = (lambda v: (1, common.pair(v)[0])) if one_d else common.pair
        lift_pad = (lambda v: (0, common.pair(v)[0])) if one_d else common.pair
        kh, kw = w.shape[2:]
        dil = lift(dilation)
        if isinstance(padding, str):
            if padding == "valid":
                pads = (0, 0, 0, 0)
            elif padding == "same":
                if lift(stride) != (1, 1):
                    raise cx.fail(n, "conv with padding='same' and a stride other than 1")
                th, tw = dil[0] * (kh - 1), dil[1] * (kw - 1)
                pads = (th // 2, tw // 2, th - th // 2, tw - tw // 2)   # PyTorch: the extra at the end
            else:
                raise cx.fail(n, f"conv with padding={padding!r}")
        else:
            ph, pw = lift_pad(padding)
            pads = (ph, pw, ph, pw)
        if int(groups) < 1 or w.shape[0] % int(groups):
            raise cx.fail(n, f"conv with groups={groups}")
        cx.emit(cls(n.name, (cx.act(n, args[0]),), cx.shape(n), **cx.common(n), weight=w,
                    bias=cx.const(n, cx.arg(n, 2, "bias")), stride=lift(stride),
                    padding=pads[:2], groups=int(groups), dilation=dil,
                    pad_end=None if pads[2:] == pads[:2] else pads[2:], one_d=one_d), n)

    def folds_batchnorm(self) -> bool:
        return True

    def macs(self, graph) -> int:
        """One per output value and weight tap (of its group's input channels)."""
        return math.prod(self.shape) * math.prod(self.weight.shape[1:])

    def quantize(self, scales, maxabs):
        return linear.quantize_weighted(self, scales, maxabs)

    def _as4(self, x):
        return x[:, :, None, :] if self.one_d else x

    def _out(self, y, n, oh, ow, oc):
        y = y.reshape(n, oh, ow, oc).transpose(0, 3, 1, 2)
        return y[:, :, 0, :] if self.one_d else y

    def float_eval(self, ins, run):
        x = self._as4(ins[0])
        oc = self.weight.shape[0]
        if self.plain():
            kh, kw = self.weight.shape[2:]
            cols = common.im2col(x, (kh, kw), self.stride, self.padding, 0.0)
        else:
            cols = self.cols(x, 0.0)
        y = cols @ self.dense_weight(self.weight).reshape(oc, -1).T
        if self.bias is not None:
            y = y + self.bias
        oh, ow = self.out_hw(x.shape)
        return self._out(y, x.shape[0], oh, ow, oc)

    def reference(self, ins, lq, run):
        x = self._as4(ins[0])
        oc, c, kh, kw = lq.weight.shape
        if self.plain():
            cols = common.im2col(x, (kh, kw), self.stride, self.padding, 0)
        else:
            cols = self.cols(x, 0)
        acc = common.matmul_acc(cols, self.dense_weight(lq.weight).reshape(oc, -1).T, lq.bias, self.name)
        run.acc[self.name] = acc
        oh, ow = self.out_hw(x.shape)
        y = q.requantize(acc, lq.m0, lq.shift, self.relu)
        return self._out(y, x.shape[0], oh, ow, oc)

    def int_setup(self, m, lq) -> None:
        if not self.plain():
            lq = dataclasses.replace(lq, weight=self.dense_weight(lq.weight))
        linear.weighted_int_setup(self, m, lq)
        shape = m.qm.graph.node(self.inputs[0]).shape
        n, c, h, w_ = (shape[0], shape[1], 1, shape[2]) if self.one_d else shape
        kh, kw = lq.weight.shape[2:]
        t, l_, b, r = self.pads()
        # im2col as a gather: indices into the zero-padded input, flattened per sample
        idx = np.arange(c * (h + t + b) * (w_ + l_ + r)).reshape(1, c, h + t + b, w_ + l_ + r)
        m.buf(self.name, "idx", im2col_general(idx, (kh, kw), self.stride, (0, 0, 0, 0), self.dilation))

    def int_forward(self, m, ins, inputs):
        import torch
        x = ins[0][:, :, None, :] if self.one_d else ins[0]
        t, l_, b, r = self.pads()
        xp = torch.nn.functional.pad(x, (l_, r, t, b)) if (t or l_ or b or r) else x
        idx = m.const(self.name, "idx")                               # [OH*OW, C*KH*KW]
        cols = torch.index_select(xp.reshape(x.shape[0], -1), 1, idx.reshape(-1))
        acc = torch.matmul(cols.reshape(-1, idx.shape[1]), m.const(self.name, "w")) + m.const(self.name, "b")
        y = linear.requant_torch(m, acc, self)
        if self.one_d:
            n, oc, ow = self.shape
            return y.reshape(n, ow, oc).permute(0, 2, 1)
        n, oc, oh, ow = self.shape
        return y.reshape(n, oh, ow, oc).permute(0, 3, 1, 2)

    def quant_json(self, lq) -> dict:
        return linear.weighted_quant_json(self, lq)

    def weight_arrays(self, lq) -> dict:
        return linear.weighted_arrays(self, lq)

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        w, lq = linear.weighted_from_json(quant, arrays)
        pe = attrs.get("pad_end")
        return cls(**common_, weight=w.astype(np.float64), bias=None, stride=tuple(attrs["stride"]),
                   padding=tuple(attrs["padding"]), relu=attrs["relu"], groups=attrs.get("groups", 1),
                   dilation=tuple(attrs.get("dilation", (1, 1))),
                   pad_end=None if pe is None or tuple(pe) == tuple(attrs["padding"]) else tuple(pe),
                   one_d=attrs.get("one_d", False)), lq

    def lower(self, cx) -> None:
        hc = cx.host_im2col.get(self.inputs[0])
        if hc is not None:
            return lower_host_im2col(self, cx, hc)
        if not self.plain():
            return lower_wgemm_conv(self, cx)
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


def host_im2col(cx, node) -> bool:
    """Whether model input ``node`` is written im2col'd by the host for the one conv that reads
    it; if so, request its buffer and note the layout in ``cx.host_im2col`` (the conv's
    ``lower`` and ``Compiler.placement`` use it). Chosen when the input's only reader is a
    conv with groups 1 (any stride, padding, dilation; Conv1d) that streams fewer beats per
    output pixel so (``ceil(KH*KW*C / AB)`` against ``KH*KW * pitch / AB``) and the input is
    not itself a model output."""
    graph = cx.qm.graph
    users = [u for u in graph.nodes if node.name in u.inputs]
    if not cx.pack_host_inputs or len(users) != 1 or node.name in graph.outputs:
        return False
    conv = users[0]
    if conv.kind != "conv2d" or conv.groups != 1 or list(conv.inputs) != [node.name]:
        return False
    shape = tuple(node.shape)
    if len(shape) != (3 if conv.one_d else 4):
        return False
    n, c, h, w = (shape[0], shape[1], 1, shape[2]) if conv.one_d else shape
    kh, kw = (int(v) for v in conv.weight.shape[2:])
    K = kh * kw * c
    row = align(K, cx.axi)
    if row // cx.axi >= kh * kw * (align(c, cx.C) // cx.axi):
        return False                          # no beat saved: keep the channels-last input
    oh, ow = conv.out_hw((n, c, h, w))
    M = n * oh * ow
    idx = np.arange(n * c * h * w, dtype=np.int64).reshape(n, c, h, w)
    cols = im2col_general(idx, (kh, kw), conv.stride, conv.pads(), conv.dilation, -1)
    gather = np.full((M, row), -2, np.int64)
    gather[:, :K] = cols.reshape(M, c, kh, kw).transpose(0, 2, 3, 1).reshape(M, K)
    cx.layout.request("input", node.name, M * row, "input", node.name)
    cx.host_im2col[node.name] = {
        "gather": gather.ravel(), "rows": M, "row_bytes": row, "K": K, "n": n, "c": c,
        "out_hw": (oh, ow), "kernel": [kh, kw], "stride": [int(v) for v in conv.stride],
        "pad": [int(v) for v in conv.pads()], "dilation": [int(v) for v in conv.dilation],
        "k_order": "kh, kw, c"}
    return True


def lower_host_im2col(node, cx, hc) -> None:
    """The conv whose input the host wrote im2col'd (:func:`host_im2col`): a plain GEMM, M =
    N*OH*OW rows of ``row_bytes`` at a constant stride, K = KH*KW*C (the packed weight in the
    same (kh, kw, c) order, lanes padded to the beat)."""
    lq = cx.qm.layers[node.name]
    oc, c, kh, kw = lq.weight.shape
    M, K, row = hc["rows"], hc["K"], hc["row_bytes"]
    oh, ow = hc["out_hw"]
    out = output_channels_last(cx, node, hc["n"], oc, oh, ow)
    k_map = np.arange(c * kh * kw, dtype=np.int64).reshape(c, kh, kw).transpose(1, 2, 0).ravel()
    buf = node.inputs[0]
    fields = dict(a_base=lambda Lo: Lo.addr(buf), a_stride_batch=0, a_stride_m=row, a_stride_k=1,
                  c_stride_m=out.strides[2], c_stride_batch=L.view_span(out))
    cx.gemm(node, name=node.name, M=M, N=oc, K=K, batch=1, a_pass=M * row, b_packed=True,
            per_tensor=False, fields=fields, flags=0, out_buf=out.buffer, relu=node.relu,
            has_bias=lq.bias is not None,
            weight=L.ConstSpec(f"{node.name}.weight", node.name, "weight", "conv2d", k_map))


def dense_weight(w: np.ndarray, groups: int) -> np.ndarray:
    """A grouped weight ``[OC, C/g, KH, KW]`` as the block-diagonal ``[OC, C, KH, KW]``."""
    if groups == 1:
        return w
    oc, gin, kh, kw = w.shape
    gout = oc // groups
    d = np.zeros((oc, gin * groups, kh, kw), dtype=w.dtype)
    for o in range(oc):
        gi = o // gout
        d[o, gi * gin:(gi + 1) * gin] = w[o]
    return d


def im2col_general(x: np.ndarray, kernel, stride, pads, dilation, pad_value=0) -> np.ndarray:
    """NCHW ``x`` -> ``[N*OH*OW, C*KH*KW]`` (rows (n, oh, ow), columns (c, kh, kw)) with padding
    (top, left, bottom, right) and dilation (h, w)."""
    n, c, h, w = x.shape
    kh, kw = kernel
    (sh, sw), (dh, dw) = stride, dilation
    t, l_, b, r = pads
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l_, r)), constant_values=pad_value)
    oh = (h + t + b - dh * (kh - 1) - 1) // sh + 1
    ow = (w + l_ + r - dw * (kw - 1) - 1) // sw + 1
    cols = np.empty((n, oh, ow, c, kh, kw), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, :, :, i, j] = xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                                        j * dw:j * dw + sw * (ow - 1) + 1:sw].transpose(0, 2, 3, 1)
    return cols.reshape(n * oh * ow, c * kh * kw)


def channels_last_4d(cx, node, what: str):
    """The input of a windowed op as a 4-D channels-last view (n, c, h, w) with a beat-aligned
    pixel pitch: ``(view, pitch)``; a 3-D (N, C, L) tensor is height 1."""
    v = cx.strided(node.inputs[0], node, what)
    if len(v.shape) == 3:
        n, c, w = v.shape
        v = L.View(v.buffer, (n, c, 1, w), (v.strides[0], v.strides[1], 0, v.strides[2]), v.offset)
    n, c, h, w = v.shape
    pitch = v.strides[3] if w > 1 else align(c, cx.C)
    if not (v.strides[1] == 1 or c == 1) or pitch % cx.axi or pitch < c or \
            (h > 1 and v.strides[2] % cx.axi) or (n > 1 and v.strides[0] % cx.axi) or v.offset % cx.axi:
        raise cx.refuse(node, f"{what} must be channels-last with a beat-aligned channel pitch "
                              f"(strides {list(v.strides)}); re-laying it out needs a COPY")
    return v, pitch


def output_channels_last(cx, node, n, c, oh, ow):
    """Allocate the channels-last output of a windowed op and register it (3-D for a 1-d op,
    2-D (N, C) for a squeezed 1x1 mean): ``(view n,oh,ow,c)``."""
    out = cx.padded(node.name, (n, oh, ow, c), node.name)
    v4 = out.transpose((0, 3, 1, 2))
    shape = tuple(node.shape)
    if len(shape) == 4:
        cx.put(node.name, v4)
    elif len(shape) == 3:
        cx.put(node.name, L.View(out.buffer, shape, (out.strides[0], 1, out.strides[2]), out.offset))
    else:
        cx.put(node.name, L.View(out.buffer, shape, (out.strides[0], 1), out.offset))
    return out


def emit_wgemm(cx, node, v, pitch, out, *, kernel, stride, pad, dilation, N, slice_, step, mode,
               records: bytes, n_records: int, weight: bytes, relu: bool, bias: bool, group_in: int,
               shared: bool = False, depthwise: bool = False):
    """One WGEMM layer: the packed weight panels and records as data constants."""
    wsym, psym = f"{node.name}.weight", f"{node.name}.params"
    cx.layout.request("const", wsym, len(weight), "weight", node.name)
    cx.layout.consts.append(L.ConstSpec(wsym, node.name, "data", data=weight))
    cx.layout.request("const", psym, len(records), "params", node.name)
    cx.layout.consts.append(L.ConstSpec(psym, node.name, "data", data=records))
    n, c, h, w = v.shape
    _, oh, ow, _ = out.shape
    flags = (P.RELU if relu else 0) | (P.BIAS if bias else 0) | (P.PER_TENSOR if mode != P.WG_CONV else 0)
    flags |= P.W_SHARED if shared else 0
    flags |= P.DEPTHWISE if depthwise else 0
    fields = dict(n=n, in_h=h, in_w=w, out_h=oh, out_w=ow, kernel=P.pack2(*kernel),
                  stride=P.pack2(*stride), pad=P.pack2(*pad), dilation=P.pack2(*dilation),
                  in_pitch=pitch, in_stride_h=v.strides[2], in_stride_n=v.strides[0],
                  out_pitch=out.strides[2], out_stride_h=out.strides[1], out_stride_n=out.strides[0],
                  N=N, n_tiles=-(-N // cx.C), slice=slice_, slice_step=step, mode=mode,
                  records=n_records, group_in=group_in)
    cx.emit(lambda Lo, i: P.WinGemm(i, flags, in_base=cx.base(v), w_base=Lo.addr(wsym),
                                    out_base=cx.base(out), p_base=Lo.addr(psym), name=node.name,
                                    module=node.module, **fields),
            {"kind": node.kind})


def group_slices(oc: int, gin: int, gout: int, cols: int, axi: int, pitch: int):
    """(slice bytes, step bytes) of the input channels each n-tile of ``cols`` output channels
    reads: ``[nt * step, nt * step + slice)`` covers the groups of its channels; the whole pixel
    (step 0) when no beat-aligned constant step does."""
    n_tiles = -(-oc // cols)
    if cols % gout == 0 and (cols // gout * gin) % axi == 0:
        step = cols // gout * gin
        hi = max((min(nt * cols + cols, oc) - 1) // gout * gin + gin - nt * step for nt in range(n_tiles))
        sl = align(hi, axi)
        if (n_tiles - 1) * step + sl <= pitch:
            return sl, step
    return pitch, 0


def lower_wgemm_conv(node, cx) -> None:
    """A grouped / depthwise / dilated / asymmetric conv (or Conv1d) as one WGEMM."""
    lq = cx.qm.layers[node.name]
    v, pitch = channels_last_4d(cx, node, "the input")
    n, c, h, w = v.shape
    oc, gin, kh, kw = lq.weight.shape
    gout = oc // node.groups
    oh, ow = node.out_hw((n, c, h, w))
    out = output_channels_last(cx, node, n, oc, oh, ow)
    C, AB = cx.C, cx.axi
    sl, step = group_slices(oc, gin, gout, C, AB, pitch)
    n_tiles = -(-oc // C)
    wq = np.asarray(lq.weight, np.int64)
    depthwise = (gin == 1 and gout == 1 and C == AB and sl == C and step == C
                 and getattr(cx, "depthwise_mode", True))
    if depthwise:   # the core's depthwise mode: lane j of a panel = channel j's taps
        kp = align(kh * kw, AB)
        panels = np.zeros((n_tiles * C, kp), np.int8)
        panels[:oc, :kh * kw] = wq[:, 0].reshape(oc, kh * kw)
    else:           # the slice WGEMM: channel byte of the slice at every tap
        K = kh * kw * sl
        kp = align(K, AB)
        panels = np.zeros((n_tiles * C, kp), np.int8)
        for o in range(oc):
            nt, gi = o // C, o // gout
            for cl in range(gin):
                byte = gi * gin + cl - nt * step
                for ki in range(kh):
                    for kj in range(kw):
                        panels[o, (ki * kw + kj) * sl + byte] = wq[o, cl, ki, kj]
    recs = L.pack_params(lq.bias, lq.m0, lq.shift, n_tiles * C)
    t, l_, _, _ = node.pads()
    emit_wgemm(cx, node, v, pitch, out, kernel=(kh, kw), stride=node.stride, pad=(t, l_),
               dilation=node.dilation, N=oc, slice_=sl, step=step, mode=P.WG_CONV, records=recs,
               n_records=n_tiles * C, weight=panels.tobytes(), relu=node.relu,
               bias=lq.bias is not None, group_in=gin, depthwise=depthwise)
