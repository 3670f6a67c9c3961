"""Float64 evaluation of a layer graph in numpy (no torch): the graph's meaning, used for
calibration and to check that capture (with BatchNorm folding) reproduces the torch model.
Each node's ``float_eval`` hook (:mod:`pycde_accel.ops`) gives its output; a fused ReLU is
applied after it. A node may also report the values of tensors it computes inside itself
(a recurrent layer's gates and states) in ``run.internal[f"{node}:{key}"]``, when the caller
passes an ``internal`` dict: calibration takes their scales from there."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np


def run_float(graph, inputs: list[np.ndarray], internal: dict | None = None) -> dict[str, np.ndarray]:
    """Every node's float64 output, keyed by node name (``internal``: filled with the values
    of the tensors nodes compute inside themselves, keyed ``node:key``)."""
    values: dict[str, np.ndarray] = {}
    run = SimpleNamespace(inputs=inputs, internal=internal)
    for node in graph.nodes:
        y = node.float_eval([values[i] for i in node.inputs], run)
        if getattr(node, "relu", False):
            y = np.maximum(y, 0.0)
        values[node.name] = np.ascontiguousarray(y)
    return values


def run_float_outputs(graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    values = run_float(graph, inputs)
    return [values[o] for o in graph.outputs]
