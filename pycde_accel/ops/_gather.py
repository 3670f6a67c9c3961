"""The lowering shared by the pixel-moving ops (flip, pad, upsample, cat): one GATHER layer
(:class:`~pycde_accel.backend.program.Gather`, scheduled by
:func:`pycde_accel.backend.commands._gather`) on the systolic array.

A source is a channels-last activation: 4-D NCHW stored NHWC with the channels padded to the
pitch, 3-D ``(N, C, L)`` as height 1, or 2-D ``(N, F)`` rows (one pixel per row). Each output pixel's channel vector is
``requantize(B @ a + bias)`` where ``a`` is the concatenation of its source pixel's channel
vectors (zero for a pixel outside the source); B is a selection (identity, permutation,
concatenation) and the requantization the identity (``m0 = 2^31 - 1, shift 0``: exact on int8)
or a per-channel rescale (cat of operands of different scales).
"""

from __future__ import annotations

import numpy as np

from ..backend import layout as L
from ..backend import program as P
from ..backend.tiling import ceil_div
from ..frontend import quantize as q

#: requantization that is the identity on int8 accumulators
IDENTITY = ((1 << 31) - 1, 0)


def rescale(ratio: float) -> tuple[int, int]:
    """``(m0, shift)`` of a rescale by ``ratio <= 1`` (the identity for 1)."""
    return IDENTITY if ratio >= 1.0 else q.quantize_multiplier(ratio)


def geometry(shape) -> tuple[int, int, int, int]:
    """``(n, c, h, w)`` of a 4-D NCHW, 3-D (N, C, L) (height 1) or 2-D (N, F) activation."""
    if len(shape) == 4:
        return tuple(int(v) for v in shape)
    if len(shape) == 3:
        return int(shape[0]), int(shape[1]), 1, int(shape[2])
    if len(shape) == 2:
        return int(shape[0]), int(shape[1]), 1, 1
    raise ValueError(f"rank {len(shape)}")


