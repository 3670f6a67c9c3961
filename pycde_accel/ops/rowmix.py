"""``rowmix``: a row reduction over the last dim, broadcast back over that dim, as a GEMM with
a fixed integer matrix: ``y = alpha * (x @ M)`` with ``M`` one of

* ``center`` (``M = L*I - J``, ``alpha = a / L``): ``y = a * (x - mean(x))``;
* ``sum`` (``M = J``, ``alpha = a``): ``y = a * sum(x)`` in every element of the row;
* ``mean`` (``M = J``, ``alpha = a / L``): ``y = a * mean(x)`` in every element of the row;
* ``rotate`` (a permutation, ``alpha = 1``): ``y[j] = x[(j + offset) mod L]``, the cyclic
  rotation a row maximum is built from (``max(x, rotate(x, 1))``, then by 2, 4, ...: after
  ``ceil(log2 L)`` steps every element holds the row's maximum),

``L`` the length of the last dim, ``J`` the all-ones L x L matrix, ``a`` a constant factor
(``scale``; the attention scores' ``1/sqrt(d)`` rides on the centering of the softmax).
No ATen target of its own: LayerNorm and softmax (``ops/layer_norm.py``, ``ops/softmax.py``)
are captured as chains of rowmix, mul and lut nodes.

* quantization: the weight codes are ``M`` itself (entries ``L - 1`` and ``-1``, or ``1``: int8
  for ``L <= 128``), so the accumulator ``acc = q_x @ M`` is the exact integer
  ``L * sum-free x`` (center) or row sum; one per-tensor multiplier ``s_in * alpha / s_out``
  (``s_out`` calibrated, raised so that the multiplier stays below 1) requantizes it; a rotation
  keeps the scale and requantizes by the identity (``m0 = 2^31 - 1``, shift 0: exact). The only
  rounding is the final requantization: ``|y_q * s_out - alpha * (q_x @ M) * s_in| <= s_out / 2``
  (inside the int8 range).
* reference, kernel: those of ``linear`` (per-channel records that are all equal,
  ``requantize_pc``).
* back end: ``sum`` and ``mean`` with ``a > 0`` are one ROWRED (``backend/program.py``: the
  vector engine's row-reduction unit, VEC ROWRED, streaming a beat per cycle): the row sum
  requantized by the same ``m0``/``shift``, broadcast over the row -- the same integers as
  the GEMM with ``J``, without the L x L weights; ``center``, ``rotate`` and a negative ``a``
  stay one GEMM (those of ``linear``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..backend import program as P
from ..frontend import quantize as q
from .base import register
from .linear import Linear

MODES = ("center", "sum", "mean", "rotate")
#: the longest row a centering takes: M's entries L - 1 must be int8 weight codes (at most 127)
MAX_ROW = 128


def matrix(mode: str, length: int, offset: int = 0) -> np.ndarray:
    """The integer weight ``W = M^T`` (int64, L x L, ``[out, in]`` as a Linear's) of ``mode``."""
    if mode == "rotate":
        w = np.zeros((length, length), np.int64)
        w[np.arange(length), (np.arange(length) + offset) % length] = 1
        return w
    j = np.ones((length, length), np.int64)
    return length * np.eye(length, dtype=np.int64) - j if mode == "center" else j


def row_views(cx, node):
    """The rows of ``node``'s input as ROWRED reads them: ``(buffer, first byte, row stride,
    rows)`` when they are equal runs of the last dim's elements, each starting on a beat, at a
    constant beat-aligned stride (after one re-layout if need be), else None."""
    length = int(node.shape[-1])
    for attempt in range(2):
        x = cx.tensor(node.inputs[0])
        offs = x.offs.reshape(-1, length)
        rows = offs.shape[0]
        starts = offs[:, 0]
        stride = int(starts[1] - starts[0]) if rows > 1 else 0
        ok = (np.array_equal(offs - starts[:, None], np.broadcast_to(np.arange(length),
                                                                     offs.shape))
              and np.array_equal(starts, starts[0] + stride * np.arange(rows))
              and starts[0] % cx.axi == 0 and stride % cx.axi == 0 and stride >= 0)
        if ok:
            return x.buffer, int(starts[0]), stride, rows
        if attempt or cx.relayout(node.inputs[0], node, force=True) is None:
            return None
    return None


def emit_rowred(cx, node, op: int, m0: int, shift: int) -> bool:
    """One ROWRED layer for ``node`` (output: the padded layout of its shape), its row R
    (``op``: contract.ROW_*) requantized by ``m0``/``shift``; False (nothing emitted) when its
    input rows do not suit it (:func:`row_views`)."""
    rv = row_views(cx, node)
    if rv is None:
        return False
    buf, first, stride, rows = rv
    length = int(node.shape[-1])
    out = cx.padded(node.name, node.shape, node.name)
    cx.put(node.name, out)
    pitch = int(out.strides[-2]) if len(out.shape) > 1 else -(-length // cx.C) * cx.C
    cx.emit(lambda Lo, i: P.RowRed(i, 0, Lo.addr(buf) + first, cx.base(out), rows, length,
                                   stride, pitch, int(op), int(m0), int(shift),
                                   name=node.name, module=node.module), {"kind": node.kind})
    return True


def alpha_of(mode: str, length: int, scale: float) -> float:
    return scale / length if mode in ("center", "mean") else scale


def emit(cx, n, x: str, mode: str, scale: float = 1.0, suffix: str = "", offset: int = 0) -> str:
    """Add a rowmix node over the last dim of ``x`` (named after fx node ``n`` and ``suffix``)
    to the graph; returns its name."""
    shape = tuple(cx.nodes[x].shape)
    length = int(shape[-1])
    if mode == "center" and length > MAX_ROW:
        raise cx.fail(n, f"{n.target} over a last dim of {length} (at most {MAX_ROW})")
    m = matrix(mode, length, offset)
    node = RowMix(f"{n.name}{suffix}", (x,), shape, **cx.common(n),
                  weight=alpha_of(mode, length, scale) * m.astype(np.float64), bias=None,
                  mode=mode, scale=float(scale), offset=int(offset))
    cx.graph.nodes.append(node)
    cx.nodes[node.name] = node
    return node.name


@register
@dataclass
class RowMix(Linear):
    mode: str = "center"
    scale: float = 1.0
    offset: int = 0
    kind: ClassVar[str] = "rowmix"
    ATEN: ClassVar[tuple[str, ...]] = ()
    SUPPORTED: ClassVar[str] = ""
    ORDER: ClassVar[int] = 84
    FUSES_RELU: ClassVar[bool] = False

    def attrs(self) -> dict:
        return {"mode": self.mode, "scale": self.scale, "offset": self.offset,
                "length": int(self.shape[-1]), "relu": False}

    def folds_batchnorm(self) -> bool:
        return False

    def quantize(self, scales, maxabs):
        s_in = scales[self.inputs[0]]
        length = int(self.shape[-1])
        if self.mode == "rotate":
            return s_in, q.LayerQuant(weight=matrix("rotate", length, self.offset), bias=None,
                                      weight_scales=np.ones(length),
                                      m0=np.full(length, (1 << 31) - 1, np.int64),
                                      shift=np.zeros(length, np.int64))
        alpha = alpha_of(self.mode, length, self.scale)
        s_out = max(q.act_scale(maxabs[self.name]), s_in * abs(alpha) * (1 + 2.0 ** -20))
        m0, shift = q.quantize_multiplier(s_in * abs(alpha) / s_out)
        w = matrix(self.mode, length) * (1 if alpha >= 0 else -1)
        return s_out, q.LayerQuant(weight=w, bias=None,
                                   weight_scales=np.full(length, abs(alpha)),
                                   m0=np.full(length, m0, np.int64),
                                   shift=np.full(length, shift, np.int64))

    def macs(self, graph) -> int:
        """0 for a row sum or mean (ROWRED adds, it multiplies nothing: no array work), else
        those of the GEMM."""
        return 0 if self.on_rowred else super().macs(graph)

    @property
    def on_rowred(self) -> bool:
        """Whether the back end runs this node as ROWRED (:meth:`lower`, when its rows suit)."""
        return self.mode in ("sum", "mean") and self.scale > 0

    def lower(self, cx) -> None:
        from .. import contract
        if self.on_rowred:
            lq = cx.qm.layers[self.name]
            if emit_rowred(cx, self, contract.ROW_SUM, int(lq.m0[0]), int(lq.shift[0])):
                return
        super().lower(cx)

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        node, lq = super().from_json(common_, {"relu": False}, quant, arrays)
        mode, length = attrs["mode"], int(attrs["length"])
        node.mode, node.scale, node.offset = mode, float(attrs["scale"]), int(attrs["offset"])
        node.weight = alpha_of(mode, length, node.scale) * \
            matrix(mode, length, node.offset).astype(np.float64)
        return node, lq
