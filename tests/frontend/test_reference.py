"""The integer reference model, one small layer at a time, against slow pure-Python loops.

The slow versions share nothing with the reference: direct convolution loops instead of im2col,
Python ints instead of numpy, the gemmlowp formulas written out again.
"""

import math

import numpy as np
from hypothesis import given, settings, strategies as st

from pycde_accel.frontend import graph as g
from pycde_accel.frontend import reference
from pycde_accel.frontend.quantize import LayerQuant, QuantizedModel

SETTINGS = settings(max_examples=40, deadline=None, database=None)


# ---- slow arithmetic ----------------------------------------------------------------------------

def srdhm(a, b):
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    v = a * b + ((1 << 30) if a * b >= 0 else 1 - (1 << 30))
    return abs(v) // (1 << 31) * (1 if v >= 0 else -1)


def rdbpot(x, e):
    mag = (2 * abs(x) + (1 << e)) // (1 << (e + 1))          # floor(|x| / 2^e + 1/2)
    return mag if x >= 0 else -mag


def requant(acc, m0, shift, relu):
    assert -(1 << 31) <= acc < (1 << 31)
    return min(max(rdbpot(srdhm(acc, m0), shift), 0 if relu else -128), 127)


def zeros(*shape):
    if len(shape) == 1:
        return [0] * shape[0]
    return [zeros(*shape[1:]) for _ in range(shape[0])]


def slow_linear(x, w, b, m0, shift, relu):
    return [[requant(sum(xi * wi for xi, wi in zip(row, w[n])) + (b[n] if b else 0), m0[n], shift[n], relu)
             for n in range(len(w))] for row in x]


def slow_conv(x, w, b, stride, pad, m0, shift, relu):
    N, C, H, W = len(x), len(x[0]), len(x[0][0]), len(x[0][0][0])
    OC, KH, KW = len(w), len(w[0][0]), len(w[0][0][0])
    OH, OW = (H + 2 * pad[0] - KH) // stride[0] + 1, (W + 2 * pad[1] - KW) // stride[1] + 1
    y = zeros(N, OC, OH, OW)
    for n in range(N):
        for oc in range(OC):
            for oh in range(OH):
                for ow in range(OW):
                    acc = b[oc] if b else 0
                    for c in range(C):
                        for i in range(KH):
                            for j in range(KW):
                                h, v = oh * stride[0] + i - pad[0], ow * stride[1] + j - pad[1]
                                if 0 <= h < H and 0 <= v < W:
                                    acc += x[n][c][h][v] * w[oc][c][i][j]
                    y[n][oc][oh][ow] = requant(acc, m0[oc], shift[oc], relu)
    return y


def slow_maxpool(x, k, s, p):
    N, C, H, W = len(x), len(x[0]), len(x[0][0]), len(x[0][0][0])
    OH, OW = (H + 2 * p[0] - k[0]) // s[0] + 1, (W + 2 * p[1] - k[1]) // s[1] + 1
    y = zeros(N, C, OH, OW)
    for n in range(N):
        for c in range(C):
            for oh in range(OH):
                for ow in range(OW):
                    y[n][c][oh][ow] = max(x[n][c][h][v]
                                          for h in range(oh * s[0] - p[0], oh * s[0] - p[0] + k[0])
                                          for v in range(ow * s[1] - p[1], ow * s[1] - p[1] + k[1])
                                          if 0 <= h < H and 0 <= v < W)
    return y


# ---- strategies -------------------------------------------------------------------------------

def int_array(draw, shape, lo, hi):
    flat = draw(st.lists(st.integers(lo, hi), min_size=math.prod(shape), max_size=math.prod(shape)))
    return np.array(flat, dtype=np.int64).reshape(shape)


@st.composite
def requant_params(draw, n):
    m0 = int_array(draw, (n,), 1 << 30, (1 << 31) - 1)
    shift = int_array(draw, (n,), 3, 14)
    return m0, shift


def one_node_model(node, layer=None, n_inputs=1, input_shapes=None):
    inputs = [g.Input(f"in{i}", (), input_shapes[i], index=i) for i in range(n_inputs)]
    graph = g.Graph(nodes=inputs + [node], inputs=[i.name for i in inputs], outputs=[node.name])
    return QuantizedModel(graph=graph, scales={}, layers={node.name: layer} if layer else {})


# ---- tests ------------------------------------------------------------------------------------

@SETTINGS
@given(st.data(), st.integers(1, 3), st.integers(1, 12), st.integers(1, 6), st.booleans(), st.booleans())
def test_linear_matches_slow_loops(data, m, k, n, has_bias, relu):
    x = int_array(data.draw, (m, k), -128, 127)
    w = int_array(data.draw, (n, k), -127, 127)
    b = int_array(data.draw, (n,), -(1 << 16), 1 << 16) if has_bias else None
    m0, shift = data.draw(requant_params(n))
    node = g.Linear("fc", ("in0",), (m, n), weight=w.astype(float), bias=None, relu=relu)
    qm = one_node_model(node, LayerQuant(weight=w, bias=b, m0=m0, shift=shift), input_shapes=[(m, k)])
    trace = reference.run(qm, [x])
    want = slow_linear(x.tolist(), w.tolist(), None if b is None else b.tolist(), m0.tolist(), shift.tolist(), relu)
    assert trace.outputs[0].tolist() == want
    acc = x @ w.T + (0 if b is None else b)
    assert trace.acc["fc"].tolist() == acc.tolist()


