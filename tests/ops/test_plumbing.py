"""Tensor plumbing: flip, pad, upsample, cat, slice/split/chunk, expand, einsum, the row copy
of tensors that are no strided view (channel shuffle, flatten before an element-wise op), and
the affine maps (standalone BatchNorm, add/sub of a constant or parameter). Capture of their
spellings, the integer references against slow Python loops, both golden models of the back
end bit-exact on models that chain several of them, and Verilator runs bit-exact."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from pycde_accel import frontend
from pycde_accel.backend import cmdexec, compile_program, executor
from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError
from pycde_accel.frontend import capture, design, graph as g, intmodule, quantize as q, reference

CFG = AccelConfig()
SMALL = AccelConfig(rows=4, cols=8, axi_data_width=32)

HEAD = "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n\n\n"

MODELS = {
    # pixel movers: flip, zero/constant padding, nearest upsampling, channel concat of 3 inputs
    "gather": HEAD + '''\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 5, 3, padding=1)
        self.c2 = nn.Conv2d(3, 11, 1)
        self.pad = nn.ConstantPad2d((1, 0, 0, 1), 0.5)
        self.fc = nn.Linear(21 * 5 * 8, 10)

    def forward(self, x):
        a = nn.functional.interpolate(self.c1(x), scale_factor=2, mode="nearest")
        b = nn.Upsample(size=(4, 6))(self.c2(x)).flip(3)
        y = torch.cat([a, b, a.flip(1, 2)], 1)
        return self.fc(F.pad(self.pad(nn.ZeroPad2d((0, 1, 0, 0))(y)), (0, 0, 0, 0)).flatten(1))


def build():
    torch.manual_seed(0)
    return Net().eval(), (2.0 * torch.randn(1, 3, 2, 3),)
''',
    # a concat of more channels than P holds post-op records (squeezenet's Fire modules: 384)
    "widecat": HEAD + '''\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 192, 1)
        self.b = nn.Conv2d(3, 200, 3, padding=1)

    def forward(self, x):
        return torch.cat([self.a(x), self.b(x)], 1)


def build():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(1, 3, 2, 3),)
''',
    # split/chunk/slice/select, channel shuffle (a row copy), expand, max of the pieces
    "views": HEAD + '''\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 20, 3, padding=1)
        self.c2 = nn.Conv2d(6, 4, 1)
        self.g = nn.Linear(4, 6)
        self.fc = nn.Linear(4 * 2 * 4 + 9, 10)

    def forward(self, x):
        y = self.c1(x)
        a, b = torch.split(y, [14, 6], dim=1)
        n, c, h, w = b.shape
        b = b.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)
        p, s = b.chunk(2, dim=2)
        gate = self.g(y[:, 2:6, 0, 0]).reshape(1, 6, 1, 1).expand(1, 6, 2, 4)
        z = self.c2(torch.maximum(p, s) + gate)
        return self.fc(torch.cat([z.flatten(1), a[:, 3:12, 1, 2]], 1))


def build():
    torch.manual_seed(0)
    return Net().eval(), (2.0 * torch.randn(1, 3, 4, 4),)
''',
    # einsum matmul forms, affine maps, a flatten in NCHW order before a ReLU
    "affine": HEAD + '''\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn0 = nn.BatchNorm2d(3)
        self.c1 = nn.Conv2d(3, 6, 3, padding=1)
        self.c2 = nn.Conv2d(3, 6, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(6)
        self.p = nn.Parameter(torch.randn(1, 6, 1, 1))
        self.w = nn.Parameter(torch.randn(16, 6) / 4)
        self.bn2 = nn.BatchNorm1d(6)
        for bn in (self.bn0, self.bn1, self.bn2):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.data.uniform_(0.5, 1.5)

    def forward(self, x):
        x = self.bn0(x)
        y = self.bn1(self.c1(x) + self.c2(x))
        y = 1.0 - torch.relu((y - self.p) + 0.5)
        t = torch.relu(y.flatten(2)) / 4.0                            # (1, 6, 16)
        s = torch.einsum("bik,bjk->bij", t, t) / 4.0                  # (1, 6, 6)
        v = torch.einsum("bij,bjk->bik", s, t)                        # (1, 6, 16)
        h = torch.einsum("bik,kd->bid", v, self.w)                    # (1, 6, 6)
        return self.bn2(h.flatten(1)[:, :6]) + 1


def build():
    torch.manual_seed(0)
    return Net().eval(), (2.0 * torch.randn(1, 3, 4, 4),)
''',
}

LAYERS = {
    "gather": ["gemm", "gather", "gemm", "gather", "gather", "gather", "gather", "gather", "gather",
               "gather", "gemm"],
}


@pytest.fixture(scope="module")
def fes(tmp_path_factory):
    out = {}
    for name, text in MODELS.items():
        path = tmp_path_factory.mktemp(name) / "net.py"
        path.write_text(text)
        out[name] = frontend.run(str(path), eval_batches=4)
    return out


# ---- capture -------------------------------------------------------------------------------

def _kinds(mod, *shapes):
    gr = capture.capture(mod, tuple(torch.randn(*s) for s in shapes))
    return [n for n in gr.nodes if n.kind != "input"]


class _Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


@pytest.mark.parametrize("fn,kind,attr", [
    (lambda x: x.flip(2, 3), "flip", ("dims", (2, 3))),
    (lambda x: torch.flip(x, [-3]), "flip", ("dims", (1,))),
    (lambda x: nn.ZeroPad2d(1)(x), "pad", ("pads", (1, 1, 1, 1))),
    (lambda x: nn.ConstantPad2d((1, 2, 3, 0), 0.25)(x), "pad", ("value", 0.25)),
    (lambda x: F.pad(x, (0, 1, 2, 0)), "pad", ("pads", (0, 1, 2, 0))),
    (lambda x: nn.Upsample(scale_factor=2)(x), "upsample", ("factors", (2, 2))),
    (lambda x: F.interpolate(x, size=(12, 8), mode="nearest"), "upsample", ("factors", (3, 2))),
    (lambda x: nn.UpsamplingNearest2d(scale_factor=(1, 3))(x), "upsample", ("factors", (1, 3))),
    (lambda x: torch.cat([x, x], 1), "cat", ("dim", 1)),
    (lambda x: torch.concat([x, x, x], dim=-3), "cat", ("dim", 1)),
    (lambda x: x[:, 1:3], "slice", ("start", 1)),
    (lambda x: x.narrow(2, 1, 2), "slice", ("dim", 2)),
    (lambda x: torch.split(x, 2, dim=1)[1], "slice", ("stop", 4)),
    (lambda x: x.chunk(2, dim=3)[1], "slice", ("start", 2)),
    (lambda x: x[:, :, 0:1].expand(-1, -1, 4, -1), "expand", None),
])
def test_capture_spellings(fn, kind, attr):
    nodes = _kinds(_Fn(fn), (1, 4, 4, 4))
    assert nodes[-1].kind == kind
    if attr:
        assert getattr(nodes[-1], attr[0]) == attr[1]


def test_capture_einsum_and_affine():
    w = torch.randn(4, 3)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(w)
            self.bn = nn.BatchNorm1d(3)

        def forward(self, a, b):
            s = torch.einsum("bij,bkj->bik", a, b)
            return self.bn(torch.einsum("bik,kd->bid", s, self.w).flatten(1)[:, :3]) - 2.0
    kinds = [n.kind for n in _kinds(M(), (1, 4, 8), (1, 4, 8))]
    assert "matmul" in kinds and kinds.count("linear") == 2 and "einsum" not in kinds


def test_affine_folds_into_a_sole_conv():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(3, 4, 1)
            self.register_buffer("o", torch.arange(4.0).reshape(1, 4, 1, 1))

        def forward(self, x):
            return (self.c(x) + 0.5 - self.o) / 3.0
    nodes = _kinds(M(), (1, 3, 2, 2))
    assert [n.kind for n in nodes] == ["conv2d"]


@pytest.mark.parametrize("fn,what", [
    (lambda x: F.pad(x, (1, 1, 1, 1), mode="reflect"), "reflect"),
    (lambda x: F.interpolate(x, size=(5, 4), mode="nearest"), "only integer factors"),
    (lambda x: torch.cat([x, x], 2), "along dim 2"),
    (lambda x: torch.einsum("bcij,bcjk->bck", x, x), "aten.einsum.default .bcij,bcjk->bck. that is no matmul"),
    (lambda x: x[:, ::2], "with step 2"),
])
def test_refusals(fn, what):
    with pytest.raises(UserError, match="unsupported op .*" + what.replace("(", r"\(").replace(")", r"\)")):
        capture.capture(_Fn(fn), (torch.randn(1, 4, 4, 4),))


# ---- integer references against slow loops --------------------------------------------------

def _trace(node, xs, scales, lq=None):
    ins = [g.Input(f"x{i}", (), x.shape, index=i) for i, x in enumerate(xs)]
    qm = q.QuantizedModel(g.Graph(ins + [node], [i.name for i in ins], [node.name]),
                          {**{i.name: s for i, s in zip(ins, scales)}, node.name: max(scales)},
                          {node.name: lq} if lq is not None else {})
    y = reference.run(qm, xs).outputs[0]
    tx = [torch.from_numpy(x).to(torch.int8) for x in xs]
    np.testing.assert_array_equal(intmodule.IntegerModule(qm)(*tx).numpy(), y)
    return y


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(0, 2), st.integers(0, 2), st.booleans(),
       st.booleans(), st.integers(0, 2 ** 31 - 1))
def test_gather_references_match_slow_loops(uh, uw, pt, pl, fh, fw, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(1, 3, 2, 3))
    n, c, h, w = x.shape
    # upsample, then flip, then pad: one loop per output element
    up = _trace(g.REGISTRY["upsample"]("y", ("x0",), (n, c, h * uh, w * uw), factors=(uh, uw)), [x], [0.1])
    fl = _trace(g.REGISTRY["flip"]("y", ("x0",), up.shape, dims=tuple(d for d, f in ((2, fh), (3, fw)) if f)),
                [up], [0.1])
    code = int(rng.integers(-128, 128))
    pads = (pl, 1, pt, 0)
    pd = _trace(g.REGISTRY["pad"]("y", ("x0",), (n, c, fl.shape[2] + pt, fl.shape[3] + pl + 1), pads=pads),
                [fl], [0.1], q.LayerQuant(ma=code))
    for ci in range(c):
        for oh in range(pd.shape[2]):
            for ow in range(pd.shape[3]):
                th, tw = oh - pt, ow - pl
                if not (0 <= th < h * uh and 0 <= tw < w * uw):
                    want = code
                else:
                    th = h * uh - 1 - th if fh else th
                    tw = w * uw - 1 - tw if fw else tw
                    want = x[0, ci, th // uh, tw // uw]
                assert pd[0, ci, oh, ow] == want


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(1e-3, 1.0), min_size=1, max_size=4), st.integers(0, 2 ** 31 - 1))
def test_cat_reference_matches_slow_loops_and_float(scales, seed):
    rng = np.random.default_rng(seed)
    xs = [rng.integers(-128, 128, size=(2, int(rng.integers(1, 6)))) for _ in scales]
    node = g.REGISTRY["cat"]("y", tuple(f"x{i}" for i in range(len(xs))),
                             (2, sum(x.shape[1] for x in xs)), dim=1)
    s_out, lq = node.quantize({f"x{i}": s for i, s in enumerate(scales)}, {})
    assert s_out == max(scales)
    y = _trace(node, xs, scales, lq)
    col = 0
    for i, x in enumerate(xs):
        for j in range(x.shape[1]):
            for r in range(2):
                v = int(x[r, j])
                m0, sh = int(lq.m0[i]), int(lq.shift[i])
                # SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT, in Python ints
                ab = v * m0
                nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
                t = abs(ab + nudge) >> 31
                t = t if ab + nudge >= 0 else -t
                mask = (1 << sh) - 1
                t = (t >> sh) + (1 if (t & mask) > (mask >> 1) + (1 if t < 0 else 0) else 0)
                assert y[r, col + j] == max(-128, min(127, t))
                # two roundings (the high mul, then the shift): within one step
                assert abs(y[r, col + j] * s_out - v * scales[i]) <= s_out + 1e-9
        col += x.shape[1]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 3), st.integers(1, 4), st.integers(0, 2 ** 31 - 1))
def test_slice_and_expand_references_match_slow_loops(start, length, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(1, 8, 1, 3))
    stop = min(8, start + length)
    y = _trace(g.REGISTRY["slice"]("y", ("x0",), (1, stop - start, 1, 3), dim=1, start=start, stop=stop),
               [x], [0.1])
    e = _trace(g.REGISTRY["expand"]("y", ("x0",), (1, stop - start, 4, 3)), [y], [0.1])
    for c in range(stop - start):
        for h in range(4):
            for w in range(3):
                assert e[0, c, h, w] == x[0, start + c, 0, w]


# ---- models: golden models and Verilator -------------------------------------------------------

@pytest.mark.parametrize("name", list(MODELS))
def test_frontend_int8_agrees_with_float(fes, name):
    assert fes[name].accuracy["max_abs_error"] < 0.5


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("cfg", [CFG, SMALL])
def test_backend_golden_models_bit_exact(fes, name, cfg):
    fe = fes[name]
    cp = compile_program(fe, cfg)
    if name in LAYERS and cfg is CFG:
        assert [s["op"] for s in cp.stats] == LAYERS[name]
    rng = np.random.default_rng(1)
    shape = fe.quantized.graph.node(fe.quantized.graph.inputs[0]).shape
    for _ in range(3):
        x = rng.integers(-128, 128, size=shape)
        want = reference.run(fe.quantized, [x]).outputs
        got_d, _ = executor.run(cp, [x])
        got_c, _ = cmdexec.run(cp, [x])
        for w, a, b in zip(want, got_d, got_c):
            np.testing.assert_array_equal(a, w)
            np.testing.assert_array_equal(b, w)


def test_design_json_round_trip(fes, tmp_path):
    for name, fe in fes.items():
        (tmp_path / name).mkdir()
        d = frontend.write(fe, tmp_path / name)
        (tmp_path / name / "design.json").write_text(json.dumps(d))
        qm = design.load_quantized(tmp_path / name)
        shape = fe.quantized.graph.node(fe.quantized.graph.inputs[0]).shape
        x = np.random.default_rng(3).integers(-128, 128, size=shape)
        np.testing.assert_array_equal(reference.run(qm, [x]).outputs[0],
                                      reference.run(fe.quantized, [x]).outputs[0])


def test_cat_reads_each_input_once_and_streams_only_its_beats(fes):
    """The concat layer's EXEC cycles are the output's beats per 8-pixel tile, not K."""
    cp = compile_program(fes["gather"], CFG)
    s = [s for s in cp.stats if s["kind"] == "cat"][0]
    # 24 pixels (3 tiles of 8), 21 channels = 3 channel tiles of 8; each streams <= 2 beats of
    # each source it reads: far less than K = 8 + 16 + 8 bytes per tile
    assert s["exec_cycles"] <= 3 * 3 * 16


def test_verilator_bit_exact(fes, build_accel, tmp_path):
    from pycde_accel.simulate import simulate
    r = simulate(fes["gather"], CFG, tmp_path, sim=build_accel(CFG))
    assert r.bit_exact, r.mismatches


@pytest.mark.slow
@pytest.mark.parametrize("name", ["views", "affine"])
def test_verilator_bit_exact_more(fes, build_accel, tmp_path, name):
    from pycde_accel.simulate import simulate
    r = simulate(fes[name], CFG, tmp_path, sim=build_accel(CFG))
    assert r.bit_exact, r.mismatches


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gather", "views"])
def test_verilator_bit_exact_with_axi_pauses(fes, tmp_path, name):
    from pycde_accel.simulate import simulate
    r = simulate(fes[name], CFG, tmp_path, axi_pause=0.3, seed=7, engine="axiram")
    assert r.bit_exact, r.mismatches
