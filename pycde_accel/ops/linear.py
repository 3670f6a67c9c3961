"""``linear``: ``y = x @ W.T + b`` over the last axis; W ``[out, in]``; ``relu``: a fused ReLU.

* capture: ``aten.linear.default`` (weight and bias are parameters); a BatchNorm right after
  a 2-d Linear folds into it.
* quantization: per-output-channel weight scales, int32 bias, per-channel ``(m0, shift)`` of
  ``s_in * s_w[c] / s_out`` (:func:`~pycde_accel.frontend.quantize.quantize_multiplier`), the
  output scale raised where needed so that every multiplier is below 1.
* reference: ``acc = x.reshape(-1, in) @ W_q.T + bias_q`` (int32-checked), then
  ``requantize(acc, m0[n], shift[n], relu)`` per column.
* back end: one GEMM (B a packed weight, per-channel records); the input rows may be any equal
  byte runs at a constant beat-aligned stride (K is the run's span, zero weights face the gaps);
  other inputs are copied into padded rows first (``Compiler.relayout``).
* post-op kernel: ``requantize_pc`` (``requantize_relu_pc`` with the ReLU).
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
from . import common
from .base import Node, register


# ---- shared by the weighted matmul ops (linear, conv2d) ----------------------------------------
def quantize_weighted(node, scales, maxabs):
    """Per-channel weight scales, int32 bias and per-channel multipliers (linear and conv2d)."""
    s_in = scales[node.inputs[0]]
    ws = q.weight_scales(node.weight)
    s_out = max(q.act_scale(maxabs[node.name]), float((s_in * ws).max()) * (1 + 2.0 ** -20))
    mults = [q.quantize_multiplier(float(s_in * w / s_out)) for w in ws]
    return s_out, q.LayerQuant(
        weight=q.quantize_weights(node.weight, ws),
        bias=None if node.bias is None else q.quantize_bias(node.bias, s_in, ws),
        weight_scales=ws,
        m0=np.array([m for m, _ in mults], dtype=np.int64),
        shift=np.array([s for _, s in mults], dtype=np.int64))


def weighted_int_setup(node, m, lq) -> None:
    w = lq.weight.reshape(lq.weight.shape[0], -1).T              # [K, N]
    m.buf(node.name, "w", w, np.int8)
    m.buf(node.name, "b", lq.bias if lq.bias is not None else np.zeros(w.shape[1]), np.int32)
    m.buf(node.name, "m0", lq.m0, np.int32)
    m.buf(node.name, "shift", lq.shift)
    m.masks(node.name, lq.shift)


def weighted_quant_json(node, lq) -> dict:
    return {"weight": f"{node.name}.weight", "bias": f"{node.name}.bias" if lq.bias is not None else None,
            "m0": _ints(lq.m0), "shift": _ints(lq.shift)}


def weighted_arrays(node, lq) -> dict:
    arrays = {f"{node.name}.weight": lq.weight.astype(np.int8)}
    if lq.bias is not None:
        arrays[f"{node.name}.bias"] = lq.bias.astype(np.int32)
    return arrays


def weighted_from_json(quant: dict, arrays: dict):
    """(int8 weight codes as int64, LayerQuant) of a linear/conv2d design.json entry."""
    w = arrays[quant["weight"]].astype(np.int64)
    b = arrays[quant["bias"]].astype(np.int64) if quant["bias"] is not None else None
    return w, q.LayerQuant(weight=w, bias=b, m0=np.array(quant["m0"], np.int64),
                           shift=np.array(quant["shift"], np.int64))


def weighted_postop(node, lq, base: str, channel_stride: int):
    kind = "requantize_relu_pc" if node.relu else "requantize_pc"
    k = kernels.requantize(math.prod(node.shape), relu=node.relu, per_channel=True, name=f"{base}_{kind}")
    return k, kind, {"m0": common.int_list(lq.m0), "shift": common.int_list(lq.shift),
                     "channels": int(node.shape[1]),
                     "channel_stride": channel_stride}


def _ints(v) -> list[int] | int:
    return common.json_ints(v)


def requant_torch(m, acc, node):
    """The int64 torch form of ``requantize(acc, m0, shift, relu)`` with ``node``'s constants."""
    from ..frontend import intmodule as im
    c = lambda key: m.const(node.name, key)  # noqa: E731
    return im.clamp(im.rdbpot(im.srdhm(acc, c("m0"), m.shift31), c("shift"), c("mask"), c("half")), node.relu)


