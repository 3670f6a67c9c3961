"""``div``: division of an activation by a constant or a parameter (``x / c``, per tensor or per
channel), captured as the affine map ``x * (1 / c)`` (:mod:`._affine`: folded into a Conv2d or
Linear before it that nothing else uses, else a 1x1 conv or Linear with a diagonal weight). No
node of its own; a division by an activation is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from . import _affine
from .base import Node, register


@register
@dataclass
class Div(Node):
    kind: ClassVar[str] = "div"
    ATEN: ClassVar[tuple[str, ...]] = ("aten.div.Tensor", "aten.div.Scalar")
    SUPPORTED: ClassVar[str] = "division by a constant"
    ORDER: ClassVar[int] = 55

    @classmethod
    def capture(cls, cx, n) -> None:
        if n.kwargs.get("rounding_mode") is not None:
            raise cx.fail(n, f"{n.target} with rounding_mode={n.kwargs['rounding_mode']!r}")
        if not _affine.capture_binary(cx, n, "/"):
            raise cx.fail(n, f"{n.target} of two activations (only by a constant or a parameter)")
