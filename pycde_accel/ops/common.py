"""Array helpers the ops share: im2col, max-pool windows, exact int32-checked matmuls."""

from __future__ import annotations

import numpy as np

from ..frontend import quantize as q


class AccumulatorOverflow(ArithmeticError):
    """An accumulator left int32: the quantization cannot be run on 32-bit hardware as is."""


def pair(v) -> tuple[int, int]:
    """An int or a 1- or 2-list as an (h, w) pair."""
    if isinstance(v, int):
        return (v, v)
    v = list(v)
    return (int(v[0]), int(v[0])) if len(v) == 1 else (int(v[0]), int(v[1]))


def im2col(x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int],
           padding: tuple[int, int], pad_value=0) -> np.ndarray:
    """NCHW ``x`` -> ``[N*OH*OW, C*KH*KW]``; rows in (n, oh, ow) order, columns in (c, kh, kw)."""
    n, c, h, w = x.shape
    kh, kw = kernel
    sh, sw = stride
    ph, pw = padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=pad_value)
    oh = (h + 2 * ph - kh) // sh + 1
    ow = (w + 2 * pw - kw) // sw + 1
    cols = np.empty((n, oh, ow, c, kh, kw), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, :, :, i, j] = xp[:, :, i:i + sh * oh:sh, j:j + sw * ow:sw].transpose(0, 2, 3, 1)
    return cols.reshape(n * oh * ow, c * kh * kw)


def maxpool2d(x: np.ndarray, kernel, stride, padding, pad_value) -> np.ndarray:
    n, c, h, w = x.shape
    oh = (h + 2 * padding[0] - kernel[0]) // stride[0] + 1
    ow = (w + 2 * padding[1] - kernel[1]) // stride[1] + 1
    cols = im2col(x.reshape(n * c, 1, h, w), kernel, stride, padding, pad_value)
    return cols.max(axis=1).reshape(n, c, oh, ow)


def conv_out_hw(x_shape, kernel, stride, padding) -> tuple[int, int]:
    return ((x_shape[2] + 2 * padding[0] - kernel[0]) // stride[0] + 1,
            (x_shape[3] + 2 * padding[1] - kernel[1]) // stride[1] + 1)


def check_acc(node: str, acc: np.ndarray) -> np.ndarray:
    if acc.size and (acc.min() < q.INT32_MIN or acc.max() > q.INT32_MAX):
        raise AccumulatorOverflow(f"{node}: accumulator leaves int32 ([{acc.min()}, {acc.max()}])")
    return acc


def matmul_acc(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None = None, node: str = "") -> np.ndarray:
    """int8 ``a`` (..., M, K) times int8 ``b`` (..., K, N) (+ int32 bias over N), exact, int32-checked."""
    acc = np.matmul(np.asarray(a, np.int64), np.asarray(b, np.int64))
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)
    return check_acc(node, acc)


def fold_batchnorm(node, scale: np.ndarray, mean: np.ndarray, beta: np.ndarray) -> None:
    """``W' = W * scale`` per output channel (axis 0), ``b' = (b - mean) * scale + beta``."""
    node.weight = node.weight * scale.reshape((-1,) + (1,) * (node.weight.ndim - 1))
    b0 = node.bias if node.bias is not None else np.zeros(len(scale))
    node.bias = (b0 - mean) * scale + beta


def json_ints(v) -> list[int] | int:
    """design.json form of integer parameters: an int for a scalar, else a flat list."""
    a = np.asarray(v)
    return int(a) if a.ndim == 0 else [int(x) for x in a.ravel()]


def int_list(v) -> list[int]:
    """Kernel-attribute form of integer parameters: always a list."""
    if v is None:
        return []
    try:
        return [int(x) for x in v]
    except TypeError:
        return [int(v)]
