"""The ``lut`` op (element-wise functions of one activation by a 256-entry table): capture of
each spelling, the table against the float function (within half an output step) and against
slow Python loops, the torch integer form, design.json round trip, both golden models of the
back end bit-exact, and a Verilator run with AXI pauses."""

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

from pycde_accel import frontend
from pycde_accel.backend import cmdexec, compile_program, executor
from pycde_accel.backend import commands as CMD
from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError
from pycde_accel.frontend import capture, design, graph as g, intmodule, quantize as q, reference
from pycde_accel.lowering import postops
from pycde_accel.ops import lut as L

CFG = AccelConfig()

# (spelling, callable or module, expected (fn, params))
SPELLINGS = [
    ("nn.LeakyReLU", nn.LeakyReLU(0.1), ("leaky_relu", (0.1,))),
    ("F.leaky_relu", lambda x: F.leaky_relu(x, 0.2), ("leaky_relu", (0.2,))),
    ("nn.LeakyReLU inplace", nn.LeakyReLU(inplace=True), ("leaky_relu", (0.01,))),
    ("nn.PReLU", nn.PReLU(init=0.3), ("prelu", (pytest.approx(0.3),))),
    ("nn.ELU", nn.ELU(0.5), ("elu", (0.5, 1.0, 1.0))),
    ("F.elu", F.elu, ("elu", (1.0, 1.0, 1.0))),
    ("nn.CELU", nn.CELU(2.0), ("celu", (2.0,))),
    ("nn.SELU", nn.SELU(), ("selu", ())),
    ("nn.Threshold", nn.Threshold(0.1, 20.0), ("threshold", (0.1, 20.0))),
    ("F.threshold", lambda x: F.threshold(x, 0.5, -1.0), ("threshold", (0.5, -1.0))),
    ("nn.Sigmoid", nn.Sigmoid(), ("sigmoid", ())),
    ("torch.sigmoid", torch.sigmoid, ("sigmoid", ())),
    ("F.sigmoid", F.sigmoid, ("sigmoid", ())),
    ("x.sigmoid", lambda x: x.sigmoid(), ("sigmoid", ())),
    ("nn.SiLU", nn.SiLU(), ("silu", ())),
    ("F.silu", F.silu, ("silu", ())),
    ("nn.Hardswish", nn.Hardswish(), ("hardswish", ())),
    ("F.hardswish", F.hardswish, ("hardswish", ())),
    ("nn.Hardsigmoid", nn.Hardsigmoid(), ("hardsigmoid", ())),
    ("F.hardsigmoid", F.hardsigmoid, ("hardsigmoid", ())),
    ("nn.Tanh", nn.Tanh(), ("tanh", ())),
    ("torch.tanh", torch.tanh, ("tanh", ())),
    ("F.tanh", F.tanh, ("tanh", ())),
    ("nn.GELU", nn.GELU(), ("gelu", ("none",))),
    ("nn.GELU tanh", nn.GELU("tanh"), ("gelu", ("tanh",))),
    ("F.gelu tanh", lambda x: F.gelu(x, approximate="tanh"), ("gelu", ("tanh",))),
    ("nn.Softplus", nn.Softplus(2.0, 10.0), ("softplus", (2.0, 10.0))),
    ("F.softplus", F.softplus, ("softplus", (1.0, 20.0))),
    ("nn.Mish", nn.Mish(), ("mish", ())),
    ("nn.Hardshrink", nn.Hardshrink(0.3), ("hardshrink", (0.3,))),
    ("nn.Softshrink", nn.Softshrink(), ("softshrink", (0.5,))),
    ("nn.LogSigmoid", nn.LogSigmoid(), ("log_sigmoid", ())),
    ("nn.RReLU eval", nn.RReLU(0.1, 0.3), ("rrelu", (0.1, 0.3))),
    ("torch.exp", torch.exp, ("exp", ())),
    ("torch.abs", torch.abs, ("abs", ())),
    ("torch.neg", torch.neg, ("neg", ())),
    ("torch.erf", torch.erf, ("erf", ())),
    ("torch.sin", torch.sin, ("sin", ())),
    ("torch.cos", torch.cos, ("cos", ())),
]


class _Fn(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x + x)


