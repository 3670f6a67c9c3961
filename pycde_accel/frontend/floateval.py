"""Float64 evaluation of a layer graph in numpy (no torch): the graph's meaning, used for
calibration and to check that capture (with BatchNorm folding) reproduces the torch model."""

from __future__ import annotations

import numpy as np

from . import graph as g
from .windows import im2col, maxpool2d


def run_float(graph: g.Graph, inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Every node's float64 output, keyed by node name."""
    values: dict[str, np.ndarray] = {}
    for node in graph.nodes:
        ins = [values[i] for i in node.inputs]
        if isinstance(node, g.Input):
            y = np.asarray(inputs[node.index], np.float64)
        elif isinstance(node, g.Linear):
            y = ins[0] @ node.weight.T
            if node.bias is not None:
                y = y + node.bias
        elif isinstance(node, g.Conv2d):
            x = ins[0]
            oc, c, kh, kw = node.weight.shape
            cols = im2col(x, (kh, kw), node.stride, node.padding, 0.0)
            y = cols @ node.weight.reshape(oc, -1).T
            if node.bias is not None:
                y = y + node.bias
            n = x.shape[0]
            y = y.reshape(n, node.shape[2], node.shape[3], oc).transpose(0, 3, 1, 2)
        elif isinstance(node, g.MatMul):
            y = np.matmul(ins[0], ins[1])
        elif isinstance(node, g.Add):
            y = ins[0] + ins[1]
        elif isinstance(node, g.ReLU):
            y = np.maximum(ins[0], 0.0)
        elif isinstance(node, g.MaxPool2d):
            y = maxpool2d(ins[0], node.kernel, node.stride, node.padding, -np.inf)
        elif isinstance(node, g.Reshape):
            y = ins[0].reshape(node.shape)
        elif isinstance(node, g.Transpose):
            y = ins[0].transpose(node.perm)
        else:  # pragma: no cover
            raise TypeError(type(node).__name__)
        if getattr(node, "relu", False):
            y = np.maximum(y, 0.0)
        values[node.name] = np.ascontiguousarray(y)
    return values


def run_float_outputs(graph: g.Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    values = run_float(graph, inputs)
    return [values[o] for o in graph.outputs]
