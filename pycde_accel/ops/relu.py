"""``relu``: a standalone ReLU (one not fused into its producer): ``max(q, 0)`` on int8, the
scale unchanged.

A ReLU right after a Linear, Conv2d, matmul or add that is that op's only consumer (and not a
model output) is folded into it instead (:func:`pycde_accel.frontend.graph.fuse_relu`): the
producer's final clamp becomes [0, 127].

* back end: one RELU layer (the vector engine's ``VEC ADD`` of ``x`` with itself, ma=1, mb=0,
  shift 0, RELU).
* post-op kernel: ``clamp`` to [0, 127].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..backend import program as P
from ..frontend import quantize as q
from ..lowering import kernels
from .base import Node, register


@register
@dataclass
class ReLU(Node):
    kind: ClassVar[str] = "relu"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.relu.default", "aten.relu_.default")
    SUPPORTED: ClassVar[str] = "ReLU"
    ORDER: ClassVar[int] = 30
    #: folds into a producer with ``FUSES_RELU`` (graph.fuse_relu)
    FOLDS_INTO_PRODUCER: ClassVar[bool] = True

    @classmethod
    def capture(cls, cx, n) -> None:
        cx.emit(cls(n.name, (cx.act(n, n.args[0]),), cx.shape(n), **cx.common(n)), n)

    def float_eval(self, ins, run):
        return np.maximum(ins[0], 0.0)

    def reference(self, ins, lq, run):
        return q.relu_int8(ins[0])

    def int_forward(self, m, ins, inputs):
        import torch
        return torch.clamp(ins[0], min=0)

    def lower(self, cx) -> None:
        ins, out, dims, strides = cx.eltwise(self, [self.inputs[0]])
        cx.emit(lambda Lo, i: P.Relu(i, 0, cx.base(ins[0]), cx.base(out), dims, strides[0], strides[1],
                                     name=self.name, module=self.module), {"kind": "relu"})

    def postop(self, lq, base):
        return kernels.clamp(math.prod(self.shape), lo=0, hi=127, name=f"{base}_clamp"), "clamp", {}