@pytest.mark.parametrize("spelling,f,want", SPELLINGS, ids=[s for s, _, _ in SPELLINGS])
def test_capture_each_spelling(spelling, f, want):
    m = _Fn(f).eval()
    x = torch.randn(1, 4, 3, 3)
    gr = capture.capture(m, (x,))
    nodes = [n for n in gr.nodes if n.kind == "lut"]
    assert len(nodes) == 1
    assert (nodes[0].fn, nodes[0].params) == want
    # the float meaning is torch's
    got = nodes[0].float_eval([(x + x).double().numpy()], None)
    with torch.no_grad():
        np.testing.assert_allclose(got, m(x).double().numpy(), rtol=1e-5, atol=1e-6)


def test_per_channel_prelu_is_refused_equal_slopes_are_one():
    p = nn.PReLU(4)
    with torch.no_grad():
        p.weight.copy_(torch.tensor([0.1, 0.2, 0.3, 0.4]))
    with pytest.raises(UserError, match=r"unsupported op aten\.prelu\.default with 4 different "
                                        r"per-channel slopes .* in module \S*"):
        capture.capture(_Fn(p), (torch.randn(1, 4, 3, 3),))
    gr = capture.capture(_Fn(nn.PReLU(4, init=0.2)), (torch.randn(1, 4, 3, 3),))
    assert [n.params for n in gr.nodes if n.kind == "lut"] == [(pytest.approx(0.2),)]


def test_unsupported_op_message_lists_the_functions():
    class M(nn.Module):
        def forward(self, x):
            return torch.sqrt(x)
    with pytest.raises(UserError, match=r"unsupported op aten\.sqrt\.default .*element-wise "
                                        r"functions of one activation \(LeakyReLU/PReLU/ELU"):
        capture.capture(M(), (torch.rand(1, 4),))


def _slow_table(fn, params, s_in, s_out):
    """One code at a time: the float function of the dequantized code, rounded half to even."""
    f = L.float_fn(fn, params)
    out = []
    for c in range(-128, 128):
        v = float(f(np.array([c * s_in]))[0]) / s_out
        out.append(int(min(127, max(-128, round(v)))))   # Python round: ties to even
    return out


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(sorted(set((w[0], w[1]) for _, _, w in SPELLINGS
                                  if not any(isinstance(p, type(pytest.approx(0))) for p in w[1])))),
       st.floats(1e-3, 0.2), st.floats(0.05, 1.5), st.integers(0, 2 ** 31 - 1))
def test_reference_matches_slow_loops_and_float(fnp, s_in, frac, seed):
    fn, params = fnp
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(3, 17))
    node = L.Lut("f", ("x",), x.shape, fn=fn, params=params)
    inp = g.Input("x", (), x.shape)
    ymax = float(np.abs(L.float_fn(fn, params)(np.arange(-128, 128) * s_in)).max())
    maxabs = {"f": frac * ymax}
    s_out, lq = node.quantize({"x": s_in}, maxabs)
    assert lq.weight.tolist() == _slow_table(fn, params, s_in, s_out)
    qm = q.QuantizedModel(g.Graph([inp, node], ["x"], ["f"]), {"x": s_in, "f": s_out}, {"f": lq})
    y = reference.run(qm, [x]).outputs[0]
    slow = np.array([[lq.weight[v + 128] for v in row] for row in x.tolist()])
    np.testing.assert_array_equal(y, slow)
    # within the calibrated range: half an output step of the float function
    want = L.float_fn(fn, params)(x * s_in)
    inside = np.abs(want) <= 127 * s_out
    assert np.all(np.abs(y * s_out - want)[inside] <= 0.5 * s_out * (1 + 1e-9))
    assert np.all(np.abs(y)[~inside] >= 127)
    np.testing.assert_array_equal(
        intmodule.IntegerModule(qm)(torch.from_numpy(x).to(torch.int8)).numpy(), y)


MODEL = '''\
import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    """conv -> SiLU, GELU(tanh) -> sigmoid, + Hardswish, LeakyReLU -> PReLU, a Linear, tanh."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.act = nn.SiLU()
        self.pr = nn.PReLU()
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        y = self.act(self.conv(x))
        y = torch.sigmoid(F.gelu(y, approximate="tanh")) + nn.Hardswish()(y)
        y = self.pr(F.leaky_relu(y, 0.2))
        return torch.tanh(self.fc(y.flatten(1)))


def build():
    torch.manual_seed(0)
    return Net().eval(), (2.0 * torch.randn(1, 3, 4, 4),)
'''

KINDS = ["input", "conv2d", "lut", "lut", "lut", "lut", "add", "lut", "lut", "reshape", "linear",
         "lut"]


