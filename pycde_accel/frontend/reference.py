"""The integer reference model: exactly what the accelerator computes, layer by layer, in numpy.

This is the bit-exact target of every simulation. Activations are int8 codes (held in int64
arrays), accumulators int32 (computed in int64 and checked to fit int32: the reference raises
:class:`AccumulatorOverflow` where 32-bit hardware would wrap). Each node's ``reference`` hook
(:mod:`pycde_accel.ops`, one module per kind) computes it; in short:

* ``linear``: ``A = x.reshape(-1, in)`` (M x K int8), ``B = W_q.T`` (K x N int8),
  ``acc = A @ B + bias_q`` (int32), ``y = requantize(acc, m0[n], shift[n], relu)`` per column n.
* ``conv2d``: run on the systolic array as a matmul through im2col. ``A = im2col(x)`` has one row
  per output pixel in (n, oh, ow) order and one column per (c, kh, kw) (the order of
  ``W.reshape(OC, -1)``), zero padding; ``B = W_q.reshape(OC, -1).T``; then as ``linear``, and the
  (n, oh, ow, oc) result is transposed back to NCHW.
* ``matmul`` of two int8 activations: ``acc = a @ b`` (int32) over the last two axes, then
  ``requantize(acc, m0, shift, relu)`` with one per-tensor (m0, shift).
* ``add``: :func:`quantize.residual_add`; ``relu``: ``max(x, 0)``; ``maxpool2d``: max over each
  window (padding with -128); ``reshape``/``transpose``: data movement only.

The scalar arithmetic lives in :mod:`pycde_accel.frontend.quantize`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..ops.common import AccumulatorOverflow, im2col, matmul_acc, maxpool2d  # noqa: F401 - the API
from . import quantize as q


@dataclass
class Trace:
    """All intermediates of one run: int8 codes of every node, int32 accumulators of the
    matmul-like nodes (linear: [M, N]; conv2d: [N*OH*OW, OC], the systolic array's output;
    matmul: [..., M, N]), and the model outputs in order."""
    values: dict[str, np.ndarray]
    acc: dict[str, np.ndarray]
    outputs: list[np.ndarray]


def quantize_inputs(qm: q.QuantizedModel, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return [q.quantize_tensor(x, qm.scales[name]) for name, x in zip(qm.graph.inputs, inputs)]


def run(qm: q.QuantizedModel, inputs_q: list[np.ndarray]) -> Trace:
    """Run the integer model on int8 input codes (see :func:`quantize_inputs`)."""
    values: dict[str, np.ndarray] = {}
    run_ = SimpleNamespace(inputs=inputs_q, acc={})
    for node in qm.graph.nodes:
        y = node.reference([values[i] for i in node.inputs], qm.layers.get(node.name), run_)
        y = np.ascontiguousarray(y)
        assert y.shape == tuple(node.shape), (node.name, y.shape, node.shape)
        values[node.name] = y
    return Trace(values=values, acc=run_.acc, outputs=[values[o] for o in qm.graph.outputs])


def run_dequantized(qm: q.QuantizedModel, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Float inputs -> quantize -> integer model -> dequantized float outputs."""
    trace = run(qm, quantize_inputs(qm, inputs))
    return [o.astype(np.float64) * qm.scales[name] for name, o in zip(qm.graph.outputs, trace.outputs)]