@SETTINGS
@given(st.data(), st.integers(1, 2), st.integers(1, 3), st.integers(1, 4), st.integers(3, 7),
       st.integers(3, 7), st.integers(1, 3), st.integers(1, 3), st.integers(1, 2), st.integers(1, 2),
       st.integers(0, 1), st.integers(0, 1), st.booleans(), st.booleans())
def test_conv2d_via_im2col_matches_direct_convolution(data, n, c, oc, h, w_, kh, kw, sh, sw, ph, pw,
                                                      has_bias, relu):
    x = int_array(data.draw, (n, c, h, w_), -128, 127)
    w = int_array(data.draw, (oc, c, kh, kw), -127, 127)
    b = int_array(data.draw, (oc,), -(1 << 16), 1 << 16) if has_bias else None
    m0, shift = data.draw(requant_params(oc))
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w_ + 2 * pw - kw) // sw + 1
    node = g.Conv2d("conv", ("in0",), (n, oc, oh, ow), weight=w.astype(float), stride=(sh, sw),
                    padding=(ph, pw), relu=relu)
    qm = one_node_model(node, LayerQuant(weight=w, bias=b, m0=m0, shift=shift), input_shapes=[x.shape])
    got = reference.run(qm, [x]).outputs[0]
    want = slow_conv(x.tolist(), w.tolist(), None if b is None else b.tolist(), (sh, sw), (ph, pw),
                     m0.tolist(), shift.tolist(), relu)
    assert got.tolist() == want


@SETTINGS
@given(st.data(), st.integers(1, 3), st.integers(1, 4), st.integers(1, 8), st.integers(1, 4),
       st.integers(1 << 30, (1 << 31) - 1), st.integers(3, 14), st.booleans())
def test_matmul_of_two_activations_matches_slow_loops(data, batch, m, k, n, m0, shift, relu):
    a = int_array(data.draw, (batch, m, k), -128, 127)
    b = int_array(data.draw, (batch, k, n), -128, 127)
    node = g.MatMul("mm", ("in0", "in1"), (batch, m, n), relu=relu)
    qm = one_node_model(node, LayerQuant(m0=m0, shift=shift), 2, [a.shape, b.shape])
    got = reference.run(qm, [a, b]).outputs[0]
    want = [[[requant(sum(a[t, i, kk] * b[t, kk, j] for kk in range(k)).item(), m0, shift, relu)
              for j in range(n)] for i in range(m)] for t in range(batch)]
    assert got.tolist() == want


@SETTINGS
@given(st.data(), st.integers(1, 2), st.integers(1, 3), st.integers(2, 7), st.integers(2, 7),
       st.integers(1, 3), st.integers(1, 3), st.integers(0, 1))
def test_maxpool_matches_slow_loops(data, n, c, h, w, k, s, p):
    k = min(k, h, w)
    p = min(p, k // 2)
    x = int_array(data.draw, (n, c, h, w), -128, 127)
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    node = g.MaxPool2d("pool", ("in0",), (n, c, oh, ow), kernel=(k, k), stride=(s, s), padding=(p, p))
    got = reference.run(one_node_model(node, input_shapes=[x.shape]), [x]).outputs[0]
    assert got.tolist() == slow_maxpool(x.tolist(), (k, k), (s, s), (p, p))


@SETTINGS
@given(st.data(), st.integers(1, 10), st.integers(-(1 << 15) + 1, (1 << 15) - 1),
       st.integers(-(1 << 15) + 1, (1 << 15) - 1), st.integers(0, 20), st.booleans())
def test_residual_add_node_matches_slow_loops(data, n, ma, mb, shift, relu):
    a = int_array(data.draw, (1, n), -128, 127)
    b = int_array(data.draw, (1, n), -128, 127)
    node = g.Add("add", ("in0", "in1"), (1, n), relu=relu)
    qm = one_node_model(node, LayerQuant(ma=ma, mb=mb, shift=shift), 2, [a.shape, b.shape])
    got = reference.run(qm, [a, b]).outputs[0]
    want = [min(max(rdbpot(int(x) * ma + int(y) * mb, shift), 0 if relu else -128), 127)
            for x, y in zip(a[0], b[0])]
    assert got[0].tolist() == want


def test_data_movement_and_standalone_relu():
    x = np.arange(-12, 12).reshape(1, 2, 3, 4)
    nodes = [g.Input("x", (), (1, 2, 3, 4)),
             g.Transpose("t", ("x",), (1, 3, 4, 2), perm=(0, 2, 3, 1)),
             g.Reshape("r", ("t",), (1, 24)),
             g.ReLU("relu", ("r",), (1, 24))]
    qm = QuantizedModel(graph=g.Graph(nodes, ["x"], ["relu"]), scales={})
    trace = reference.run(qm, [x])
    assert trace.values["r"].tolist() == [x.transpose(0, 2, 3, 1).ravel().tolist()]
    assert trace.outputs[0].tolist() == [np.maximum(x.transpose(0, 2, 3, 1).ravel(), 0).tolist()]


def test_accumulator_overflow_is_refused():
    k = 4
    w = np.full((1, k), -127)
    node = g.Linear("fc", ("in0",), (1, 1), weight=w.astype(float))
    qm = one_node_model(node, LayerQuant(weight=w, bias=np.array([(1 << 31) - 100]),
                                         m0=np.array([1 << 30]), shift=np.array([0])), input_shapes=[(1, k)])
    try:
        reference.run(qm, [np.full((1, k), -128)])
    except reference.AccumulatorOverflow as e:
        assert "fc" in str(e)
    else:
        raise AssertionError("overflow not detected")
