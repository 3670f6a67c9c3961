"""Sliding windows over NCHW arrays in numpy, shared by the integer reference
(:mod:`.reference`) and the float evaluation (:mod:`.floateval`): the im2col patch matrix and
max pooling built on it. Any element type; padding with a given value."""

from __future__ import annotations

import numpy as np


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
