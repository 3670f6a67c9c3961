"""``slice``: ``x[..., start:stop, ...]`` along one dim (step 1): ``aten.slice.Tensor``,
``narrow``, ``select`` (an index, not of a channel: the dim goes), and the pieces of ``split``/``split_with_sizes``/``chunk`` taken by getitem.

* quantization: none (the scale passes through).
* reference: the slice of the codes.
* back end: along a dim other than the channels (N, H, W of NCHW; the rows of (N, F)) a view:
  no layer, the tensor's element offsets are sliced. Along the channels (dim 1 of NCHW, the
  features of (N, F)) one GATHER (:mod:`._gather`) whose B selects the channels; with a
  beat-aligned start its channel tiles stream only their own beats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..backend import program as P
from . import _gather as G
from .base import Node, register


def _piece(cls, cx, n, x: str, dim: int, start: int, stop: int, shape=None) -> None:
    src = cx.nodes[x].shape
    shape = tuple(shape) if shape is not None else src[:dim] + (stop - start,) + src[dim + 1:]
    cx.emit(cls(n.name, (x,), shape, **cx.common(n), dim=dim, start=start, stop=stop), n)


@register
@dataclass
class Slice(Node):
    dim: int = 1
    start: int = 0
    stop: int = 0
    kind: ClassVar[str] = "slice"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.slice.Tensor", "aten.narrow.default", "aten.split.Tensor",
                                       "aten.split_with_sizes.default", "aten.chunk.default",
                                       "aten.select.int")
    SUPPORTED: ClassVar[str] = "slice/narrow/split/chunk"
    ORDER: ClassVar[int] = 61

    def attrs(self) -> dict:
        return {"dim": self.dim, "start": self.start, "stop": self.stop}

    @classmethod
    def capture(cls, cx, n) -> None:
        t = str(n.target)
        x = cx.act(n, n.args[0])
        shape = cx.nodes[x].shape
        rank = len(shape)
        if t == "aten.select.int":
            dim = int(n.args[1]) % rank
            i = int(n.args[2]) % shape[dim]
            if (rank == 4 and dim == 1) or (rank == 2 and dim == 1):
                raise cx.fail(n, f"{t} of one channel (index a channel range with a slice)")
            _piece(cls, cx, n, x, dim, i, i + 1, cx.shape(n))
            return
        if t in ("aten.slice.Tensor", "aten.narrow.default"):
            dim = int(cx.arg(n, 1, "dim", 0)) % rank
            size = shape[dim]
            if t == "aten.narrow.default":
                start = int(cx.arg(n, 2, "start")) % size
                stop = start + int(cx.arg(n, 3, "length"))
            else:
                start, stop = cx.arg(n, 2, "start", None), cx.arg(n, 3, "end", None)
                if int(cx.arg(n, 4, "step", 1)) != 1:
                    raise cx.fail(n, f"{t} with step {cx.arg(n, 4, 'step', 1)} (only step 1)")
                start, stop, _ = slice(start, stop).indices(size)
            if (start, stop) == (0, size):
                cx.alias[n.name] = x
                return
            _piece(cls, cx, n, x, dim, start, stop, cx.shape(n))
            return
        if t == "aten.chunk.default":
            chunks, dim = int(n.args[1]), int(cx.arg(n, 2, "dim", 0)) % rank
            step = -(-shape[dim] // chunks)
            sizes = [min(step, shape[dim] - i) for i in range(0, shape[dim], step)]
        elif t == "aten.split.Tensor":
            ss, dim = n.args[1], int(cx.arg(n, 2, "dim", 0)) % rank
            if isinstance(ss, (list, tuple)):
                sizes = [int(v) for v in ss]
            else:
                sizes = [min(int(ss), shape[dim] - i) for i in range(0, shape[dim], int(ss))]
        else:
            sizes, dim = [int(v) for v in n.args[1]], int(cx.arg(n, 2, "dim", 0)) % rank
        bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(int)

        def getitem(cx_, g, i, x=x, dim=dim, bounds=bounds):
            _piece(cls, cx_, g, x, dim, int(bounds[i]), int(bounds[i + 1]))
        cx.multi[n.name] = getitem

    def _slices(self, rank):
        return tuple(slice(self.start, self.stop) if d == self.dim else slice(None) for d in range(rank))

    def float_eval(self, ins, run):
        return ins[0][self._slices(ins[0].ndim)].reshape(self.shape)

    def reference(self, ins, lq, run):
        return ins[0][self._slices(ins[0].ndim)].reshape(self.shape)

    def int_forward(self, m, ins, inputs):
        return ins[0].narrow(self.dim, self.start, self.stop - self.start).reshape(self.shape)

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_, dim=attrs["dim"], start=attrs["start"], stop=attrs["stop"]), None

    def lower(self, cx) -> None:
        t = cx.tensor(self.inputs[0])
        rank = len(t.shape)
        channel = (rank == 4 and self.dim == 1) or (rank == 2 and self.dim == 1)
        if not channel:
            cx.set_tensor(self.name, t.buffer, t.offs[self._slices(rank)].reshape(self.shape))
            return
        c_in, c = t.shape[1], self.stop - self.start
        B = np.zeros((c, c_in), np.int64)
        B[np.arange(c), self.start + np.arange(c)] = 1
        aligned = self.start % cx.axi == 0
        start = self.start if aligned else self.start // cx.axi * cx.axi
        G.emit(cx, self, [self.inputs[0]], self.shape, B, [G.IDENTITY[0]] * c, [0] * c,
               mode=P.G_CAT if aligned else 0, src_start=start)
