"""Softmax over the last dim and scaled dot-product attention (``ops/softmax.py``): capture of
the spellings (nn.Softmax, torch.softmax, F.scaled_dot_product_attention, nn.MultiheadAttention)
and the refusals; the integer chain bit-exact against slow pure-Python definitions and each
step within its stated error bound (hypothesis); the whole chain against float softmax."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from pycde_accel.errors import UserError
from pycde_accel.frontend import capture, quantize as q, reference

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slow_int  # noqa: E402

#: softmax over 8: the row max (one ROWRED), x - max, exp, sum, 1/sum, product
CHAIN = ["rowmax", "sub", "lut", "rowmix", "lut", "mul"]


class _Fn(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, *x):
        return self.f(*x)


def _kinds(gr):
    return [n.kind for n in gr.nodes if n.kind != "input"]


@pytest.mark.parametrize("f", [nn.Softmax(dim=-1), nn.Softmax(dim=1), lambda x: torch.softmax(x, -1),
                               lambda x: F.softmax(x, dim=1), lambda x: x.softmax(-1)])
def test_capture_softmax_spellings(f):
    gr = capture.capture(_Fn(f), (torch.randn(3, 8),))
    assert _kinds(gr) == CHAIN
    assert [n.fn for n in gr.nodes if n.kind == "lut"] == ["exp_scaled", "reciprocal"]
    assert [(n.mode, n.offset) for n in gr.nodes if n.kind == "rowmix"] == [("sum", 0)]


def test_softmax_over_another_dim_is_refused():
    with pytest.raises(UserError, match=r"softmax.* over dim 0 of a \[3, 8\] tensor \(only the last dim\)"):
        capture.capture(_Fn(nn.Softmax(dim=0)), (torch.randn(3, 8),))


def test_capture_sdpa_and_multihead_attention():
    qkv = tuple(torch.randn(1, 2, 8, 4) for _ in range(3))
    gr = capture.capture(_Fn(F.scaled_dot_product_attention), qkv)
    kinds = _kinds(gr)
    assert kinds.count("matmul") == 2 and kinds.count("rowmix") == 1 and \
        kinds.count("rowmax") == 1
    exp = next(n for n in gr.nodes if n.kind == "lut")
    assert exp.params == (pytest.approx(0.5),)               # 1/sqrt(4) rides on the exponent
    mha = nn.MultiheadAttention(16, 2, batch_first=True).eval()
    gr = capture.capture(_Fn(lambda x: mha(x, x, x, need_weights=False)[0]), (torch.randn(1, 8, 16),))
    assert _kinds(gr).count("matmul") == 2 and "lut" in _kinds(gr)


@pytest.mark.parametrize("kw, what", [({"is_causal": True}, "is_causal=True"),
                                      ({"attn_mask": "mask"}, "an attention mask")])
def test_sdpa_options_are_refused(kw, what):
    mask = torch.zeros(8, 8, dtype=torch.bool)
    kw = {k: (mask if v == "mask" else v) for k, v in kw.items()}
    qkv = tuple(torch.randn(1, 2, 8, 4) for _ in range(3))
    with pytest.raises(UserError, match=f"scaled_dot_product_attention.default with {what}"):
        capture.capture(_Fn(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, **kw)), qkv)


_GRAPHS: dict = {}
ROWS = 4


def _graph(length):
    if length not in _GRAPHS:
        _GRAPHS[length] = capture.capture(_Fn(nn.Softmax(-1)), (torch.randn(ROWS, length),))
    return _GRAPHS[length]


def _quantized(length, spread, seed):
    rng = np.random.default_rng(seed)
    cal = [[spread * rng.standard_normal((ROWS, length))] for _ in range(8)]
    return q.quantize_graph(_graph(length), cal), rng


def step_bounds(qm, values):
    """Each node's output against its float step applied to its dequantized int8 inputs: at most
    half a step for a table, 3/4 of a step (plus 2^-20) for a requantized step (quantize.py,
    "LayerNorm, softmax and GELU"), where the exact value is inside the int8 range."""
    for node in qm.graph.nodes:
        if node.kind == "input":
            continue
        s = qm.scales[node.name]
        ins = [values[i] * qm.scales[i] for i in node.inputs]
        want = node.float_eval(ins, None)
        got = values[node.name] * s
        inside = (want >= -128 * s) & (want <= 127 * s)
        bound = 0.5 if node.kind == "lut" else 0.75 + 2.0 ** -20
        err = np.abs(got - want)[inside]
        assert err.size == 0 or err.max() <= bound * s * (1 + 1e-9), (node.name, err.max() / s)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([2, 5, 8, 16]), st.floats(0.1, 8.0), st.integers(0, 2 ** 31 - 1))
def test_chain_matches_slow_definitions_and_bounds(length, spread, seed):
    qm, rng = _quantized(length, spread, seed)
    x = q.quantize_tensor(spread * rng.standard_normal((ROWS, length)), qm.scales[qm.graph.inputs[0]])
    tr = reference.run(qm, [x])
    slow = slow_int.chain(qm, x)
    for name, v in slow.items():
        np.testing.assert_array_equal(tr.values[name], v, err_msg=name)
    step_bounds(qm, tr.values)


def test_chain_against_float_softmax():
    worst = 0.0
    for seed in range(20):
        qm, rng = _quantized(8, 2.0, seed)
        xf = 2.0 * rng.standard_normal((ROWS, 8))
        s_in = qm.scales[qm.graph.inputs[0]]
        xq = q.quantize_tensor(xf, s_in)
        y = reference.run(qm, [xq]).outputs[0] * qm.scales[qm.graph.outputs[0]]
        want = torch.softmax(torch.from_numpy(xq * s_in), -1).numpy()
        worst = max(worst, float(np.abs(y - want).max()))
        assert np.all(np.argmax(y, -1)[np.max(want, -1) - np.sort(want, -1)[:, -2] > 0.05]
                      == np.argmax(want, -1)[np.max(want, -1) - np.sort(want, -1)[:, -2] > 0.05])
    assert worst < 0.05, worst
