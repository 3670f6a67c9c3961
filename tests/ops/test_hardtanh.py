"""The ``hardtanh`` op (ReLU6, Hardtanh(0, b), clamp(0, b)): capture, integer reference against
slow Python loops, the torch integer form, design.json round trip, both golden models of the
back end bit-exact, and one small Verilator run."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from pycde_accel import frontend
from pycde_accel.backend import cmdexec, compile_program, executor
from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError
from pycde_accel.frontend import capture, design, graph as g, intmodule, quantize as q, reference
from pycde_accel.lowering import postops

CFG = AccelConfig()

MODEL = '''\
import torch
from torch import nn


class Net(nn.Module):
    """conv + BN + ReLU6 (mobilenet's block) on a channels-last map, a Linear, clamp(0, 3) on
    its output."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.act = nn.ReLU6()
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        y = self.act(self.bn(self.conv(x)))
        return torch.clamp(self.fc(y.flatten(1)), 0.0, 3.0)


def build():
    torch.manual_seed(0)
    return Net().eval(), (2.0 * torch.randn(1, 3, 4, 4),)
'''


class _Acts(nn.Module):
    def forward(self, x):
        return nn.ReLU6()(x), nn.functional.relu6(x + x), nn.Hardtanh(0.0, 2.0)(x), \
            torch.clamp(x, 0, 3)


def test_capture_relu6_hardtanh_clamp():
    gr = capture.capture(_Acts(), (torch.randn(2, 8),))
    ht = [n for n in gr.nodes if n.kind == "hardtanh"]
    assert [(n.min_val, n.max_val) for n in ht] == [(0.0, 6.0), (0.0, 6.0), (0.0, 2.0), (0.0, 3.0)]


@pytest.mark.parametrize("fn,bounds", [(lambda x: nn.functional.hardtanh(x), (-1.0, 1.0)),
                                       (lambda x: torch.clamp(x, max=3.0), (None, 3.0)),
                                       (lambda x: torch.clamp(x, 1.0, 3.0), (1.0, 3.0))])
def test_other_bounds_become_the_function_table(fn, bounds):
    class M(nn.Module):
        def forward(self, x):
            return fn(x)
    gr = capture.capture(M(), (torch.randn(1, 4),))
    luts = [n for n in gr.nodes if n.kind == "lut"]
    assert [(n.fn, n.params) for n in luts] == [("hardtanh", bounds)]
    assert not [n for n in gr.nodes if n.kind == "hardtanh"]


def _slow_reference(x, ma, shift):
    """clip(round(x * ma / 2^shift), 0, 127), ties away from zero, one element at a time."""
    out = []
    for v in x.ravel().tolist():
        t = v * ma
        r = abs(t) / 2 ** shift
        mag = math.floor(r + 0.5)
        out.append(min(127, max(0, mag if t >= 0 else -mag)))
    return np.array(out, np.int64).reshape(x.shape)


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-3, 1.0), st.floats(0.5, 8.0), st.floats(0.05, 1.5), st.integers(0, 2 ** 31 - 1))
def test_reference_matches_slow_loops_and_float(s_in, max_val, frac, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(3, 17))
    node = g.Hardtanh("h", ("x",), x.shape, max_val=max_val)
    inp = g.Input("x", (), x.shape)
    maxabs = {"h": min(max_val, frac * 127 * s_in)}
    s_out, lq = node.quantize({"x": s_in}, maxabs)
    qm = q.QuantizedModel(g.Graph([inp, node], ["x"], ["h"]), {"x": s_in, "h": s_out}, {"h": lq})
    y = reference.run(qm, [x]).outputs[0]
    np.testing.assert_array_equal(y, _slow_reference(x, lq.ma, lq.shift))
    assert 127 * s_out <= max_val * (1 + 1e-12)
    # within the calibrated range the codes are the quantized float clamp, to one step
    want = np.clip(np.clip(x * s_in, 0.0, max_val), 0.0, 127 * s_out)
    assert np.abs(y * s_out - want).max() <= s_out * (0.5 + 64 * 2.0 ** -lq.shift) + 1e-9
    np.testing.assert_array_equal(intmodule.IntegerModule(qm)(torch.from_numpy(x).to(torch.int8)).numpy(), y)


@pytest.fixture(scope="module")
def fe(frontend_of):
    return frontend_of("hardtanh", MODEL)


def test_frontend_int8_agrees_with_float(fe):
    kinds = [n.kind for n in fe.quantized.graph.nodes]
    assert kinds == ["input", "conv2d", "hardtanh", "reshape", "linear", "hardtanh"]
    assert fe.accuracy["max_abs_error"] < 0.25
    kernels = [p["kernel"] for _, p in postops.extract(fe.quantized)]
    assert kernels == ["requantize_pc", "residual_add", "requantize_pc", "residual_add"]


def test_design_json_round_trip(fe, tmp_path):
    d = frontend.write(fe, tmp_path)
    (tmp_path / "design.json").write_text(json.dumps(d))
    qm = design.load_quantized(tmp_path)
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, size=(1, 3, 4, 4))
    np.testing.assert_array_equal(reference.run(qm, [x]).outputs[0],
                                  reference.run(fe.quantized, [x]).outputs[0])


@pytest.mark.parametrize("cfg", [CFG, AccelConfig(rows=4, cols=8, axi_data_width=32)])
def test_backend_golden_models_bit_exact(fe, cfg):
    cp = compile_program(fe, cfg)
    assert [s["kind"] for s in cp.stats] == ["conv2d", "hardtanh", "linear", "hardtanh"]
    assert [s["op"] for s in cp.stats] == ["gemm", "add", "gemm", "add"]
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(-128, 128, size=(1, 3, 4, 4))
        want = reference.run(fe.quantized, [x]).outputs
        got_d, _ = executor.run(cp, [x])
        got_c, _ = cmdexec.run(cp, [x])
        for w, a, b in zip(want, got_d, got_c):
            np.testing.assert_array_equal(a, w)
            np.testing.assert_array_equal(b, w)


def test_verilator_bit_exact(fe, build_accel, tmp_path):
    from pycde_accel.simulate import simulate
    r = simulate(fe, CFG, tmp_path, sim=build_accel(CFG))
    assert r.bit_exact, r.mismatches
    assert [layer["op"] for layer in r.layers] == ["gemm", "add", "gemm", "add"]
