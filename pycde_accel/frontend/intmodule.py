"""The quantized model as a torch module on integer tensors, so torch-mlir can import the int8
form (no floating point, which the CIRCT handshake flow cannot lower).

``IntegerModule(qm)(*int8_inputs)`` returns the int8 outputs and computes bit for bit what
:func:`pycde_accel.frontend.reference.run` computes (tested), with torch integer ops only:
int8 in and out, int64 inside (accumulators; the requantize products need 64 bits); weights are
int8 constants, bias and m0 int32 constants, widened where used. Conv2d is
constant padding + an im2col gather with a constant index tensor + a matmul, as on the systolic
array. Requantize and residual add are written out with the same gemmlowp formulas as
:mod:`pycde_accel.frontend.quantize` (multiply, nudge, truncating shift, rounding shift, clamp).
Weights, biases, m0 and shift are constant tensors (buffers) of the module.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from . import graph as g
from .quantize import QuantizedModel
from .reference import im2col


def _srdhm(acc: torch.Tensor, m0: torch.Tensor, c31: torch.Tensor) -> torch.Tensor:
    """``c31`` is a constant 31 (torch-mlir lowers only tensor-by-tensor shifts)."""
    p = acc * m0                                   # |acc| < 2^31, 0 <= m0 < 2^31: no overflow
    t = p + torch.where(p >= 0, torch.full_like(p, 1 << 30), torch.full_like(p, 1 - (1 << 30)))
    zero = torch.zeros_like(t)     # 0 - t, not -t: torch-mlir lowers integer neg through f32
    return torch.where(t >= 0, torch.bitwise_right_shift(t, c31),
                       zero - torch.bitwise_right_shift(zero - t, c31))


def _rdbpot(x: torch.Tensor, shift: torch.Tensor, mask: torch.Tensor, half: torch.Tensor) -> torch.Tensor:
    """``mask = 2^shift - 1`` and ``half = mask >> 1`` are constants."""
    remainder = torch.bitwise_and(x, mask)
    threshold = half + (x < 0).to(torch.int64)
    return torch.bitwise_right_shift(x, shift) + (remainder > threshold).to(torch.int64)


def _clamp(x: torch.Tensor, relu: bool) -> torch.Tensor:
    return torch.clamp(x, 0 if relu else -128, 127)


class IntegerModule(nn.Module):
    def __init__(self, qm: QuantizedModel):
        super().__init__()
        self.qm = qm
        self._consts: dict[str, str] = {}
        self.register_buffer("shift31", torch.tensor(31, dtype=torch.int64))
        for node in qm.graph.nodes:
            lq = qm.layers.get(node.name)
            if isinstance(node, (g.Linear, g.Conv2d)):
                w = lq.weight.reshape(lq.weight.shape[0], -1).T              # [K, N]
                self._buf(node.name, "w", w, np.int8)
                self._buf(node.name, "b", lq.bias if lq.bias is not None else np.zeros(w.shape[1]), np.int32)
                self._buf(node.name, "m0", lq.m0, np.int32)
                self._buf(node.name, "shift", lq.shift)
                self._masks(node.name, lq.shift)
            if isinstance(node, g.Conv2d):
                n, c, h, w_ = qm.graph.node(node.inputs[0]).shape
                kh, kw = lq.weight.shape[2:]
                ph, pw = node.padding
                # im2col as a gather: indices into the zero-padded input, flattened per sample
                idx = np.arange(c * (h + 2 * ph) * (w_ + 2 * pw)).reshape(1, c, h + 2 * ph, w_ + 2 * pw)
                self._buf(node.name, "idx", im2col(idx, (kh, kw), node.stride, (0, 0)))
            if isinstance(node, g.MatMul):
                self._buf(node.name, "m0", np.int64(lq.m0))
                self._buf(node.name, "shift", np.int64(lq.shift))
                self._masks(node.name, lq.shift)
            if isinstance(node, g.Add):
                for k in ("ma", "mb", "shift"):
                    self._buf(node.name, k, np.int64(getattr(lq, k)))
                self._masks(node.name, lq.shift)

    def _buf(self, node: str, key: str, value, dtype=np.int64) -> None:
        """A constant; weights are stored as int8, bias and m0 as int32, and widened in forward."""
        name = f"const{len(self._consts)}"
        self.register_buffer(name, torch.from_numpy(np.asarray(value, dtype=dtype).copy()))
        self._consts[f"{node}.{key}"] = name

    def _masks(self, node: str, shift) -> None:
        mask = (np.int64(1) << np.asarray(shift, dtype=np.int64)) - 1
        self._buf(node, "mask", mask)
        self._buf(node, "half", mask >> 1)

    def _c(self, node: str, key: str) -> torch.Tensor:
        t = getattr(self, self._consts[f"{node}.{key}"])
        return t if t.dtype == torch.int64 else t.to(torch.int64)

    def forward(self, *inputs: torch.Tensor):
        v: dict[str, torch.Tensor] = {}
        for node in self.qm.graph.nodes:
            ins = [v[i] for i in node.inputs]
            c = lambda key, _n=node.name: self._c(_n, key)
            if isinstance(node, g.Input):
                y = inputs[node.index].to(torch.int64)
            elif isinstance(node, g.Linear):
                x = ins[0].reshape(-1, ins[0].shape[-1])
                acc = torch.matmul(x, c("w")) + c("b")
                y = _clamp(_rdbpot(_srdhm(acc, c("m0"), self.shift31), c("shift"), c("mask"), c("half")), node.relu).reshape(node.shape)
            elif isinstance(node, g.Conv2d):
                x = ins[0]
                ph, pw = node.padding
                xp = nn.functional.pad(x, (pw, pw, ph, ph)) if (ph or pw) else x
                idx = c("idx")                                        # [OH*OW, C*KH*KW]
                cols = torch.index_select(xp.reshape(x.shape[0], -1), 1, idx.reshape(-1))
                acc = torch.matmul(cols.reshape(-1, idx.shape[1]), c("w")) + c("b")
                y = _clamp(_rdbpot(_srdhm(acc, c("m0"), self.shift31), c("shift"), c("mask"), c("half")), node.relu)
                n, oc, oh, ow = node.shape
                y = y.reshape(n, oh, ow, oc).permute(0, 3, 1, 2)
            elif isinstance(node, g.MatMul):
                acc = torch.matmul(ins[0], ins[1])
                y = _clamp(_rdbpot(_srdhm(acc, c("m0"), self.shift31), c("shift"), c("mask"), c("half")), node.relu)
            elif isinstance(node, g.Add):
                y = _clamp(_rdbpot(ins[0] * c("ma") + ins[1] * c("mb"), c("shift"), c("mask"), c("half")), node.relu)
            elif isinstance(node, g.ReLU):
                y = torch.clamp(ins[0], min=0)
            elif isinstance(node, g.MaxPool2d):
                x = ins[0]
                if node.padding != (0, 0):
                    ph, pw = node.padding
                    x = nn.functional.pad(x, (pw, pw, ph, ph), value=-128)
                y = self._maxpool(x, node)
            elif isinstance(node, g.Reshape):
                y = ins[0].reshape(node.shape)
            elif isinstance(node, g.Transpose):
                y = ins[0].permute(*node.perm)
            else:  # pragma: no cover
                raise TypeError(type(node).__name__)
            v[node.name] = y
        outs = tuple(v[o].to(torch.int8) for o in self.qm.graph.outputs)
        return outs if len(outs) > 1 else outs[0]

    @staticmethod
    def _maxpool(x: torch.Tensor, node: g.MaxPool2d) -> torch.Tensor:
        """Max over the window taps, one strided slice per tap (no integer max_pool2d needed)."""
        (kh, kw), (sh, sw) = node.kernel, node.stride
        oh, ow = node.shape[2], node.shape[3]
        y = None
        for i in range(kh):
            for j in range(kw):
                tap = x[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
                y = tap if y is None else torch.maximum(y, tap)
        return y


def example_int_inputs(qm: QuantizedModel) -> tuple[torch.Tensor, ...]:
    return tuple(torch.zeros(qm.graph.node(n).shape, dtype=torch.int8) for n in qm.graph.inputs)
