"""Merges of two activations other than add: ``sub``, ``maximum``, ``minimum``: capture of their
spellings, the integer references against slow Python loops, design.json round trip, both
golden models of the back end bit-exact, the bus traffic of the VMAX schedule, and Verilator
runs bit-exact (one with AXI pauses)."""

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
from pycde_accel.backend import cmdexec, commands, compile_program, executor
from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError
from pycde_accel.frontend import capture, design, graph as g, intmodule, quantize as q, reference

CFG = AccelConfig()

MODEL = '''\
import torch
from torch import nn


class Net(nn.Module):
    """Two conv branches merged by max, min and sub (ReLU fused into the sub), then a Linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        a, b = self.c1(x), self.c2(x)
        y = torch.relu(torch.maximum(a, b) - torch.minimum(a, b))
        z = torch.min(y, a)
        return self.fc(torch.max(z, b).flatten(1))


def build():
    torch.manual_seed(0)
    return Net().eval(), (2.0 * torch.randn(1, 3, 4, 4),)
'''


class _Spellings(nn.Module):
    def forward(self, a, b):
        return (a - b, torch.sub(a, b), torch.maximum(a, b), torch.max(a, b),
                torch.minimum(a, b), torch.min(a, b))


def test_capture_spellings():
    gr = capture.capture(_Spellings(), (torch.randn(2, 8), torch.randn(2, 8)))
    kinds = [n.kind for n in gr.nodes if n.kind != "input"]
    assert kinds == ["sub", "sub", "maximum", "maximum", "minimum", "minimum"]
    assert all(n.inputs == ("a", "b") for n in gr.nodes if n.kind != "input")


@pytest.mark.parametrize("fn,what", [(lambda a, b: a - b, r"aten\.sub\.Tensor with broadcasting"),
                                     (lambda a, b: torch.maximum(a, b), r"aten\.maximum\.default with broadcasting"),
                                     (lambda a, b: torch.sub(a, b, alpha=2), r"aten\.sub\.Tensor with alpha=2")])
def test_refusals(fn, what):
    class M(nn.Module):
        def forward(self, a, b):
            return fn(a, b)
    with pytest.raises(UserError, match="unsupported op " + what):
        capture.capture(M(), (torch.randn(2, 8), torch.randn(1, 8)))


def _rdbpot(t: int, shift: int) -> int:
    """Round half away from zero of t / 2^shift, one integer at a time."""
    mag = math.floor(abs(t) / 2 ** shift + 0.5)
    return mag if t >= 0 else -mag


def _sat(v: int, lo: int = -128) -> int:
    return min(127, max(lo, v))


def _slow(kind, a, b, lq, relu=False):
    out = []
    for x, y in zip(a.ravel().tolist(), b.ravel().tolist()):
        if kind == "sub":
            out.append(_sat(_rdbpot(x * lq.ma + y * lq.mb, lq.shift), 0 if relu else -128))
            continue
        xv, sv = (x, y) if lq.m0 == 0 else (y, x)
        r = _sat(_rdbpot(xv * lq.ma, lq.shift)) if lq.ma else xv
        if kind == "maximum":
            out.append(max(r, sv))
        else:
            out.append(_sat(-max(r, _sat(-sv))))
    return np.array(out, np.int64).reshape(a.shape)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["sub", "maximum", "minimum"]), st.floats(1e-3, 1.0), st.floats(1e-3, 1.0),
       st.booleans(), st.integers(0, 2 ** 31 - 1))