@register
@dataclass
class Linear(Node):
    weight: np.ndarray = None
    bias: np.ndarray | None = None
    relu: bool = False
    kind: ClassVar[str] = "linear"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.linear.default",)
    SUPPORTED: ClassVar[str] = "Linear"
    ORDER: ClassVar[int] = 10
    FUSES_RELU: ClassVar[bool] = True

    @property
    def in_features(self) -> int:
        return int(self.weight.shape[1])

    @property
    def out_features(self) -> int:
        return int(self.weight.shape[0])

    def attrs(self) -> dict:
        return {"in_features": self.in_features, "out_features": self.out_features,
                "bias": self.bias is not None, "relu": self.relu}

    @classmethod
    def capture(cls, cx, n) -> None:
        args = list(n.args)
        cx.emit(cls(n.name, (cx.act(n, args[0]),), cx.shape(n), **cx.common(n),
                    weight=cx.const(n, args[1]), bias=cx.const(n, cx.arg(n, 2, "bias"))), n)

    def folds_batchnorm(self) -> bool:
        return len(self.shape) == 2

    def macs(self, graph) -> int:
        """One per output value and input feature."""
        return math.prod(self.shape) * math.prod(self.weight.shape[1:])

    def quantize(self, scales, maxabs):
        return quantize_weighted(self, scales, maxabs)

    def float_eval(self, ins, run):
        y = ins[0] @ self.weight.T
        return y + self.bias if self.bias is not None else y

    def reference(self, ins, lq, run):
        x = ins[0]
        acc = common.matmul_acc(x.reshape(-1, x.shape[-1]), lq.weight.T, lq.bias, self.name)
        run.acc[self.name] = acc
        return q.requantize(acc, lq.m0, lq.shift, self.relu).reshape(self.shape)

    def int_setup(self, m, lq) -> None:
        weighted_int_setup(self, m, lq)

    def int_forward(self, m, ins, inputs):
        import torch
        x = ins[0].reshape(-1, ins[0].shape[-1])
        acc = torch.matmul(x, m.const(self.name, "w")) + m.const(self.name, "b")
        return requant_torch(m, acc, self).reshape(self.shape)

    def quant_json(self, lq) -> dict:
        return weighted_quant_json(self, lq)

    def weight_arrays(self, lq) -> dict:
        return weighted_arrays(self, lq)

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        w, lq = weighted_from_json(quant, arrays)
        return cls(**common_, weight=w.astype(np.float64), bias=None, relu=attrs["relu"]), lq

    def lower(self, cx) -> None:
        K, N = self.in_features, self.out_features
        for attempt in range(2):
            x = cx.tensor(self.inputs[0])
            offs = x.offs.reshape(-1, K)
            M = offs.shape[0]
            starts = offs.min(axis=1)
            rel = offs - starts[:, None]
            stride_m = int(starts[1] - starts[0]) if M > 1 else 0
            ok = (np.array_equal(rel, np.broadcast_to(rel[0], rel.shape))
                  and np.array_equal(starts, starts[0] + stride_m * np.arange(M))
                  and starts[0] % cx.axi == 0 and stride_m % cx.axi == 0 and stride_m >= 0)
            if ok or attempt or cx.relayout(self.inputs[0], self, force=True) is None:
                break
        if not ok:
            raise cx.refuse(self, "the input rows are not equal byte runs at a constant "
                                  "beat-aligned stride; re-laying them out needs a COPY, which the "
                                  "accelerator's commands cannot express")
        keff = int(rel[0].max()) + 1
        k_map = np.full(keff, -1, np.int64)
        k_map[rel[0]] = np.arange(K)
        out = cx.padded(self.name, self.shape, self.name)
        cx.put(self.name, out)
        a_base = int(starts[0])
        lq = cx.qm.layers[self.name]
        fields = dict(a_base=lambda Lo, b=x.buffer, o=a_base: Lo.addr(b) + o, a_stride_m=stride_m,
                      a_stride_k=1, a_stride_batch=M * stride_m,
                      c_stride_m=out.strides[-2] if len(out.shape) > 1 else 0,
                      c_stride_batch=L.view_span(out))
        cx.gemm(self, name=self.name, M=M, N=N, K=keff, batch=1, a_pass=M * align(keff, cx.axi),
                b_packed=True, per_tensor=False, fields=fields, flags=0, out_buf=out.buffer,
                relu=self.relu, has_bias=lq.bias is not None,
                weight=L.ConstSpec(f"{self.name}.weight", self.name, "weight", "linear", k_map))

    def postop(self, lq, base):
        return weighted_postop(self, lq, base, 1)
