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

from .quantize import QuantizedModel


def srdhm(acc: torch.Tensor, m0: torch.Tensor, c31: torch.Tensor) -> torch.Tensor:
    """``c31`` is a constant 31 (torch-mlir lowers only tensor-by-tensor shifts)."""
    p = acc * m0                                   # |acc| < 2^31, 0 <= m0 < 2^31: no overflow
    t = p + torch.where(p >= 0, torch.full_like(p, 1 << 30), torch.full_like(p, 1 - (1 << 30)))
    zero = torch.zeros_like(t)     # 0 - t, not -t: torch-mlir lowers integer neg through f32
    return torch.where(t >= 0, torch.bitwise_right_shift(t, c31),
                       zero - torch.bitwise_right_shift(zero - t, c31))


def rdbpot(x: torch.Tensor, shift: torch.Tensor, mask: torch.Tensor, half: torch.Tensor) -> torch.Tensor:
    """``mask = 2^shift - 1`` and ``half = mask >> 1`` are constants."""
    remainder = torch.bitwise_and(x, mask)
    threshold = half + (x < 0).to(torch.int64)
    return torch.bitwise_right_shift(x, shift) + (remainder > threshold).to(torch.int64)


def clamp(x: torch.Tensor, relu: bool) -> torch.Tensor:
    return torch.clamp(x, 0 if relu else -128, 127)


class IntegerModule(nn.Module):
    """Each node's ``int_setup`` hook registers its constants (:meth:`buf`, :meth:`masks`), its
    ``int_forward`` hook computes it from its inputs (:meth:`const` reads a constant back)."""

    def __init__(self, qm: QuantizedModel):
        super().__init__()
        self.qm = qm
        self._consts: dict[str, str] = {}
        self.register_buffer("shift31", torch.tensor(31, dtype=torch.int64))
        for node in qm.graph.nodes:
            node.int_setup(self, qm.layers.get(node.name))

    def buf(self, node: str, key: str, value, dtype=np.int64) -> None:
        """A constant; weights are stored as int8, bias and m0 as int32, and widened in forward."""
        name = f"const{len(self._consts)}"
        self.register_buffer(name, torch.from_numpy(np.asarray(value, dtype=dtype).copy()))
        self._consts[f"{node}.{key}"] = name

    def masks(self, node: str, shift) -> None:
        """The constants ``mask = 2^shift - 1`` and ``half = mask >> 1`` of :func:`rdbpot`."""
        mask = (np.int64(1) << np.asarray(shift, dtype=np.int64)) - 1
        self.buf(node, "mask", mask)
        self.buf(node, "half", mask >> 1)

    def const(self, node: str, key: str) -> torch.Tensor:
        t = getattr(self, self._consts[f"{node}.{key}"])
        return t if t.dtype == torch.int64 else t.to(torch.int64)

    def forward(self, *inputs: torch.Tensor):
        v: dict[str, torch.Tensor] = {}
        for node in self.qm.graph.nodes:
            v[node.name] = node.int_forward(self, [v[i] for i in node.inputs], inputs)
        outs = tuple(v[o].to(torch.int8) for o in self.qm.graph.outputs)
        return outs if len(outs) > 1 else outs[0]


def example_int_inputs(qm: QuantizedModel) -> tuple[torch.Tensor, ...]:
    return tuple(torch.zeros(qm.graph.node(n).shape, dtype=torch.int8) for n in qm.graph.inputs)
