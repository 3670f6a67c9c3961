"""Grouped / depthwise / dilated / asymmetric convolutions, Conv1d, average pooling of every
spelling and MaxPool2d with ceil_mode and dilation: capture, the float meaning against torch,
the integer reference against slow Python loops, the torch integer form, design.json, both
golden models of the back end bit-exact, and Verilator runs (WGEMM, MAXPOOLD)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import pycde_accel
from pycde_accel.backend import cmdexec, compile_program, executor
from pycde_accel.backend import program as P
from pycde_accel.config import AccelConfig
from pycde_accel.frontend import capture, design, intmodule, quantize as q, reference
from pycde_accel.ops.avgpool2d import AvgPool2d
from pycde_accel.ops.conv2d import Conv2d

CFG = AccelConfig()
SMALL = AccelConfig(rows=4, cols=8, axi_data_width=32)


def _kinds(m, x):
    gr = capture.capture(m.eval(), (x,))
    return [n for n in gr.nodes if n.kind != "input"]


class _F(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


# ---- capture ------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,shape,want", [
    (nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), (1, 4, 7, 7),
     dict(kernel=(3, 3), stride=(2, 2), padding=(1, 1), count_include_pad=False, adaptive=False)),
    (lambda x: F.avg_pool2d(x, 2), (1, 4, 6, 6), dict(kernel=(2, 2), stride=(2, 2), adaptive=False)),
    (lambda x: F.avg_pool2d(x, 3, 1, 1, divisor_override=5), (1, 4, 6, 6), dict(divisor=5)),
    (lambda x: x.mean((2, 3)), (1, 4, 5, 3), dict(adaptive=True, kernel=(5, 3))),
    (lambda x: x.mean((-1, -2), keepdim=True), (1, 4, 5, 3), dict(adaptive=True)),
    (nn.AdaptiveAvgPool2d((7, 7)), (1, 4, 1, 1), dict(adaptive=True, kernel=(1, 1))),
    (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), (1, 4, 5, 7), dict(adaptive=True, kernel=(3, 3))),
    (nn.AvgPool1d(3, 2, 1), (1, 4, 9), dict(kernel=(1, 3), stride=(1, 2), padding=(0, 1), one_d=True)),
    (nn.AdaptiveAvgPool1d(4), (1, 4, 9), dict(adaptive=True, one_d=True)),
    (lambda x: x.mean(2), (1, 4, 9), dict(adaptive=True, one_d=True, kernel=(1, 9))),
])
def test_capture_average_pooling(fn, shape, want):
    nodes = _kinds(_F(fn), torch.randn(shape))
    assert [n.kind for n in nodes] == ["avgpool2d"]
    for k, v in want.items():
        assert getattr(nodes[0], k) == v, k


@pytest.mark.parametrize("mod,shape,want", [
    (nn.Conv2d(8, 8, 3, padding=1, groups=8), (1, 8, 5, 5), dict(groups=8)),
    (nn.Conv2d(8, 16, 3, padding=1, groups=2, bias=False), (1, 8, 5, 5), dict(groups=2, bias=None)),
    (nn.Conv2d(4, 8, 3, padding=2, dilation=2), (1, 4, 6, 6), dict(dilation=(2, 2))),
    (nn.Conv2d(4, 8, 4, padding="same"), (1, 4, 6, 6), dict(padding=(1, 1), pad_end=(2, 2))),
    (nn.Conv2d(4, 8, 3, padding="valid"), (1, 4, 6, 6), dict(padding=(0, 0), pad_end=None)),
    (nn.Conv1d(4, 8, 3, padding=1), (1, 4, 9), dict(one_d=True, padding=(0, 1), stride=(1, 1))),
])
def test_capture_convolutions(mod, shape, want):
    nodes = _kinds(mod, torch.randn(shape))
    assert [n.kind for n in nodes] == ["conv2d"]
    for k, v in want.items():
        got = getattr(nodes[0], k)
        assert (got is None) if v is None else got == v, k


def test_capture_maxpool_ceil_dilation_and_1d():
    n = _kinds(nn.MaxPool2d(3, 2, ceil_mode=True, dilation=2), torch.randn(1, 4, 9, 9))[0]
    assert (n.kind, n.ceil_mode, n.dilation) == ("maxpool2d", True, (2, 2))
    n = _kinds(nn.MaxPool1d(2), torch.randn(1, 4, 9))[0]
    assert (n.kind, n.one_d, n.kernel) == ("maxpool2d", True, (1, 2))


def test_plain_ops_keep_their_design_attrs():
    """The plain conv and max-pool carry no new attributes (their design.json is unchanged)."""
    c = _kinds(nn.Conv2d(3, 8, 3, padding=1), torch.randn(1, 3, 4, 4))[0]
    assert set(c.attrs()) == {"in_channels", "out_channels", "kernel", "stride", "padding", "bias", "relu"}
    m = _kinds(nn.MaxPool2d(2), torch.randn(1, 3, 4, 4))[0]
    assert set(m.attrs()) == {"kernel", "stride", "padding"}


# ---- float meaning against torch -----------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 4), st.integers(1, 3), st.integers(0, 2),
       st.booleans(), st.booleans(), st.integers(0, 2 ** 31 - 1))
def test_avgpool_float_matches_torch(h, w, k, s, p, ceil, cip, seed):
    if p > k // 2 or h + 2 * p < k or w + 2 * p < k:
        return
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal((1, 3, h, w)))
    y = F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=cip)
    node = AvgPool2d("a", ("x",), tuple(y.shape), kernel=(k, k), stride=(s, s), padding=(p, p),
                     count_include_pad=cip, in_shape=tuple(x.shape))
    np.testing.assert_allclose(node.float_eval([x.numpy()], None), y.numpy(), rtol=1e-12, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9), st.integers(1, 9), st.integers(0, 2 ** 31 - 1))
def test_adaptive_float_matches_torch(h, w, oh, ow, seed):
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal((2, 3, h, w)))
    y = F.adaptive_avg_pool2d(x, (oh, ow))
    node = AvgPool2d("a", ("x",), tuple(y.shape), adaptive=True, in_shape=tuple(x.shape))
    node.kernel = node._adaptive_kernel(x.shape)
    np.testing.assert_allclose(node.float_eval([x.numpy()], None), y.numpy(), rtol=1e-12, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([(8, 8, 8), (8, 16, 2), (6, 6, 3), (4, 8, 1), (8, 8, 1)]), st.integers(1, 3),
       st.integers(1, 2), st.integers(1, 2), st.integers(0, 2), st.integers(0, 2 ** 31 - 1))
def test_conv_float_matches_torch(chans, k, s, d, p, seed):
    cin, cout, groups = chans
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal((1, cin, 7, 6)))
    conv = nn.Conv2d(cin, cout, k, s, p, dilation=d, groups=groups).double()
    with torch.no_grad():
        y = conv(x)
    node = Conv2d("c", ("x",), tuple(y.shape), weight=conv.weight.detach().numpy(),
                  bias=conv.bias.detach().numpy(), stride=(s, s), padding=(p, p), groups=groups,
                  dilation=(d, d))
    np.testing.assert_allclose(node.float_eval([x.numpy()], None), y.numpy(), rtol=1e-9, atol=1e-9)


# ---- integer reference against slow loops --------------------------------------------------

def _slow_avg(x, node, lq):
    """Window sums by explicit loops over PyTorch's window rules, then requantize."""
    n, c, h, w = x.shape
    oh, ow = node.shape[2], node.shape[3]
    g = node.geometry(x.shape)
    out = np.zeros((n, c, oh, ow), np.int64)
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    acc = 0
                    for ki in range(node.kernel[0]):
                        for kj in range(node.kernel[1]):
                            if node.adaptive:
                                ih = i * h // oh + ki
                                iw = j * w // ow + kj
                                if ih >= math.ceil((i + 1) * h / oh) or iw >= math.ceil((j + 1) * w / ow):
                                    continue
                            else:
                                ih = i * node.stride[0] + ki - node.padding[0]
                                iw = j * node.stride[1] + kj - node.padding[1]
                            if 0 <= ih < h and 0 <= iw < w:
                                acc += int(x[b, ch, ih, iw]) * AvgPool2d.UNIT
                    r = g.record(i, j)
                    out[b, ch, i, j] = q.requantize(np.array([acc]), lq.m0[r], lq.shift[r])[0]
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 8), st.integers(1, 8), st.integers(1, 3), st.integers(1, 3), st.integers(0, 1),
       st.booleans(), st.booleans(), st.booleans(), st.integers(0, 2 ** 31 - 1))
