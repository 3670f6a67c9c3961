"""The project's layer graph: plain dataclasses, one node kind per op, static shapes, NCHW.

The node classes live with everything else about their op in :mod:`pycde_accel.ops` (one
module per kind, :data:`pycde_accel.ops.REGISTRY`); they are reachable here by class name
(``graph.Linear``) as well.

A :class:`Graph` lists its nodes in topological order. Every node names its inputs (earlier
node names), its static output ``shape``, the ``module`` path it came from (``features.3``; ``""``
for the top-level forward) and the ``source`` line in the model file (``model.py:12``, file name
only; ``""`` when unknown). Weights are float64 numpy arrays in torch layout (BatchNorm already
folded). ``relu`` on Linear/Conv2d/MatMul/Add means a ReLU is fused after the op.

Node kinds (``kind`` is the name used in design.json): one module each in
:mod:`pycde_accel.ops` (``input``, ``linear``, ``conv2d``, ``relu``, ``maxpool2d``, ``add``,
``reshape``, ``transpose``, ``matmul``, ...), whose docstring states the kind's attributes and
semantics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ops.base import REGISTRY, Node


def __getattr__(name: str):
    """The node classes by class name (``graph.Conv2d``), from the op registry."""
    from .. import ops  # noqa: F401 - imports every op module, which fills REGISTRY
    for cls in REGISTRY.values():
        if cls.__name__ == name:
            return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    """Fold each ReLU (a node with ``FOLDS_INTO_PRODUCER``) into its producer when that is an
    op with ``FUSES_RELU`` (Linear/Conv2d/MatMul/Add) whose only consumer is the ReLU (and whose
    output is not a model output). Returns a new Graph."""
    import dataclasses
    nodes = [dataclasses.replace(n) for n in graph.nodes]
    by_name = {n.name: n for n in nodes}
    rename: dict[str, str] = {}
    keep: list[Node] = []
    for n in nodes:
        n.inputs = tuple(rename.get(i, i) for i in n.inputs)
        if getattr(n, "FOLDS_INTO_PRODUCER", False):
            src = by_name[n.inputs[0]]
            sole = sum(n.inputs[0] in m.inputs for m in nodes) == 1
            if src.FUSES_RELU and not src.relu and sole and src.name not in graph.outputs:
                src.relu = True
                rename[n.name] = src.name
                continue
        keep.append(n)
    return Graph(nodes=keep, inputs=list(graph.inputs),
                 outputs=[rename.get(o, o) for o in graph.outputs])
