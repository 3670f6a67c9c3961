"""Garbage collection around CIRCT compiles."""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def frozen_heap():
    """Exempt the objects alive now (torch, the frontend's graph, ...) from garbage collection
    while CIRCT compiles: PyCDE's ``System.compile`` runs a full ``gc.collect()`` before each of
    its ~30 pass groups to release the Python proxies of MLIR ops, and with torch imported each
    full collection walks ~200k old objects (0.3 s each, ~10 s per design). The proxies are made
    after this point, so they are still collected; the frozen objects return to the collector
    on exit."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
