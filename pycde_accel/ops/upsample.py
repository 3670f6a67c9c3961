"""``upsample``: nearest-neighbour upsampling of a 4-D NCHW activation by integer factors
(``nn.Upsample(scale_factor=k)``, ``nn.UpsamplingNearest2d``, ``F.interpolate(mode='nearest')``
with a scale factor or an output size that is an integer multiple of the input's), or of the L
dim of a 3-D (N, C, L) one (``nn.Upsample`` on 1-d; as height 1, factors ``(1, uw)``).

* quantization: none (the scale passes through).
* reference: ``x.repeat(uh, axis=2).repeat(uw, axis=3)`` (nearest: ``ih = oh // uh``).
* back end: one GATHER (:mod:`._gather`) with ``up = (uh, uw)``: the ``uw`` lanes of one source
  pixel are one LOAD at stride 0; identity B and requantization.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from . import _gather as G
from .base import Node, register


@register
@dataclass
class Upsample(Node):
    factors: tuple[int, int] = (2, 2)
    kind: ClassVar[str] = "upsample"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default",
                                       "aten.upsample_nearest1d.vec", "aten.upsample_nearest1d.default")
    SUPPORTED: ClassVar[str] = "nearest upsampling by integer factors"
    ORDER: ClassVar[int] = 73

    def attrs(self) -> dict:
        return {"factors": list(self.factors)}

    @classmethod
    def capture(cls, cx, n) -> None:
        x = cx.act(n, n.args[0])
        shape, out = cx.nodes[x].shape, cx.shape(n)
        ok = len(shape) in (3, 4) and out is not None and len(out) == len(shape) and \
            all(o % i == 0 for o, i in zip(out[2:], shape[2:]))
        if not ok:
            raise cx.fail(n, f"{n.target} from {shape} to {out} (only integer factors)")
        f = (out[2] // shape[2], out[3] // shape[3]) if len(shape) == 4 else (1, out[2] // shape[2])
        cx.emit(cls(n.name, (x,), out, **cx.common(n), factors=f), n)

    @property
    def one_d(self) -> bool:
        """On an (N, C, L) tensor (a model input it reads is laid out channels-last, as for
        Conv1d)."""
        return len(self.shape) == 3

    def _up(self, x):
        if np.ndim(x) == 3:
            return np.repeat(x, self.factors[1], axis=2)
        return np.repeat(np.repeat(x, self.factors[0], axis=2), self.factors[1], axis=3)

    def float_eval(self, ins, run):
        return self._up(ins[0])

    def reference(self, ins, lq, run):
        return self._up(ins[0])

    def int_forward(self, m, ins, inputs):
        if ins[0].dim() == 3:
            return ins[0].repeat_interleave(self.factors[1], dim=2)
        return ins[0].repeat_interleave(self.factors[0], dim=2).repeat_interleave(self.factors[1], dim=3)

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_, factors=tuple(attrs["factors"])), None

    def lower(self, cx) -> None:
        c = self.shape[1]
        G.emit(cx, self, [self.inputs[0]], self.shape, np.eye(c, dtype=np.int64),
               [G.IDENTITY[0]] * c, [0] * c, up=self.factors)
