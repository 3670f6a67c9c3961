"""``transpose``: a ``perm`` permutation of the axes (transpose, permute, t).

No layer and no kernel: the back end permutes the tensor's element offsets (see ``reshape``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Node, register


@register
@dataclass
class Transpose(Node):
    perm: tuple[int, ...] = ()
    kind: ClassVar[str] = "transpose"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.transpose.int", "aten.permute.default", "aten.t.default")
    SUPPORTED: ClassVar[str] = "transpose/permute"
    ORDER: ClassVar[int] = 70

    def attrs(self) -> dict:
        return {"perm": list(self.perm)}

    @classmethod
    def capture(cls, cx, n) -> None:
        t, args = str(n.target), list(n.args)
        x = cx.act(n, args[0])
        rank = len(cx.nodes[x].shape)
        if t == "aten.permute.default":
            perm = [int(d) % rank for d in args[1]]
        else:
            d0, d1 = (int(args[1]) % rank, int(args[2]) % rank) if t == "aten.transpose.int" else (0, 1)
            perm = list(range(rank))
            perm[d0], perm[d1] = perm[d1], perm[d0]
        cx.emit(cls(n.name, (x,), cx.shape(n), **cx.common(n), perm=tuple(perm)), n)

    def float_eval(self, ins, run):
        return ins[0].transpose(self.perm)

    def reference(self, ins, lq, run):
        return ins[0].transpose(self.perm)

    def int_forward(self, m, ins, inputs):
        return ins[0].permute(*self.perm)

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return cls(**common_, perm=tuple(attrs["perm"])), None

    def lower(self, cx) -> None:
        t = cx.tensor(self.inputs[0])
        cx.set_tensor(self.name, t.buffer, t.offs.transpose(self.perm))
