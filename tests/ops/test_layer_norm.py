"""LayerNorm over the last dim (``ops/layer_norm.py``) and its row reductions (``ops/rowmix.py``):
capture of the spellings and the refusals; the integer chain bit-exact against slow pure-Python
definitions and each step within its stated error bound (hypothesis); the chain against float
LayerNorm; a small model (LayerNorm, GELU, softmax) through the frontend, the design.json round
trip and both golden models of the back end at two configs; Verilator in the slow set."""

from __future__ import annotations

import json
import sys
from pathlib import Path

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
from pycde_accel.frontend import capture, design, quantize as q, reference
from pycde_accel.ops import rowmix

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slow_int  # noqa: E402
from test_softmax import step_bounds  # noqa: E402

CFG = AccelConfig()
CHAIN = ["rowmix", "mul", "rowmix", "lut", "mul", "linear"]

MODEL = '''\
import torch
from torch import nn


class Net(nn.Module):
    """Linear, LayerNorm, GELU (tanh form), Linear, softmax over the classes."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 16)
        self.norm = nn.LayerNorm(16)
        self.act = nn.GELU("tanh")
        self.out = nn.Linear(16, 8)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return torch.softmax(self.out(self.act(self.norm(self.fc(x)))), dim=-1)


def build():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(4, 12),)
'''


class _Fn(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


def _kinds(gr):
    return [n.kind for n in gr.nodes if n.kind != "input"]


@pytest.mark.parametrize("f, chain", [
    (nn.LayerNorm(8), CHAIN),
    (nn.LayerNorm(8, elementwise_affine=False), CHAIN[:-1]),
    (lambda x: F.layer_norm(x, (8,), eps=1e-3), CHAIN[:-1]),
    (lambda x: torch.native_layer_norm(x, (8,), None, None, 1e-5)[0], CHAIN[:-1])])
def test_capture_layer_norm_spellings(f, chain):
    gr = capture.capture(_Fn(f), (torch.randn(2, 3, 8),))
    assert _kinds(gr) == chain
    assert [n.mode for n in gr.nodes if n.kind == "rowmix"] == ["center", "mean"]
    assert [n.fn for n in gr.nodes if n.kind == "lut"] == ["rsqrt"]


def test_layer_norm_over_two_dims_is_refused():
    with pytest.raises(UserError, match=r"layer_norm.default over \[3, 8\] of a \[2, 3, 8\] tensor"):
        capture.capture(_Fn(nn.LayerNorm((3, 8))), (torch.randn(2, 3, 8),))


def test_rowmix_matrices():
    assert rowmix.matrix("center", 3).tolist() == [[2, -1, -1], [-1, 2, -1], [-1, -1, 2]]
    assert rowmix.matrix("sum", 2).tolist() == [[1, 1], [1, 1]]
    x = np.arange(5)
    assert (rowmix.matrix("rotate", 5, 2) @ x).tolist() == [2, 3, 4, 0, 1]


_GRAPHS: dict = {}
ROWS = 3


def _graph(length, affine):
    key = (length, affine)
    if key not in _GRAPHS:
        torch.manual_seed(length)
        ln = nn.LayerNorm(length, elementwise_affine=affine)
        if affine:
            with torch.no_grad():
                ln.weight.uniform_(-2, 2)
                ln.bias.uniform_(-1, 1)
        _GRAPHS[key] = (capture.capture(_Fn(ln), (torch.randn(ROWS, length),)), ln)
    return _GRAPHS[key]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([2, 7, 16, 32]), st.booleans(), st.floats(0.05, 20.0), st.floats(-5, 5),
       st.integers(0, 2 ** 31 - 1))
def test_chain_matches_slow_definitions_and_bounds(length, affine, spread, offset, seed):
    gr, _ = _graph(length, affine)
    rng = np.random.default_rng(seed)
    draw = lambda: offset + spread * rng.standard_normal((ROWS, length))  # noqa: E731
    qm = q.quantize_graph(gr, [[draw()] for _ in range(6)])
    x = q.quantize_tensor(draw(), qm.scales[qm.graph.inputs[0]])
    tr = reference.run(qm, [x])
    for name, v in slow_int.chain(qm, x).items():
        np.testing.assert_array_equal(tr.values[name], v, err_msg=name)
    step_bounds(qm, tr.values)


def test_chain_against_float_layer_norm():
    worst = 0.0
    for seed in range(10):
        gr, ln = _graph(32, True)
        rng = np.random.default_rng(seed)
        draw = lambda: 1.0 + 3.0 * rng.standard_normal((ROWS, 32))  # noqa: E731
        cal = [[draw()] for _ in range(16)]
        qm = q.quantize_graph(gr, cal)
        s_in = qm.scales[qm.graph.inputs[0]]
        # inside the calibrated range (a row of lower variance than any calibration row
        # saturates 1/sqrt(v): quantize.py's accuracy limits)
        xq = q.quantize_tensor(cal[seed][0], s_in)
        y = reference.run(qm, [xq]).outputs[0] * qm.scales[qm.graph.outputs[0]]
        with torch.no_grad():
            want = ln(torch.from_numpy(xq * s_in).float()).double().numpy()
        worst = max(worst, float(np.abs(y - want).max() / np.abs(want).max()))
    assert worst < 0.04, worst


@pytest.fixture(scope="module")
def fe(frontend_of):
    return frontend_of("layer_norm", MODEL, eval_batches=20)


def test_frontend_int8_agrees_with_float(fe):
    kinds = [n.kind for n in fe.quantized.graph.nodes]
    assert kinds[:2] == ["input", "linear"] and kinds[2:8] == CHAIN and kinds[8] == "lut"
    assert fe.accuracy["top1_agreement"] >= 0.95
    assert fe.accuracy["max_abs_error"] < 0.1


def test_design_json_round_trip(fe, tmp_path):
    d = frontend.write(fe, tmp_path)
    (tmp_path / "design.json").write_text(json.dumps(d))
    qm = design.load_quantized(tmp_path)
    x = np.random.default_rng(3).integers(-128, 128, size=(4, 12))
    np.testing.assert_array_equal(reference.run(qm, [x]).outputs[0],
                                  reference.run(fe.quantized, [x]).outputs[0])


@pytest.mark.parametrize("cfg", [CFG, AccelConfig(rows=4, cols=8, axi_data_width=32)])
def test_backend_golden_models_bit_exact(fe, cfg):
    cp = compile_program(fe, cfg)
    ops = [s["op"] for s in cp.stats]
    # the centering a GEMM, the variance's mean one ROWRED (the row-reduction unit)
    assert ops[:7] == ["gemm", "gemm", "mul", "rowred", "lut", "mul", "gemm"]
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(-128, 128, size=(4, 12))
        want = reference.run(fe.quantized, [x]).outputs
        got_d, _ = executor.run(cp, [x])
        got_c, _ = cmdexec.run(cp, [x])
        for w, a, b in zip(want, got_d, got_c):
            np.testing.assert_array_equal(a, w)
            np.testing.assert_array_equal(b, w)


@pytest.mark.slow
def test_verilator_bit_exact(fe, build_accel, tmp_path):
    from pycde_accel.simulate import simulate
    r = simulate(fe, CFG, tmp_path, sim=build_accel(CFG, rowred=True))
    assert r.bit_exact, r.mismatches
    for layer in r.layers:
        assert abs(layer["cycles"] - layer["predicted_cycles"]) <= 0.05 * layer["cycles"], layer