def test_avgpool_reference_matches_slow_loops(h, w, k, s, p, ceil, cip, adaptive, seed):
    rng = np.random.default_rng(seed)
    if adaptive:
        shape = (1, 3, int(rng.integers(1, 5)), int(rng.integers(1, 5)))
        node = AvgPool2d("a", ("x",), shape, adaptive=True, in_shape=(1, 3, h, w))
        node.kernel = node._adaptive_kernel((1, 3, h, w))
    else:
        if p > k // 2 or h + 2 * p < k or w + 2 * p < k:
            return
        shape = tuple(F.avg_pool2d(torch.zeros(1, 3, h, w), k, s, p, ceil_mode=ceil).shape)
        node = AvgPool2d("a", ("x",), shape, kernel=(k, k), stride=(s, s), padding=(p, p),
                         count_include_pad=cip, in_shape=(1, 3, h, w))
    x = rng.integers(-128, 128, size=(1, 3, h, w))
    s_out, lq = node.quantize({"x": 0.05}, {"a": float(rng.uniform(0.5, 8.0))})
    y = node.reference([x], lq, None)
    np.testing.assert_array_equal(y, _slow_avg(x, node, lq))
    # the codes are the float average rounded (the requantize's double rounding and the
    # multiplier's 31 bits add well under a hundredth of a step)
    want = np.clip(node.float_eval([x * 0.05], None), -128 * s_out, 127 * s_out)
    assert np.abs(y * s_out - want).max() <= s_out * 0.51 + 1e-9


