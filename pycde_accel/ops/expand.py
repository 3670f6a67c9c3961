"""``expand``: ``x.expand(*sizes)`` / broadcasting a size-1 dim to a larger size
(``aten.expand.default``), for example the per-channel gate of squeeze-and-excitation
``(N, C, 1, 1) -> (N, C, H, W)``.

* quantization: none (the scale passes through).
* reference: ``np.broadcast_to``.
* back end: of NCHW, a broadcast of H and W is a GATHER's upsampling by ``(H, W)`` (one source
  pixel per output pixel, a stride-0 LOAD of its lanes), of C a B whose lanes all select channel
  0; of N (and of the rows of (N, F)) a view with a zero stride, no layer. Of (N, F), a broadcast
  of F is a B of ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from . import _gather as G
from .base import Node, register


@register
@dataclass
class Expand(Node):
    kind: ClassVar[str] = "expand"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.expand.default",)
    SUPPORTED: ClassVar[str] = "expand/broadcast"
    ORDER: ClassVar[int] = 62

    @classmethod
    def capture(cls, cx, n) -> None:
        if not cx.is_act(n.args[0]) and cx.const(n, n.args[0]) is not None:
            from . import param     # an expanded parameter (a class token): the expanded tensor
            param.activate(cx, n, n.args[0], cx.shape(n))
            cx.alias[n.name] = cx.alias[n.args[0].name]
            return
        x = cx.act(n, n.args[0])
        src, out = tuple(cx.nodes[x].shape), tuple(cx.shape(n))
        if len(src) != len(out) or len(out) not in (2, 4) or \
                any(s != o and s != 1 for s, o in zip(src, out)):
            raise cx.fail(n, f"aten.expand.default from {list(src)} to {list(out)} (only size-1 "
                             f"dims of NCHW or (N, F), same rank)")
        if src == out:
            cx.alias[n.name] = x
            return
        cx.emit(cls(n.name, (x,), out, **cx.common(n)), n)

    def float_eval(self, ins, run):
        return np.broadcast_to(ins[0], self.shape).copy()

    def reference(self, ins, lq, run):
        return np.broadcast_to(ins[0], self.shape).copy()

    def int_forward(self, m, ins, inputs):
        return ins[0].expand(*self.shape)

    def lower(self, cx) -> None:
        t = cx.tensor(self.inputs[0])
        src = t.shape
        mid = (src[0],) + tuple(self.shape[1:])          # everything but N
        if mid != tuple(src):
            c_in, c = src[1], mid[1]
            B = np.ones((c, 1), np.int64) if c_in == 1 and c > 1 else np.eye(c, dtype=np.int64)
            up = (mid[2] // src[2], mid[3] // src[3]) if len(src) == 4 else (1, 1)
            inner = _Inner(f"{self.name}.bcast" if mid[0] != self.shape[0] else self.name, self)
            G.emit(cx, inner, [self.inputs[0]], mid, B, [G.IDENTITY[0]] * c, [0] * c, up=up)
            t = cx.tensor(inner.name)
        if mid[0] != self.shape[0]:
            cx.set_tensor(self.name, t.buffer, np.broadcast_to(t.offs, self.shape).copy())


class _Inner:
    """The node the broadcast layer of an N-and-more expand reports as."""
    kind = "expand"

    def __init__(self, name, node):
        self.name, self.module, self.source = name, node.module, node.source
