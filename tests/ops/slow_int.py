"""Slow pure-Python definitions (Python ints, one element at a time) of the integer steps
LayerNorm and softmax are made of: the bit-exact targets of the property tests in
test_rowmix.py, test_layer_norm.py and test_softmax.py."""

from __future__ import annotations

import numpy as np


def srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul."""
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    s = ab + nudge
    q = abs(s) >> 31                     # C division truncates toward zero
    return q if s >= 0 else -q


def rdbpot(x: int, e: int) -> int:
    mask = (1 << e) - 1
    rem = x & mask
    thr = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if rem > thr else 0)


def requant(acc: int, m0: int, shift: int, lo: int = -128, hi: int = 127) -> int:
    return min(hi, max(lo, rdbpot(srdhm(acc, m0), shift)))


def rowmix(x, mode: str, m0, shift, sign: int = 1, offset: int = 0):
    """y[..., j] = requant(sum_k x[..., k] * M[k, j]) with M = L*I - J (center), J (sum, mean)
    or the rotation by ``offset`` (rotate)."""
    x = np.asarray(x, np.int64)
    rows = x.reshape(-1, x.shape[-1]).tolist()
    out = []
    for row in rows:
        total = sum(row)
        L = len(row)
        if mode == "rotate":
            accs = [row[(j + offset) % L] for j in range(L)]
        else:
            accs = [(L * v - total) if mode == "center" else total for v in row]
        out.append([requant(sign * a, int(m0[j]), int(shift[j])) for j, a in enumerate(accs)])
    return np.array(out, np.int64).reshape(x.shape)


def mul(a, b, m0: int, shift: int):
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    out = [requant(u * v, int(m0), int(shift)) for u, v in zip(a.ravel().tolist(), b.ravel().tolist())]
    return np.array(out, np.int64).reshape(a.shape)


def lut(x, table):
    x = np.asarray(x, np.int64)
    return np.array([int(table[v + 128]) for v in x.ravel().tolist()], np.int64).reshape(x.shape)


def chain(qm, x):
    """Run ``qm``'s graph (input, rowmix, rowmax, mul, lut, linear-diagonal nodes only) with the slow
    definitions above; returns {node name: codes}."""
    vals = {qm.graph.inputs[0]: np.asarray(x, np.int64)}
    for node in qm.graph.nodes:
        if node.kind == "input":
            continue
        lq = qm.layers.get(node.name)
        ins = [vals[i] for i in node.inputs]
        if node.kind == "rowmix":
            sign = -1 if lq.weight[0, 0] < 0 else 1
            mode = node.mode if node.mode in ("center", "rotate") else "sum"
            vals[node.name] = rowmix(ins[0], mode, lq.m0, lq.shift, sign, node.offset)
        elif node.kind == "rowmax":           # the row's maximum in every element
            rows = ins[0].reshape(-1, ins[0].shape[-1]).tolist()
            vals[node.name] = np.array([[max(r)] * len(r) for r in rows],
                                       np.int64).reshape(ins[0].shape)
        elif node.kind == "maximum":          # equal scales: no rescale
            assert lq.ma == 0
            a, b = (v.ravel().tolist() for v in ins)
            vals[node.name] = np.array([max(u, v) for u, v in zip(a, b)], np.int64).reshape(ins[0].shape)
        elif node.kind == "sub":
            a, b = (v.ravel().tolist() for v in ins)
            vals[node.name] = np.array(
                [min(127, max(-128, rdbpot(u * lq.ma + v * lq.mb, lq.shift))) for u, v in zip(a, b)],
                np.int64).reshape(ins[0].shape)
        elif node.kind == "mul":
            vals[node.name] = mul(ins[0], ins[1], lq.m0, lq.shift)
        elif node.kind == "lut":
            vals[node.name] = lut(ins[0], lq.weight)
        elif node.kind == "linear":          # the diagonal affine map of LayerNorm
            assert np.count_nonzero(lq.weight - np.diag(np.diag(lq.weight))) == 0
            w = np.diag(lq.weight).tolist()
            b = lq.bias.tolist() if lq.bias is not None else [0] * len(w)
            x2 = ins[0].reshape(-1, ins[0].shape[-1]).tolist()
            vals[node.name] = np.array(
                [[requant(v * w[j] + b[j], int(lq.m0[j]), int(lq.shift[j]))
                  for j, v in enumerate(row)] for row in x2], np.int64).reshape(ins[0].shape)
        else:
            vals[node.name] = node.reference(ins, lq, None)
    return vals