@pytest.fixture(scope="module")
def fe(frontend_of):
    return frontend_of("lut", MODEL)


def test_frontend_int8_agrees_with_float(fe):
    assert [n.kind for n in fe.quantized.graph.nodes] == KINDS
    assert fe.accuracy["max_abs_error"] < 0.1
    ks = [p["kernel"] for _, p in postops.extract(fe.quantized)]
    assert ks.count("lut") == 7


def test_postop_kernel_is_the_table():
    from pycde_accel.lowering import kernels
    table = list(range(-128, 128))[::-1]
    k = kernels.lut(8, [max(-128, min(127, v)) for v in table])
    assert "arith.select" in k.linalg()
    assert len([ln for ln in k.body_lines if "cmpi" in ln]) == 255


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
    assert [s["op"] for s in cp.stats] == ["gemm"] + ["lut"] * 4 + ["add", "lut", "lut", "gemm",
                                                                   "lut"]
    lut = cp.commands[1]
    ab = cfg.axi_data_width // 8
    assert [type(c).__name__ for c in lut[:4]] == ["Load", "Vec", "Load", "Vec"]
    assert lut[1].flags == CMD.V_LUT_SET and lut[1].n * ab == 256
    assert lut[3].flags == CMD.V_LUT
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(-128, 128, size=(1, 3, 4, 4))
        want = reference.run(fe.quantized, [x]).outputs
        got_d, _ = executor.run(cp, [x])
        got_c, _ = cmdexec.run(cp, [x])
        for w, a, b in zip(want, got_d, got_c):
            np.testing.assert_array_equal(a, w)
            np.testing.assert_array_equal(b, w)


def test_lut_chunks_long_tensors():
    """A tensor longer than one chunk: one table load, one LOAD S + VEC LUT per chunk."""
    from pycde_accel.backend import program as P
    d = P.Lut(0, 0, 4096, 4096 + 64 * (1 << 16), 64, (1, 1, 1, 3 * (1 << 16)), (0, 0, 0, 1),
              (0, 0, 0, 1))
    lc = CMD.compile_layer(d, CFG)
    vecs = [c for c in lc.commands if isinstance(c, CMD.Vec)]
    ab = CFG.axi_data_width // 8
    assert sum(v.n for v in vecs[1:]) == math.ceil(3 * (1 << 16) / ab)
    assert all(v.n <= CMD.LUT_CHUNK for v in vecs)


def test_verilator_bit_exact(fe, build_accel, tmp_path):
    from pycde_accel.simulate import simulate
    r = simulate(fe, CFG, tmp_path, sim=build_accel(CFG))
    assert r.bit_exact, r.mismatches
    assert [layer["op"] for layer in r.layers] == ["gemm"] + ["lut"] * 4 + [
        "add", "lut", "lut", "gemm", "lut"]


@pytest.mark.slow
def test_verilator_bit_exact_axi_pauses(fe, build_accel, tmp_path):
    from pycde_accel.simulate import simulate
    r = simulate(fe, CFG, tmp_path, sim=build_accel(CFG), axi_pause=0.3, seed=5)
    assert r.bit_exact, r.mismatches


def test_hardtanh_with_other_bounds_runs_as_a_table(tmp_path):
    """Hardtanh(-1, 1) and clamp(min=-0.5): tables, bit-exact on both golden models."""
    path = tmp_path / "clamp.py"
    path.write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(16, 16)\n\n"
        "    def forward(self, x):\n"
        "        return torch.clamp(nn.Hardtanh()(self.fc(x)), min=-0.5)\n\n\n"
        "def build():\n"
        "    torch.manual_seed(0)\n"
        "    return M().eval(), (torch.randn(2, 16),)\n")
    fe = frontend.run(str(path), eval_batches=2)
    luts = [n for n in fe.quantized.graph.nodes if n.kind == "lut"]
    assert [(n.fn, n.params) for n in luts] == [("hardtanh", (-1.0, 1.0)),
                                                ("hardtanh", (-0.5, None))]
    cp = compile_program(fe, CFG)
    x = np.random.default_rng(2).integers(-128, 128, size=(2, 16))
    want = reference.run(fe.quantized, [x]).outputs[0]
    np.testing.assert_array_equal(executor.run(cp, [x])[0][0], want)
    np.testing.assert_array_equal(cmdexec.run(cp, [x])[0][0], want)
    assert want.min() >= round(-0.5 / fe.quantized.scales[luts[1].name]) - 1
