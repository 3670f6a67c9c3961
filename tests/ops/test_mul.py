"""The ``mul`` op (element-wise product of two activations, same shape or squeeze-and-excitation
broadcast): capture of its spellings and refusals, the integer reference against slow Python
loops and the float product, the torch integer form, design.json round trip, both golden models
of the back end bit-exact, and Verilator runs (one with AXI pauses)."""

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
from pycde_accel.backend import commands as CMD
from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError
from pycde_accel.frontend import capture, design, graph as g, intmodule, quantize as q, reference
from pycde_accel.ops import mul as M

CFG = AccelConfig()


class _Two(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x, y):
        return self.f(x + x, y + y)


@pytest.mark.parametrize("f", [lambda a, b: a * b, torch.mul, lambda a, b: a.mul(b),
                               lambda a, b: b * a])
@pytest.mark.parametrize("shapes", [((1, 4, 3, 3), (1, 4, 3, 3)), ((1, 4, 3, 3), (1, 4, 1, 1)),
                                    ((2, 4, 3, 3), (2, 4, 1, 1)), ((2, 6), (2, 6))])
def test_capture(f, shapes):
    gr = capture.capture(_Two(f), tuple(torch.randn(s) for s in shapes))
    muls = [n for n in gr.nodes if n.kind == "mul"]
    assert len(muls) == 1 and muls[0].shape == max(shapes, key=math.prod)


@pytest.mark.parametrize("shapes", [((1, 4, 3, 3), (1, 1, 3, 3)), ((1, 4, 3, 3), (4, 1, 1)),
                                    ((2, 6), (1, 6))])
def test_other_broadcasts_are_refused(shapes):
    with pytest.raises(UserError, match=r"unsupported op aten\.mul\.Tensor with broadcasting"):
        capture.capture(_Two(lambda a, b: a * b), tuple(torch.randn(s) for s in shapes))


def test_constant_operand_is_an_affine_map_not_a_product():
    class C(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.p = nn.Parameter(torch.randn(4))

        def forward(self, x):
            return self.fc(x) * 3.0, x * self.p
    gr = capture.capture(C(), (torch.randn(1, 4),))
    kinds = [n.kind for n in gr.nodes]
    assert "mul" not in kinds
    assert kinds.count("linear") == 2      # 3.0 folded into fc; x * p a diagonal Linear


def _slow(a, b, m0, shift):
    """One element at a time, Python ints: SRDHM then RoundingDivideByPOT then sat8."""
    out = []
    for x, y in zip(a.ravel().tolist(), b.ravel().tolist()):
        p = x * y * m0
        nudge = (1 << 30) if p >= 0 else 1 - (1 << 30)
        t = p + nudge
        hi = abs(t) >> 31
        hi = hi if t >= 0 else -hi                      # C truncating division by 2^31
        mask = (1 << shift) - 1
        r = (hi >> shift) + ((hi & mask) > (mask >> 1) + (1 if hi < 0 else 0))
        out.append(min(127, max(-128, r)))
    return np.array(out, np.int64).reshape(a.shape)


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-3, 0.1), st.floats(1e-3, 0.1), st.floats(0.05, 1.2), st.booleans(),
       st.integers(0, 2 ** 31 - 1))
def test_reference_matches_slow_loops_and_float(sa, sb, frac, bcast, seed):
    rng = np.random.default_rng(seed)
    shape_b = (1, 3, 1, 1) if bcast else (1, 3, 2, 5)
    a = rng.integers(-128, 128, size=(1, 3, 2, 5))
    b = rng.integers(-128, 128, size=shape_b)
    node = M.Mul("m", ("a", "b"), a.shape)
    maxabs = {"m": frac * 16384 * sa * sb}
    s_out, lq = node.quantize({"a": sa, "b": sb}, maxabs)
    qm = q.QuantizedModel(g.Graph([g.Input("a", (), a.shape), g.Input("b", (), shape_b, index=1),
                                   node], ["a", "b"], ["m"]),
                          {"a": sa, "b": sb, "m": s_out}, {"m": lq})
    y = reference.run(qm, [a, b]).outputs[0]
    np.testing.assert_array_equal(y, _slow(a, np.broadcast_to(b, a.shape), lq.m0, lq.shift))
    want = a * sa * (b * sb)
    inside = np.abs(want) <= 126 * s_out
    # half an output step, plus SRDHM's rounding at 2^-shift of a step before RoundingDivideByPOT
    tol = s_out * (0.5 + 2.0 ** -lq.shift + 1e-6)
    assert np.all(np.abs(y * s_out - want)[inside] <= tol)
    ti = intmodule.IntegerModule(qm)(torch.from_numpy(a).to(torch.int8),
                                     torch.from_numpy(b).to(torch.int8))
    np.testing.assert_array_equal(ti.numpy(), y)


MODEL = '''\
import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    """Hardswish conv, a squeeze-and-excitation gate (max-pool to 1x1, 1x1 conv, sigmoid)
    multiplied into the map, x * tanh(x) (same shape), a Linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(4)
        self.conv2 = nn.Conv2d(8, 8, 1)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        y = F.hardswish(self.conv(x))
        s = torch.sigmoid(self.conv2(self.pool(y)))
        y = y * s
        y = y * torch.tanh(y)
        return self.fc(y.flatten(1))


def build():
    torch.manual_seed(0)
    return Net().eval(), (2.0 * torch.randn(1, 3, 4, 4),)
'''

OPS = ["gemm", "lut", "maxpool", "gemm", "lut", "mul", "lut", "mul", "gemm"]


@pytest.fixture(scope="module")
def fe(frontend_of):
    return frontend_of("mul", MODEL)


def test_design_json_round_trip(fe, tmp_path):
    d = frontend.write(fe, tmp_path)
    (tmp_path / "design.json").write_text(json.dumps(d))
    qm = design.load_quantized(tmp_path)
    x = np.random.default_rng(3).integers(-128, 128, size=(1, 3, 4, 4))
    np.testing.assert_array_equal(reference.run(qm, [x]).outputs[0],
                                  reference.run(fe.quantized, [x]).outputs[0])


@pytest.mark.parametrize("cfg", [CFG, AccelConfig(rows=4, cols=8, axi_data_width=32)])
def test_backend_golden_models_bit_exact(fe, cfg):
    cp = compile_program(fe, cfg)
    assert [s["op"] for s in cp.stats] == OPS
    se = cp.commands[5]
    ab, pb = cfg.axi_data_width // 8, cfg.cols // (cfg.axi_data_width // 8)
    # the gate vector once into X, the map streamed through S, X re-read per pixel
    assert [type(c).__name__ for c in se] == ["Load", "Load", "Vec"]
    assert se[0].dst == CMD.DST_X and se[0].beats == pb
    assert se[2].flags == CMD.V_MUL and se[2].mb == pb and se[2].n == 16 * pb
    assert cp.stats[5]["dram_bytes_read"] == (pb + 16 * pb) * ab
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
    assert [layer["op"] for layer in r.layers] == OPS


@pytest.mark.slow
def test_verilator_bit_exact_axi_pauses(fe, build_accel, tmp_path):
    from pycde_accel.simulate import simulate
    r = simulate(fe, CFG, tmp_path, sim=build_accel(CFG), axi_pause=0.3, seed=9)
    assert r.bit_exact, r.mismatches
