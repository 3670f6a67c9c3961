"""``param``: a parameter or buffer of the model used as a tensor operand of an op of two
activations: a learned positional embedding (``x + pos``, ``pos`` varying along more than the
last dim, which no per-channel affine map is), a class token (``cat([cls.expand(...), x],
dim=1)``), any full-shape constant of an add, sub or mul.

No ATen target: ``ops/_affine.py`` (``capture_binary``) and ``ops/expand.py`` turn such a
constant into a ``param`` node (:func:`activate`) and the op then takes it as its second
activation.

* quantization: a per-tensor scale ``s = max|p| / 127`` (the calibration sees the value),
  codes ``clip(rint(p / s))`` (:func:`~pycde_accel.frontend.quantize.quantize_tensor`).
* reference: the codes.
* back end: no layer; the codes are a constant in the DRAM image, laid out as an activation of
  the same shape is (channels-last, the innermost dim padded to ``cols``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..backend import layout as L
from ..frontend import quantize as q
from .base import Node, register


def activate(cx, n, a, shape=None) -> str:
    """Stand a ``param`` node in for the constant operand ``a`` (an fx node) of ``n``, broadcast
    to ``shape`` (default: its own); ``a`` is an activation from then on."""
    value = np.asarray(cx.const(n, a), np.float64)
    shape = tuple(int(s) for s in (shape if shape is not None else value.shape))
    node = Param(f"{a.name}_param", (), shape, **cx.common(n),
                 value=np.broadcast_to(value, shape).copy())
    cx.graph.nodes.append(node)
    cx.nodes[node.name] = node
    cx.alias[a.name] = node.name
    return node.name


@register
@dataclass
class Param(Node):
    value: np.ndarray = None
    kind: ClassVar[str] = "param"
    ATEN: ClassVar[tuple[str, ...]] = ()
    SUPPORTED: ClassVar[str] = ""
    ORDER: ClassVar[int] = 99

    def quantize(self, scales, maxabs):
        s = q.act_scale(maxabs[self.name])
        return s, q.LayerQuant(weight=q.quantize_tensor(self.value, s))

    def float_eval(self, ins, run):
        return np.asarray(self.value, np.float64)

    def reference(self, ins, lq, run):
        return np.asarray(lq.weight, np.int64).reshape(self.shape)

    def int_setup(self, m, lq) -> None:
        m.buf(self.name, "value", lq.weight.reshape(self.shape))

    def int_forward(self, m, ins, inputs):
        return m.const(self.name, "value")

    def quant_json(self, lq) -> dict:
        return {"value": f"{self.name}.value"}

    def weight_arrays(self, lq) -> dict:
        return {f"{self.name}.value": np.asarray(lq.weight, np.int64).reshape(self.shape).astype(np.int8)}

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        codes = arrays[quant["value"]].astype(np.int64)
        return cls(**common_, value=codes.astype(np.float64)), q.LayerQuant(weight=codes)

    def lower(self, cx) -> None:
        shape = tuple(self.shape) or (1,)
        if len(shape) == 4:
            n, c, h, w = shape
            v = L.padded_view("", (n, h, w, c), cx.C).transpose((0, 3, 1, 2))
        else:
            v = L.padded_view("", shape, cx.C)
        offs = v.offsets().reshape(shape)
        codes = np.asarray(cx.qm.layers[self.name].weight, np.int64).reshape(shape)
        data = np.zeros(-(-L.view_span(v) // cx.C) * cx.C, np.int8)      # whole rows
        data[offs.ravel()] = codes.ravel().astype(np.int8)
        sym = f"{self.name}.value"
        cx.layout.request("const", sym, data.size, "param", self.name)
        cx.layout.consts.append(L.ConstSpec(sym, self.name, "data", data=data.tobytes()))
        cx.set_tensor(self.name, sym, offs)
