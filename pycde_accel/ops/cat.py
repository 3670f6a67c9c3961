"""``cat``: ``torch.cat`` of up to 4 activations along the channels of NCHW (dim 1) or the
features of (N, F) (dim 1).

* quantization: ``s_y = max(s_i)`` (no calibration needed, nothing saturates); input i is
  rescaled by ``s_i / s_y`` with a per-channel requantization ``(m0, shift) =
  quantize_multiplier(s_i / s_y)`` (the identity ``(2^31 - 1, 0)`` for the largest scale).
* reference: ``concatenate([requantize(x_i, m0_i, shift_i)], axis=1)``.
* back end: one GATHER (:mod:`._gather`, mode CAT): the A row of an output pixel is its input
  pixels' channel vectors side by side (one LOAD per input, at its word offset), B the
  concatenation's selection, each channel tile streaming only the K beats its channels come
  from. Every input is read once and the output written once; the channel offsets of the inputs
  need no alignment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..backend import program as P
from ..frontend import quantize as q
from . import _gather as G
from .base import Node, register


def _cat_rows(cls, cx, n, xs, shapes) -> None:
    """``cat`` along the sequence dim 1 of ``(N, L_i, D)`` tensors of which one is an activation
    and the others parameters (a class token before the tokens): the activation padded with
    zero rows where the parameters go (``pad`` of H, the ``(N, L, D)`` rows seen as the pixels
    of an NCHW ``(N, D, L, 1)``: views), plus one parameter tensor holding the parameters' rows
    and zeros (``add``)."""
    from . import param
    acts = [i for i, x in enumerate(xs) if cx.nodes[x].kind != "param"]
    if len(acts) != 1:
        raise cx.fail(n, f"{n.target} of {len(xs)} tensors of rank 3 along dim 1 with "
                         f"{len(acts)} activations (only one activation with parameters: a "
                         f"class token)")
    ia = acts[0]
    N, D = shapes[0][0], shapes[0][2]
    total = sum(s[1] for s in shapes)
    before = sum(s[1] for s in shapes[:ia])
    add = cx.expander(n)

    x, L = xs[ia], shapes[ia][1]
    t = add("transpose", [x], (N, D, L), perm=(0, 2, 1))
    t = add("reshape", [t], (N, D, L, 1))
    t = add("pad", [t], (N, D, total, 1), pads=(0, 0, before, total - L - before), value=0.0)
    t = add("reshape", [t], (N, D, total))
    t = add("transpose", [t], (N, total, D), perm=(0, 2, 1))
    value = np.concatenate([cx.nodes[v].value if i != ia else np.zeros(s)
                            for i, (v, s) in enumerate(zip(xs, shapes))], axis=1)
    rows = param.Param(f"{n.name}_rows", (), (N, total, D), **cx.common(n), value=value)
    cx.graph.nodes.append(rows)
    cx.nodes[rows.name] = rows
    cx.alias[n.name] = add("add", [t, rows.name], (N, total, D))


@register
@dataclass
class Cat(Node):
    dim: int = 1
    kind: ClassVar[str] = "cat"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.cat.default", "aten.concat.default")
    SUPPORTED: ClassVar[str] = "cat along channels"
    ORDER: ClassVar[int] = 54

    def attrs(self) -> dict:
        return {"dim": self.dim}

    @classmethod
    def capture(cls, cx, n) -> None:
        t = str(n.target)
        xs = [cx.act(n, a) for a in n.args[0]]
        shapes = [cx.nodes[x].shape for x in xs]
        rank = len(shapes[0])
        dim = int(cx.arg(n, 1, "dim", 0)) % rank
        if rank == 3 and dim == 1 and all(s[0] == shapes[0][0] and s[2] == shapes[0][2]
                                          for s in shapes):
            _cat_rows(cls, cx, n, xs, shapes)
            return
        if rank not in (2, 4) or dim != 1 or len(xs) > P.NSRC:
            raise cx.fail(n, f"{t} of {len(xs)} tensors of rank {rank} along dim {dim} (up to "
                             f"{P.NSRC} tensors along the channels of NCHW or the features of (N, F))")
        cx.emit(cls(n.name, tuple(xs), cx.shape(n), **cx.common(n), dim=dim), n)

    def quantize(self, scales, maxabs):
        ss = [scales[i] for i in self.inputs]
        s_out = max(ss)
        mults = [G.rescale(s / s_out) for s in ss]
        return s_out, q.LayerQuant(m0=np.array([m for m, _ in mults], np.int64),
                                   shift=np.array([s for _, s in mults], np.int64))

    def float_eval(self, ins, run):
        return np.concatenate(ins, axis=self.dim)

    def reference(self, ins, lq, run):
        return np.concatenate([q.requantize(x, m, s) for x, m, s in zip(ins, lq.m0, lq.shift)],
                              axis=self.dim)

    def int_setup(self, m, lq) -> None:
        for i, (m0, s) in enumerate(zip(lq.m0, lq.shift)):
            m.buf(self.name, f"m0_{i}", np.int64(m0))
            m.buf(self.name, f"shift_{i}", np.int64(s))
            m.masks(f"{self.name}.{i}", s)

    def int_forward(self, m, ins, inputs):
        import torch
        from ..frontend import intmodule as im
        out = []
        for i, x in enumerate(ins):
            c = lambda k, i=i: m.const(self.name, f"{k}_{i}")  # noqa: E731
            y = im.srdhm(x, c("m0"), m.shift31)
            out.append(im.clamp(im.rdbpot(y, c("shift"), m.const(f"{self.name}.{i}", "mask"),
                                          m.const(f"{self.name}.{i}", "half")), False))
        return torch.cat(out, dim=self.dim)

    def quant_json(self, lq) -> dict:
        return {"m0": [int(v) for v in lq.m0], "shift": [int(v) for v in lq.shift]}

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_, dim=attrs["dim"]), q.LayerQuant(m0=np.array(quant["m0"], np.int64),
                                                              shift=np.array(quant["shift"], np.int64))

    def lower(self, cx) -> None:
        lq = cx.qm.layers[self.name]
        chans = [cx.tensor(i).shape[1] for i in self.inputs]
        m0 = np.concatenate([[m] * c for m, c in zip(lq.m0, chans)])
        sh = np.concatenate([[s] * c for s, c in zip(lq.shift, chans)])
        c = sum(chans)
        G.emit(cx, self, list(self.inputs), self.shape, np.eye(c, dtype=np.int64), m0, sh,
               mode=P.G_CAT)
