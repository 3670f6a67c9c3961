"""Element-wise affine maps ``y = x * g + b`` with constant ``g``, ``b`` (per tensor or per
channel): a standalone BatchNorm (inference), an add, subtract, multiply or divide by a constant
or a parameter. Captured as the matmul op that computes it exactly: a 1x1 ``conv2d`` with the
diagonal weight ``diag(g)`` and bias ``b`` on a 4-D NCHW activation (per channel of dim 1), a
``linear`` with ``diag(g)`` on any other rank (per element of the last dim). Their quantization
(per-channel weight scales, int32 bias, per-channel requantization), reference, back end (one
GEMM) and kernels are those ops'. A map whose input is a Conv2d or 2-d Linear used by nothing
else folds into its weight and bias, as a BatchNorm does.
"""

from __future__ import annotations

import numpy as np

from .base import REGISTRY
from .common import fold_batchnorm


def constant(cx, n, a):
    """The float64 value of the constant operand ``a`` of ``n`` (a number, a parameter, a buffer
    or a lifted constant), or None when ``a`` is an activation."""
    if cx.is_act(a):
        return None
    if isinstance(a, (int, float, bool)):
        return np.asarray(float(a))
    return np.asarray(cx.const(n, a), np.float64)


def emit(cx, n, x: str, g, b, what: str, sole: bool = False) -> None:
    """Add the node of ``y = x * g + b`` (``g``, ``b`` broadcastable to ``x``'s shape) as the
    value of fx node ``n``; a refusal when they vary along more than the channel dim. With
    ``sole`` (``x`` is used by nothing else) and ``x`` a node a BatchNorm folds into, the map is
    folded into its weight and bias instead (no layer)."""
    shape = tuple(cx.nodes[x].shape)
    out = cx.shape(n) or shape
    if tuple(np.broadcast_shapes(shape, np.shape(g), np.shape(b))) != shape:
        raise cx.fail(n, f"{what} with a constant of shape {list(np.shape(g if np.ndim(g) else b))} "
                         f"that broadcasts {list(shape)} to a larger shape")
    gs, bs = np.broadcast_to(g, shape), np.broadcast_to(b, shape)
    axis = 1 if len(shape) == 4 else len(shape) - 1
    idx = tuple(slice(None) if d == axis else 0 for d in range(len(shape)))
    gv, bv = np.array(gs[idx], np.float64), np.array(bs[idx], np.float64)
    exp = tuple(slice(None) if d == axis else None for d in range(len(shape)))
    if not (np.array_equal(gs, np.broadcast_to(gv[exp], shape))
            and np.array_equal(bs, np.broadcast_to(bv[exp], shape))):
        where = "channels (dim 1) of NCHW" if len(shape) == 4 else "the last dim"
        raise cx.fail(n, f"{what} with a constant that varies along more than the {where}")
    prod = cx.nodes[x]
    if sole and prod.folds_batchnorm():
        fold_batchnorm(prod, gv, np.zeros_like(gv), bv)
        cx.alias[n.name] = x
        return
    w = np.diag(gv)
    common = dict(cx.common(n))
    if len(shape) == 4:
        node = REGISTRY["conv2d"](n.name, (x,), out, **common, weight=w[:, :, None, None], bias=bv,
                                  stride=(1, 1), padding=(0, 0))
    else:
        node = REGISTRY["linear"](n.name, (x,), out, **common, weight=w, bias=bv)
    cx.emit(node, n)


def _per_axis(shape, c) -> bool:
    """Whether the constant ``c`` broadcasts to ``shape`` and varies along its channel dim (dim 1
    of 4-d, else the last) only: an affine map of :func:`emit`."""
    try:
        if tuple(np.broadcast_shapes(shape, np.shape(c))) != tuple(shape):
            return False
    except ValueError:
        return False
    cs = np.broadcast_to(c, shape)
    axis = 1 if len(shape) == 4 else len(shape) - 1
    idx = tuple(slice(None) if d == axis else slice(0, 1) for d in range(len(shape)))
    return bool(np.array_equal(cs, np.broadcast_to(cs[idx], shape)))


def capture_binary(cx, n, op: str) -> bool:
    """``x (op) c`` or ``c (op) x`` with one constant operand (op one of + - * /, or ``r-`` for
    ``rsub(x, c) = c - x``) captured as an affine map; False when both operands are activations."""
    a, b = n.args[0], n.args[1]
    if op == "r-":
        a, b, op = b, a, "-"
    ca, cb = constant(cx, n, a), constant(cx, n, b)
    if (ca is None) == (cb is None):
        return False
    x_arg, c_arg, c = (a, b, cb) if cb is not None else (b, a, ca)
    if op in "+-*" and np.ndim(c) and not _per_axis(tuple(cx.nodes[cx.act(n, x_arg)].shape), c):
        # a full-shape parameter (a positional embedding): a tensor operand of its own
        from . import param
        param.activate(cx, n, c_arg, np.broadcast_shapes(cx.nodes[cx.act(n, x_arg)].shape, np.shape(c)))
        return False
    alpha = float(n.kwargs.get("alpha", 1))
    t = str(n.target)
    if cb is not None:
        x, c = cx.act(n, a), cb
        g, bias = {"+": (1.0, alpha * c), "-": (1.0, -alpha * c), "*": (c, 0.0), "/": (1.0 / c, 0.0)}[op]
    else:
        x, c = cx.act(n, b), ca
        if op == "/":
            raise cx.fail(n, f"{t} of a constant by an activation")
        g, bias = {"+": (alpha, c), "-": (-alpha, c), "*": (c, 0.0)}[op]
    emit(cx, n, x, g, bias, t, sole=len((a if cb is not None else b).users) == 1)
    return True
