"""``pad``: constant padding of the H and W dims of a 4-D NCHW activation (``nn.ZeroPad2d``,
``nn.ConstantPad2d``, ``F.pad(x, (l, r, t, b), value=v)``, mode ``constant``), or of the L dim
of a 3-D (N, C, L) one (``nn.ConstantPad1d``, ``F.pad(x, (l, r))``; as height 1).

* quantization: the scale passes through; the padding value is the code
  ``clip(round(value / s), -128, 127)`` (exact for 0; a value outside the input's calibrated range
  saturates, as any tensor does).
* reference: ``np.pad`` with that code.
* back end: one GATHER (:mod:`._gather`): pixels inside are the source's (identity B and
  requantization), pixels outside are ZERO lanes; a non-zero code is one more K beat, 1 for an
  outside pixel, whose B row is the code (mode CONST).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..frontend import quantize as q
from . import _gather as G
from .base import Node, register


@register
@dataclass
class Pad(Node):
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)      # left, right, top, bottom
    value: float = 0.0
    kind: ClassVar[str] = "pad"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.pad.default", "aten.constant_pad_nd.default")
    SUPPORTED: ClassVar[str] = "constant/zero padding of H, W"
    ORDER: ClassVar[int] = 72

    def attrs(self) -> dict:
        return {"pads": list(self.pads), "value": self.value}

    @classmethod
    def capture(cls, cx, n) -> None:
        t = str(n.target)
        x = cx.act(n, n.args[0])
        pads = [int(p) for p in cx.arg(n, 1, "pad")]
        if t == "aten.pad.default":
            mode, value = cx.arg(n, 2, "mode", "constant"), cx.arg(n, 3, "value", None)
        else:
            mode, value = "constant", cx.arg(n, 2, "value", 0.0)
        value = 0.0 if value is None else float(value)
        shape = cx.nodes[x].shape
        pads += [0] * (4 - len(pads)) if len(pads) < 4 else []
        if mode != "constant" or len(shape) not in (3, 4) or any(p < 0 for p in pads) or any(pads[4:]) \
                or (len(shape) == 3 and any(pads[2:])):
            raise cx.fail(n, f"{t} with mode {mode!r} and pads {pads} of a rank-{len(shape)} "
                             f"tensor (only constant, non-negative padding of H and W of NCHW, "
                             f"or of L of NCL)")
        cx.emit(cls(n.name, (x,), cx.shape(n), **cx.common(n), pads=tuple(pads[:4]), value=value), n)

    def code(self, scale: float) -> int:
        return int(q.quantize_tensor(np.array([self.value]), scale)[0])

    def quantize(self, scales, maxabs):
        s = scales[self.inputs[0]]
        return s, q.LayerQuant(ma=self.code(s))

    @property
    def one_d(self) -> bool:
        """On an (N, C, L) tensor (a model input it reads is laid out channels-last, as for
        Conv1d)."""
        return len(self.shape) == 3

    def _np_pads(self, ndim):
        l_, r, t, b = self.pads
        return ((0, 0), (0, 0), (t, b), (l_, r)) if ndim == 4 else ((0, 0), (0, 0), (l_, r))

    def float_eval(self, ins, run):
        return np.pad(ins[0], self._np_pads(np.ndim(ins[0])), constant_values=self.value)

    def reference(self, ins, lq, run):
        return np.pad(ins[0], self._np_pads(np.ndim(ins[0])), constant_values=int(lq.ma))

    def int_forward(self, m, ins, inputs):
        import torch
        pads = list(self.pads) if ins[0].dim() == 4 else list(self.pads[:2])
        return torch.nn.functional.pad(ins[0], pads, value=int(m.qm.layers[self.name].ma))

    def quant_json(self, lq) -> dict:
        return {"code": int(lq.ma)}

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_, pads=tuple(attrs["pads"]), value=attrs["value"]), q.LayerQuant(ma=int(quant["code"]))

    def lower(self, cx) -> None:
        c = self.shape[1]
        l_, _, t, _ = self.pads
        G.emit(cx, self, [self.inputs[0]], self.shape, np.eye(c, dtype=np.int64),
               [G.IDENTITY[0]] * c, [0] * c, pad=(t, l_), const_code=int(cx.qm.layers[self.name].ma))
