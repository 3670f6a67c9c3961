"""``input``: a model input (``index`` among the user inputs).

Captured from the exported graph's user placeholders (not an ATen op). Its scale is calibrated
(``max|x| / 127``); the host quantizes it. In DRAM it is laid out as the back end lays out every
activation: channels-last with the channel pitch padded to ``cols`` for 4-d tensors, the last
axis padded to ``cols`` otherwise; or, when a thin conv is its only reader, im2col'd for that
conv (``conv2d.host_im2col``: the host packs KH*KW*C into each row, padded once to the beat).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..backend import layout as L
from ..frontend import quantize as q
from .base import Node, register


@register
@dataclass
class Input(Node):
    index: int = 0
    kind: ClassVar[str] = "input"

    def attrs(self) -> dict:
        return {"index": self.index}

    def quantize(self, scales, maxabs):
        return q.act_scale(maxabs[self.name]), None

    def float_eval(self, ins, run):
        return np.asarray(run.inputs[self.index], np.float64)

    def reference(self, ins, lq, run):
        x = np.asarray(run.inputs[self.index], np.int64)
        if x.shape != self.shape:
            raise ValueError(f"input {self.name}: shape {x.shape}, expected {self.shape}")
        q._check_range(f"input {self.name}", x, q.INT8_MIN, q.INT8_MAX)
        return x

    def int_forward(self, m, ins, inputs):
        import torch
        return inputs[self.index].to(torch.int64)

    def lower(self, cx) -> None:
        from .conv2d import host_im2col
        if host_im2col(cx, self):         # written im2col'd for the conv that reads it
            return
        shape = tuple(self.shape)
        users = [u for u in cx.qm.graph.nodes if self.name in u.inputs]
        if len(shape) == 4:
            n, c, h, w = shape
            v = L.padded_view(self.name, (n, h, w, c), cx.C).transpose((0, 3, 1, 2))
        elif len(shape) == 3 and users and _feeds_only_1d(cx.qm.graph, self):
            # (N, C, L) read only by 1-d windowed ops (Conv1d, pooling), directly or through
            # element-wise ops that keep its layout: channels-last (N, L, C)
            n, c, w = shape
            v = L.padded_view(self.name, (n, w, c), cx.C).transpose((0, 2, 1))
        else:
            v = L.padded_view(self.name, shape or (1,), cx.C)
        cx.layout.request("input", self.name, L.view_span(v), "input", self.name)
        cx.set_tensor(self.name, self.name, v.offsets().reshape(shape))


#: element-wise kinds whose output takes their operands' layout (``Compiler.eltwise``)
_LAYOUT_KEEPING = ("relu", "lut", "hardtanh", "add", "sub", "mul", "maximum", "minimum")


def _feeds_only_1d(graph, node) -> bool:
    """Every reader of ``node``, and of the element-wise ops of its shape that read it (and so
    share its layout), is a 1-d windowed op or one of those element-wise ops, and at least one
    is a 1-d windowed op: then a channels-last layout serves them all."""
    seen, todo, one_d = {node.name}, [node.name], False
    while todo:
        name = todo.pop()
        for u in graph.nodes:
            if name not in u.inputs:
                continue
            if getattr(u, "one_d", False):
                one_d = True
            elif u.kind in _LAYOUT_KEEPING and tuple(u.shape) == tuple(node.shape):
                if u.name not in seen:
                    seen.add(u.name)
                    todo.append(u.name)
            else:
                return False
    return one_d
