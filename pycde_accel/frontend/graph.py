"""The project's layer graph: plain dataclasses, one node kind per op, static shapes, NCHW.

A :class:`Graph` lists its nodes in topological order. Every node names its inputs (earlier
node names), its static output ``shape``, the ``module`` path it came from (``features.3``; ``""``
for the top-level forward) and the ``source`` line in the model file (``model.py:12``, file name
only; ``""`` when unknown). Weights are float64 numpy arrays in torch layout (BatchNorm already
folded). ``relu`` on Linear/Conv2d/MatMul/Add means a ReLU is fused after the op.

Node kinds (``kind`` is the name used in design.json):

* ``input``      a model input (``index`` among the user inputs)
* ``linear``     ``y = x @ W.T + b`` over the last axis; W ``[out, in]``
* ``conv2d``     groups=1, dilation=1; W ``[OC, C, KH, KW]``; ``stride``, ``padding`` as (h, w)
* ``relu``       standalone ReLU (one not fused into its producer)
* ``maxpool2d``  ``kernel``, ``stride``, ``padding`` as (h, w); dilation 1, floor mode
* ``add``        elementwise sum of two activations of the same shape
* ``reshape``    flatten/view/reshape to ``shape`` (row-major, data unchanged)
* ``transpose``  ``perm`` permutation of the axes (transpose, permute, t)
* ``matmul``     matmul/bmm of two activations (same leading batch shape, no broadcasting)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np


@dataclass
class Node:
    name: str
    inputs: tuple[str, ...]
    shape: tuple[int, ...]
    module: str = ""
    source: str = ""
    kind: ClassVar[str] = "?"

    def attrs(self) -> dict:
        """Op attributes for design.json (no weights)."""
        return {}


@dataclass
class Input(Node):
    index: int = 0
    kind: ClassVar[str] = "input"

    def attrs(self) -> dict:
        return {"index": self.index}


@dataclass
class Linear(Node):
    weight: np.ndarray = None
    bias: np.ndarray | None = None
    relu: bool = False
    kind: ClassVar[str] = "linear"

    @property
    def in_features(self) -> int:
        return int(self.weight.shape[1])

    @property
    def out_features(self) -> int:
        return int(self.weight.shape[0])

    def attrs(self) -> dict:
        return {"in_features": self.in_features, "out_features": self.out_features,
                "bias": self.bias is not None, "relu": self.relu}


@dataclass
class Conv2d(Node):
    weight: np.ndarray = None
    bias: np.ndarray | None = None
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    relu: bool = False
    kind: ClassVar[str] = "conv2d"

    def attrs(self) -> dict:
        oc, c, kh, kw = (int(v) for v in self.weight.shape)
        return {"in_channels": c, "out_channels": oc, "kernel": [kh, kw],
                "stride": list(self.stride), "padding": list(self.padding),
                "bias": self.bias is not None, "relu": self.relu}


@dataclass
class ReLU(Node):
    kind: ClassVar[str] = "relu"


@dataclass
class MaxPool2d(Node):
    kernel: tuple[int, int] = (2, 2)
    stride: tuple[int, int] = (2, 2)
    padding: tuple[int, int] = (0, 0)
    kind: ClassVar[str] = "maxpool2d"

    def attrs(self) -> dict:
        return {"kernel": list(self.kernel), "stride": list(self.stride), "padding": list(self.padding)}


@dataclass
class Add(Node):
    relu: bool = False
    kind: ClassVar[str] = "add"

    def attrs(self) -> dict:
        return {"relu": self.relu}


@dataclass
class Reshape(Node):
    kind: ClassVar[str] = "reshape"


@dataclass
class Transpose(Node):
    perm: tuple[int, ...] = ()
    kind: ClassVar[str] = "transpose"

    def attrs(self) -> dict:
        return {"perm": list(self.perm)}


@dataclass
class MatMul(Node):
    relu: bool = False
    kind: ClassVar[str] = "matmul"

    def attrs(self) -> dict:
        return {"relu": self.relu}


FUSABLE = (Linear, Conv2d, MatMul, Add)


@dataclass
class Graph:
    nodes: list[Node] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def users(self, name: str) -> list[Node]:
        return [n for n in self.nodes if name in n.inputs]


def fuse_relu(graph: Graph) -> Graph:
    """Fold each ReLU into its producer when that is a Linear/Conv2d/MatMul/Add whose only
    consumer is the ReLU (and whose output is not a model output). Returns a new Graph."""
    import dataclasses
    nodes = [dataclasses.replace(n) for n in graph.nodes]
    by_name = {n.name: n for n in nodes}
    rename: dict[str, str] = {}
    keep: list[Node] = []
    for n in nodes:
        n.inputs = tuple(rename.get(i, i) for i in n.inputs)
        if isinstance(n, ReLU):
            src = by_name[n.inputs[0]]
            sole = sum(n.inputs[0] in m.inputs for m in nodes) == 1
            if isinstance(src, FUSABLE) and not src.relu and sole and src.name not in graph.outputs:
                src.relu = True
                rename[n.name] = src.name
                continue
        keep.append(n)
    return Graph(nodes=keep, inputs=list(graph.inputs),
                 outputs=[rename.get(o, o) for o in graph.outputs])