def _dense(cx, v):
    """The pixel pitch of ``v`` if it is a dense channels-last tensor, else None."""
    n, c, h, w = geometry(v.shape)
    if len(v.shape) == 4:
        sn, sc, sh, sw = v.strides
        pitch = sw if w > 1 else (sh if h > 1 else (sn if n > 1 else None))
    elif len(v.shape) == 3:
        sn, sc, sw = v.strides
        pitch = sw if w > 1 else (sn if n > 1 else None)
    else:
        sn, sc = v.strides
        pitch = sn if n > 1 else None
    if pitch is None:
        pitch = -(-c // cx.axi) * cx.axi          # one pixel: any beat-aligned run of its channels
    ok = (sc == 1 or c == 1) and pitch % cx.axi == 0 and pitch >= c and v.offset % cx.axi == 0
    if len(v.shape) == 4:
        ok = ok and (h == 1 or sh == w * pitch) and (n == 1 or sn == h * w * pitch)
    elif len(v.shape) == 3:
        ok = ok and (n == 1 or sn == w * pitch)
    return int(pitch) if ok else None


def source(cx, node, name: str):
    """``(view, pitch)`` of a dense channels-last source tensor (copied into one first when it
    is not), or a refusal."""
    v = cx.strided(name, node, "an input")
    pitch = _dense(cx, v)
    if pitch is None:
        v = cx.relayout(name, node, force=True)
        pitch = None if v is None else _dense(cx, v)
    if pitch is None:
        raise cx.refuse(node, f"input {name} is not a dense channels-last activation and no "
                              f"row copy makes it one; moving its pixels needs that layout")
    return v, pitch


def output(cx, node, name: str, shape):
    """The output view of a gather (dense channels-last, like a conv's) and its pitch."""
    n, c, h, w = geometry(shape)
    if len(shape) == 4:
        v = cx.padded(name, (n, h, w, c), node.name)
        cx.put(name, v.transpose((0, 3, 1, 2)))
        return v, v.strides[2]
    if len(shape) == 3:
        v = cx.padded(name, (n, h, w, c), node.name)
        cx.put(name, L.View(v.buffer, tuple(shape), (v.strides[0], 1, v.strides[2]), v.offset))
        return v, v.strides[2]
    v = cx.padded(name, (n, c), node.name)
    cx.put(name, v)
    return v, v.strides[0]


def emit(cx, node, srcs: list, out_shape, B: np.ndarray, m0, shift, *, mode: int = 0,
         pad=(0, 0), up=(1, 1), in_hw=None, const_code: int = 0, src_start: int = 0) -> None:
    """One GATHER layer for ``node`` from the source tensors ``srcs`` into ``node``'s output.

    ``B`` is ``N x sum(real channels of srcs)`` (logical: the channels of the sources in order);
    it is scattered onto the padded K (the pitches) here. ``const_code``: with ``pad``, the
    int8 code outside the source (mode CONST when not 0). ``src_start`` (beat-aligned, one
    source): the pixel's A row starts at that channel (B's first ``src_start`` columns dropped)."""
    views = [source(cx, node, s) for s in srcs]
    if len(views) > P.NSRC:
        raise cx.refuse(node, f"{len(views)} inputs, more than the {P.NSRC} one gather reads")
    n, _, h, w = geometry(views[0][0].shape) if in_hw is None else (geometry(views[0][0].shape)[0],
                                                                     0, *in_hw)
    on, oc, oh, ow = geometry(out_shape)
    out, opitch = output(cx, node, node.name, out_shape)
    if B.shape[0] == B.shape[1] and np.array_equal(B, np.eye(B.shape[0], dtype=B.dtype)):
        mode |= P.G_CAT           # the identity is a concatenation: each n-tile its own beats
    chans = [geometry(v.shape)[1] for v, _ in views]
    if src_start:
        chans[0] -= src_start
        B = B[:, src_start:]
    pitches = [p for _, p in views]
    K = sum(pitches)
    if const_code:
        mode |= P.G_CONST
        K += cx.axi
    Bk = np.zeros((oc, K), np.int64)
    kb, cb = 0, 0
    for c, p in zip(chans, pitches):
        Bk[:, kb:kb + c] = B[:, cb:cb + c]
        kb += p
        cb += c
    if const_code:
        Bk[:, kb] = const_code
    n_tiles = ceil_div(oc, cx.C)
    wsym, psym, osym = f"{node.name}.gather", f"{node.name}.params", f"{node.name}.one"
    wdata = L.pack_weight(Bk.T.astype(np.int8), cx.C, cx.axi)
    pdata = L.pack_params(None, np.asarray(m0, np.int64), np.asarray(shift, np.int64), n_tiles * cx.C)
    for sym, data, kind in ((wsym, wdata, "weight"), (psym, pdata, "params")):
        cx.layout.request("const", sym, len(data), kind, node.name)
        cx.layout.consts.append(L.ConstSpec(sym, node.name, "data", data=data))
    if const_code:
        one = np.zeros(L.ALIGN, np.int8)
        one[0] = 1
        cx.layout.request("const", osym, L.ALIGN, "data", node.name)
        cx.layout.consts.append(L.ConstSpec(osym, node.name, "data", data=one.tobytes()))
    bases = [v for v, _ in views]
    z = [0] * (P.NSRC - len(views))

    def build(Lo, i):
        return P.Gather(i, 0, b_base=Lo.addr(wsym), c_base=cx.base(out), p_base=Lo.addr(psym),
                        one_base=Lo.addr(osym) if const_code else 0, mode=mode, n=on, in_h=h,
                        in_w=w, out_h=oh, out_w=ow, N=oc, K=K, pad=P.pack2(*pad), up=P.pack2(*up),
                        c_stride_n=oh * ow * opitch, c_stride_h=ow * opitch, c_pitch=opitch,
                        n_srcs=len(views), src_base=tuple([cx.base(v) + (src_start if i == 0 else 0)
                                        for i, v in enumerate(bases)] + z),
                        src_pitch=tuple(pitches + z), src_channels=tuple(chans + z),
                        name=node.name, module=node.module)
    cx.emit(build, {"kind": node.kind})
