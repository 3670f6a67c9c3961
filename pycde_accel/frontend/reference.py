"""The integer reference model: exactly what the accelerator computes, layer by layer, in numpy.

This is the bit-exact target of every simulation. Activations are int8 codes (held in int64
arrays), accumulators int32 (computed in int64 and checked to fit int32: the reference raises
:class:`AccumulatorOverflow` where 32-bit hardware would wrap). Per node kind:

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

import numpy as np

from . import graph as g
from . import quantize as q
from .windows import im2col, maxpool2d


class AccumulatorOverflow(ArithmeticError):
    """An accumulator left int32: the quantization cannot be run on 32-bit hardware as is."""


def _conv_out_hw(x_shape, kernel, stride, padding) -> tuple[int, int]:
    return ((x_shape[2] + 2 * padding[0] - kernel[0]) // stride[0] + 1,
            (x_shape[3] + 2 * padding[1] - kernel[1]) // stride[1] + 1)


def _check_acc(node: str, acc: np.ndarray) -> np.ndarray:
    if acc.size and (acc.min() < q.INT32_MIN or acc.max() > q.INT32_MAX):
        raise AccumulatorOverflow(f"{node}: accumulator leaves int32 ([{acc.min()}, {acc.max()}])")
    return acc


def matmul_acc(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None = None, node: str = "") -> np.ndarray:
    """int8 ``a`` (..., M, K) times int8 ``b`` (..., K, N) (+ int32 bias over N), exact, int32-checked."""
    acc = np.matmul(np.asarray(a, np.int64), np.asarray(b, np.int64))
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)
    return _check_acc(node, acc)


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
    accs: dict[str, np.ndarray] = {}
    for node in qm.graph.nodes:
        ins = [values[i] for i in node.inputs]
        lq = qm.layers.get(node.name)
        if isinstance(node, g.Input):
            x = np.asarray(inputs_q[node.index], np.int64)
            if x.shape != node.shape:
                raise ValueError(f"input {node.name}: shape {x.shape}, expected {node.shape}")
            q._check_range(f"input {node.name}", x, q.INT8_MIN, q.INT8_MAX)
            y = x
        elif isinstance(node, g.Linear):
            x = ins[0]
            acc = matmul_acc(x.reshape(-1, x.shape[-1]), lq.weight.T, lq.bias, node.name)
            accs[node.name] = acc
            y = q.requantize(acc, lq.m0, lq.shift, node.relu).reshape(node.shape)
        elif isinstance(node, g.Conv2d):
            x = ins[0]
            oc, c, kh, kw = lq.weight.shape
            cols = im2col(x, (kh, kw), node.stride, node.padding, 0)
            acc = matmul_acc(cols, lq.weight.reshape(oc, -1).T, lq.bias, node.name)
            accs[node.name] = acc
            oh, ow = _conv_out_hw(x.shape, (kh, kw), node.stride, node.padding)
            y = q.requantize(acc, lq.m0, lq.shift, node.relu)
            y = y.reshape(x.shape[0], oh, ow, oc).transpose(0, 3, 1, 2)
        elif isinstance(node, g.MatMul):
            acc = matmul_acc(ins[0], ins[1], None, node.name)
            accs[node.name] = acc
            y = q.requantize(acc, lq.m0, lq.shift, node.relu)
        elif isinstance(node, g.Add):
            y = q.residual_add(ins[0], ins[1], lq.ma, lq.mb, lq.shift, node.relu)
        elif isinstance(node, g.ReLU):
            y = q.relu_int8(ins[0])
        elif isinstance(node, g.MaxPool2d):
            y = maxpool2d(ins[0], node.kernel, node.stride, node.padding, q.INT8_MIN)
        elif isinstance(node, g.Reshape):
            y = ins[0].reshape(node.shape)
        elif isinstance(node, g.Transpose):
            y = ins[0].transpose(node.perm)
        else:  # pragma: no cover - capture only produces the kinds above
            raise TypeError(f"no integer semantics for {type(node).__name__}")
        y = np.ascontiguousarray(y)
        assert y.shape == tuple(node.shape), (node.name, y.shape, node.shape)
        values[node.name] = y
    return Trace(values=values, acc=accs, outputs=[values[o] for o in qm.graph.outputs])


def run_dequantized(qm: q.QuantizedModel, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Float inputs -> quantize -> integer model -> dequantized float outputs."""
    trace = run(qm, quantize_inputs(qm, inputs))
    return [o.astype(np.float64) * qm.scales[name] for name, o in zip(qm.graph.outputs, trace.outputs)]