def test_reference_matches_slow_loops_and_float(kind, sa, sb, equal, seed):
    if equal:
        sb = sa
    rng = np.random.default_rng(seed)
    a, b = rng.integers(-128, 128, size=(3, 17)), rng.integers(-128, 128, size=(3, 17))
    node = g.REGISTRY[kind]("y", ("a", "b"), a.shape)
    fa, fb = a * sa, b * sb
    want_f = {"sub": fa - fb, "maximum": np.maximum(fa, fb), "minimum": np.minimum(fa, fb)}[kind]
    s_out, lq = node.quantize({"a": sa, "b": sb}, {"y": float(np.abs(want_f).max())})
    qm = q.QuantizedModel(g.Graph([g.Input("a", (), a.shape), g.Input("b", (), b.shape, index=1), node],
                                  ["a", "b"], ["y"]), {"a": sa, "b": sb, "y": s_out}, {"y": lq})
    y = reference.run(qm, [a, b]).outputs[0]
    np.testing.assert_array_equal(y, _slow(kind, a, b, lq))
    # the codes are the float merge to within a rounding step (and the -128 -> -127 of minimum),
    # plus each multiplier's rounding (half a step of 2**-shift) times |code| <= 128: sub has two
    # (x * ma + y * mb), maximum and minimum one
    mults = 2 if kind == "sub" else 1
    tol = (s_out * (0.5 + mults * 64 * 2.0 ** -lq.shift) + 1e-9
           + (s_out if kind == "minimum" else 0))
    assert np.abs(y * s_out - np.clip(want_f, -128 * s_out, 127 * s_out)).max() <= tol
    ta, tb = (torch.from_numpy(v).to(torch.int8) for v in (a, b))
    np.testing.assert_array_equal(intmodule.IntegerModule(qm)(ta, tb).numpy(), y)


def test_maximum_scale_is_the_larger_and_equal_scales_need_no_rescale():
    node = g.REGISTRY["maximum"]("y", ("a", "b"), (4,))
    s, lq = node.quantize({"a": 0.5, "b": 0.25}, {})
    assert s == 0.5 and lq.m0 == 1 and lq.ma > 0
    s, lq = node.quantize({"a": 0.25, "b": 0.25}, {})
    assert s == 0.25 and lq.ma == 0


@pytest.fixture(scope="module")
def fe(frontend_of):
    return frontend_of("merges", MODEL)


def test_frontend_int8_agrees_with_float(fe):
    kinds = [n.kind for n in fe.quantized.graph.nodes]
    assert kinds == ["input", "conv2d", "conv2d", "maximum", "minimum", "sub", "minimum", "maximum",
                     "reshape", "linear"]
    assert [n.relu for n in fe.quantized.graph.nodes if n.kind == "sub"] == [True]
    assert fe.accuracy["max_abs_error"] < 0.25


def test_design_json_round_trip(fe, tmp_path):
    d = frontend.write(fe, tmp_path)
    (tmp_path / "design.json").write_text(json.dumps(d))
    qm = design.load_quantized(tmp_path)
    x = np.random.default_rng(3).integers(-128, 128, size=(1, 3, 4, 4))
    np.testing.assert_array_equal(reference.run(qm, [x]).outputs[0],
                                  reference.run(fe.quantized, [x]).outputs[0])


@pytest.mark.parametrize("cfg", [CFG, AccelConfig(rows=4, cols=8, axi_data_width=32, spad_c_depth=16)])
def test_backend_golden_models_bit_exact(fe, cfg):
    cp = compile_program(fe, cfg)
    assert [s["op"] for s in cp.stats] == ["gemm", "gemm", "vmax", "add", "vmax", "add", "add", "vmax",
                                           "vmax", "gemm"]
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(-128, 128, size=(1, 3, 4, 4))
        want = reference.run(fe.quantized, [x]).outputs
        got_d, _ = executor.run(cp, [x])
        got_c, _ = cmdexec.run(cp, [x])
        for w, a, b in zip(want, got_d, got_c):
            np.testing.assert_array_equal(a, w)
            np.testing.assert_array_equal(b, w)


def test_vmax_moves_each_operand_once(fe):
    """The rescale's S operand is ZERO beats: the layer reads x and s once and writes y once."""
    cp = compile_program(fe, CFG)
    for s in cp.stats:
        if s["op"] == "vmax":
            span = 16 * 8            # 4x4 pixels of 8 channels (pitch 8)
            assert s["dram_bytes_read"] == 2 * span and s["dram_bytes_written"] == span


def test_verilator_bit_exact(fe, build_accel, tmp_path):
    from pycde_accel.simulate import simulate
    r = simulate(fe, CFG, tmp_path, sim=build_accel(CFG))
    assert r.bit_exact, r.mismatches
    assert [layer["op"] for layer in r.layers] == ["gemm", "gemm", "vmax", "add", "vmax", "add", "add",
                                                   "vmax", "vmax", "gemm"]


@pytest.mark.slow
def test_verilator_bit_exact_with_axi_pauses(fe, build_accel, tmp_path):
    from pycde_accel.simulate import simulate
    r = simulate(fe, CFG, tmp_path, axi_pause=0.3, seed=5, engine="axiram")
    assert r.bit_exact, r.mismatches