def _slow_conv(x, w, b, stride, pads, dil, groups):
    n, cin, h, wd = x.shape
    oc, gin, kh, kw = w.shape
    gout = oc // groups
    oh = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    acc = np.zeros((n, oc, oh, ow), np.int64)
    for o in range(oc):
        g = o // gout
        for i in range(oh):
            for j in range(ow):
                s = 0 if b is None else int(b[o])
                for cl in range(gin):
                    for ki in range(kh):
                        for kj in range(kw):
                            ih = i * stride[0] + ki * dil[0] - pads[0]
                            iw = j * stride[1] + kj * dil[1] - pads[2 - 1]
                            if 0 <= ih < h and 0 <= iw < wd:
                                s += int(x[0, g * gin + cl, ih, iw]) * int(w[o, cl, ki, kj])
                acc[0, o, i, j] = s
    return acc


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([(8, 8, 8), (8, 16, 2), (6, 6, 3), (4, 8, 1)]), st.integers(1, 3),
       st.integers(1, 2), st.integers(1, 2), st.tuples(*[st.integers(0, 2)] * 4), st.booleans(),
       st.integers(0, 2 ** 31 - 1))
def test_conv_reference_matches_slow_loops(chans, k, s, d, pads, bias, seed):
    cin, cout, groups = chans
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(1, cin, 6, 5))
    wq = rng.integers(-127, 128, size=(cout, cin // groups, k, k))
    bq = rng.integers(-1000, 1000, size=cout) if bias else None
    oh = (6 + pads[0] + pads[2] - d * (k - 1) - 1) // s + 1
    ow = (5 + pads[1] + pads[3] - d * (k - 1) - 1) // s + 1
    if oh < 1 or ow < 1:
        return
    node = Conv2d("c", ("x",), (1, cout, oh, ow), weight=wq.astype(np.float64), stride=(s, s),
                  padding=pads[:2], pad_end=pads[2:], groups=groups, dilation=(d, d))
    m0 = rng.integers(1 << 30, 1 << 31, size=cout)
    shift = rng.integers(8, 16, size=cout)
    lq = q.LayerQuant(weight=wq, bias=bq, m0=m0, shift=shift)

    class Run:
        acc = {}
    y = node.reference([x], lq, Run)
    acc = _slow_conv(x, wq, bq, (s, s), pads, (d, d), groups)
    np.testing.assert_array_equal(y, q.requantize(acc, m0[None, :, None, None], shift[None, :, None, None]))


# ---- whole models: torch integer form, design.json, golden back ends ------------------------

class _Mobile(nn.Module):
    """mobilenet-like: conv, depthwise + BN + ReLU6, grouped dilated conv without bias, pointwise,
    avg pools (count_include_pad off, ceil mode), adaptive (not dividing) and a spatial mean."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.dw = nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16)
        self.bn = nn.BatchNorm2d(16)
        self.act = nn.ReLU6()
        self.g = nn.Conv2d(16, 16, 3, padding=2, dilation=2, groups=2, bias=False)
        self.same = nn.Conv2d(16, 8, 2, padding="same")
        self.ap = nn.AvgPool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=False)
        self.aap = nn.AdaptiveAvgPool2d((4, 3))
        self.mp = nn.MaxPool2d(2, 1, ceil_mode=True, dilation=2)

    def forward(self, x):
        y = self.act(self.bn(self.dw(F.relu(self.c1(x)))))
        y = self.same(self.g(y))
        y = self.mp(self.aap(self.ap(y)))
        return y.mean((2, 3), keepdim=True)


class _OneD(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv1d(4, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm1d(16)
        self.mp = nn.MaxPool1d(2, ceil_mode=True)
        self.dw = nn.Conv1d(16, 16, 3, groups=16, dilation=2, padding="same")
        self.ap = nn.AvgPool1d(3, 2, padding=1)
        self.aap = nn.AdaptiveAvgPool1d(3)

    def forward(self, x):
        y = self.mp(F.relu(self.bn(self.c(x))))
        return self.aap(self.ap(self.dw(y))).mean(2)


class _Pools(nn.Module):
    """24 channels (three n-tiles at 8 columns): the shared unit-weight panel over n-tiles, and a
    global mean whose lanes are n-tiles of one pixel."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 24, 3, padding=1)
        self.ap = nn.AvgPool2d(2)

    def forward(self, x):
        return self.ap(F.relu(self.c(x))).mean((2, 3))


def _design(m, shape, seed=0):
    torch.manual_seed(seed)
    m = m.eval()
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
                mod.weight.uniform_(0.5, 1.5)
                mod.running_var.uniform_(0.5, 2.0)
    return pycde_accel.compile(m, (2.0 * torch.randn(shape),), config=CFG)


@pytest.fixture(scope="module")
def mobile():
    return _design(_Mobile(), (1, 3, 9, 8))


@pytest.fixture(scope="module")
def pools():
    return _design(_Pools(), (1, 3, 6, 4))


@pytest.fixture(scope="module")
def oned():
    return _design(_OneD(), (1, 4, 19))


@pytest.mark.parametrize("which", ["mobile", "oned"])
def test_int8_agrees_with_float_and_torch_integer_form(which, request):
    d = request.getfixturevalue(which)
    fe = d.frontend
    # (the 1-d model's final mean has a narrow calibrated range: unseen inputs clip there)
    assert fe.accuracy["top1_agreement"] >= 0.95
    assert fe.accuracy["max_abs_error"] < (0.05 if which == "mobile" else 1.0)
    x = np.random.default_rng(2).integers(-128, 128, size=fe.quantized.graph.node(fe.quantized.graph.inputs[0]).shape)
    want = reference.run(fe.quantized, [x]).outputs[0]
    got = intmodule.IntegerModule(fe.quantized)(torch.from_numpy(x).to(torch.int8)).numpy()
    np.testing.assert_array_equal(got, want)


def test_design_json_round_trip(mobile, tmp_path):
    from pycde_accel import frontend
    d = frontend.write(mobile.frontend, tmp_path)
    (tmp_path / "design.json").write_text(json.dumps(d))
    qm = design.load_quantized(tmp_path)
    x = np.random.default_rng(3).integers(-128, 128, size=(1, 3, 9, 8))
    np.testing.assert_array_equal(reference.run(qm, [x]).outputs[0],
                                  reference.run(mobile.frontend.quantized, [x]).outputs[0])


@pytest.mark.parametrize("which", ["mobile", "oned", "pools"])
@pytest.mark.parametrize("cfg", [CFG, SMALL])
def test_backend_golden_models_bit_exact(which, cfg, request):
    fe = request.getfixturevalue(which).frontend
    cp = compile_program(fe, cfg)
    ops = [s["op"] for s in cp.stats]
    assert "wgemm" in ops
    if which == "mobile":
        assert "maxpoold" in ops
    rng = np.random.default_rng(1)
    shape = fe.quantized.graph.node(fe.quantized.graph.inputs[0]).shape
    for _ in range(2):
        x = rng.integers(-128, 128, size=shape)
        want = reference.run(fe.quantized, [x]).outputs
        got_d, _ = executor.run(cp, [x])
        got_c, _ = cmdexec.run(cp, [x])
        for w, a, b in zip(want, got_d, got_c):
            np.testing.assert_array_equal(a, w)
            np.testing.assert_array_equal(b, w)


def test_depthwise_reads_one_tile_of_channels():
    """A depthwise conv's K is its taps times one n-tile of channels, not the whole pitch."""
    d = _design(nn.Sequential(nn.Conv2d(3, 32, 1), nn.Conv2d(32, 32, 3, padding=1, groups=32)), (1, 3, 4, 4))
    dw = d.compiled.program.layers[1]
    assert (dw.KIND, dw.slice, dw.slice_step, dw.n_tiles) == ("wgemm", CFG.cols, CFG.cols, 4)
    # model MACs (Node.macs): every output value times its 3x3 taps of one input channel; the
    # array's in the core's depthwise mode (cols == AXI bytes): the same, column j = channel j
    assert CFG.cols * 8 == CFG.axi_data_width and dw.has(P.DEPTHWISE)
    assert d.compiled.stats[1]["macs"] == 4 * 4 * 32 * 9
    assert d.compiled.stats[1]["array_macs"] == 4 * 4 * 32 * 9
    assert d.compiled.stats[1]["padding_waste"] == 0


# ---- Verilator -------------------------------------------------------------------------------

@pytest.mark.parametrize("which,pause", [("mobile", 0.25), ("oned", 0.0), ("pools", 0.2)])
def test_verilator_bit_exact(which, pause, request, build_accel, tmp_path):
    from pycde_accel.simulate import simulate
    d = request.getfixturevalue(which)
    r = simulate(d.frontend, CFG, tmp_path, sim=build_accel(CFG), axi_pause=pause)
    assert r.bit_exact, r.mismatches
    assert "wgemm" in [layer["op"] for layer in r.layers]


class _DwNet(nn.Module):
    """conv -> depthwise 3x3 stride 1 -> depthwise 3x3 stride 2 (padding) -> pointwise."""

    def __init__(self, ch):
        super().__init__()
        self.c = nn.Conv2d(3, ch, 3, padding=1)
        self.d1 = nn.Conv2d(ch, ch, 3, padding=1, groups=ch)
        self.d2 = nn.Conv2d(ch, ch, 3, stride=2, padding=1, groups=ch)
        self.pw = nn.Conv2d(ch, 8, 1)

    def forward(self, x):
        return self.pw(F.relu(self.d2(F.relu(self.d1(F.relu(self.c(x)))))))


@pytest.mark.parametrize("ch", [8, 16, 12])
def test_depthwise_mode_verilator_bit_exact(ch, build_accel, tmp_path):
    """The core's depthwise mode (EXEC DW) on a whole model, bit-exact in Verilator; its array
    MACs are the model's (12 channels: the second n-tile's 4 empty columns are the waste)."""
    from pycde_accel.simulate import simulate
    d = _design(_DwNet(ch), (1, 3, 7, 6))
    dws = [i for i, l in enumerate(d.compiled.program.layers) if l.KIND == "wgemm"]
    assert len(dws) == 2 and all(d.compiled.program.layers[i].has(P.DEPTHWISE) for i in dws)
    for i in dws:
        s = d.compiled.stats[i]
        assert s["padding_waste"] == round(1 - ch / (-(-ch // CFG.cols) * CFG.cols), 6)
    r = simulate(d.frontend, CFG, tmp_path, sim=build_accel(CFG), axi_pause=0.2)
    assert r.bit_exact, r.mismatches
