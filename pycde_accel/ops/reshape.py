"""``reshape``: flatten/view/reshape/squeeze/unsqueeze to ``shape`` (row-major, data unchanged).

No layer and no kernel: the back end re-addresses the tensor (a tensor is a buffer plus the
byte offset of every element; a reshape only reshapes the offsets). A consumer that needs
strides refuses offsets that are not strided.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Node, register


@register
@dataclass
class Reshape(Node):
    kind: ClassVar[str] = "reshape"
    ATEN: ClassVar[tuple[str, ...]] = (
        "aten.flatten.using_ints", "aten.view.default", "aten.reshape.default",
        "aten._unsafe_view.default", "aten.unflatten.int", "aten.squeeze.dim",
        "aten.squeeze.dims", "aten.squeeze.default", "aten.unsqueeze.default")
    SUPPORTED: ClassVar[str] = "flatten/reshape/view/squeeze/unsqueeze"
    ORDER: ClassVar[int] = 60

    @classmethod
    def capture(cls, cx, n) -> None:
        cx.emit(cls(n.name, (cx.act(n, n.args[0]),), cx.shape(n), **cx.common(n)), n)

    def float_eval(self, ins, run):
        return ins[0].reshape(self.shape)

    def reference(self, ins, lq, run):
        return ins[0].reshape(self.shape)

    def int_forward(self, m, ins, inputs):
        return ins[0].reshape(self.shape)

    def lower(self, cx) -> None:
        t = cx.tensor(self.inputs[0])
        cx.set_tensor(self.name, t.buffer, t.offs.reshape(self.shape))
