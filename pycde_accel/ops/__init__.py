"""The op kinds the compiler knows, one module each, and their registry.

``REGISTRY`` maps a kind (the name in design.json: ``linear``, ``conv2d``, ...) to its node
class (:class:`~.base.Node`), ``ATEN`` a ``torch.export`` target to the class that captures
it. Every module of this package that is not private (``_*``), ``base`` or ``common`` is an op
and is imported here, so adding an op is adding one module (docs/adding-an-op.md).
"""

from __future__ import annotations

import importlib
import pkgutil

from .base import ATEN, REGISTRY, Node, register

_NOT_OPS = {"base", "common"}

for _m in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if not _m.startswith("_") and _m not in _NOT_OPS:
        importlib.import_module(f"{__name__}.{_m}")


def supported() -> str:
    """The "supported:" list of capture errors, in the ops' ``ORDER``."""
    return ", ".join(c.SUPPORTED for c in sorted(REGISTRY.values(), key=lambda c: c.ORDER)
                     if c.SUPPORTED)


__all__ = ["ATEN", "REGISTRY", "Node", "register", "supported"]
