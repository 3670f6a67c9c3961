"""Attention models as torch.export gives them: ``nn.TransformerEncoderLayer(d_model=32,
nhead=2, dim_feedforward=64, batch_first=True)`` on 1x8x32 (post- and pre-norm, ReLU and
GELU), ``nn.TransformerEncoder``, ``nn.MultiheadAttention``, a learned positional embedding and
a class token: capture, accuracy against float, both golden executors bit-exact; Verilator
bit-exact with the perf model within 5% per layer in the slow set."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import pycde_accel
from pycde_accel.backend import cmdexec, executor
from pycde_accel.config import AccelConfig
from pycde_accel.frontend import reference

CFG = AccelConfig()


def _layer(norm_first=False, activation="relu"):
    torch.manual_seed(0)
    return nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64, batch_first=True,
                                      norm_first=norm_first, activation=activation).eval()


def _encoder():
    torch.manual_seed(0)
    return nn.TransformerEncoder(_layer(), 2, enable_nested_tensor=False).eval()


class _Mha(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


class _MhaWeights(_Mha):
    """MultiheadAttention as called by default (need_weights=True): its averaged attention
    weights are computed and not used."""

    def forward(self, x):
        return self.mha(x, x, x)[0]


class _Tokens(nn.Module):
    """A class token before the tokens and a learned positional embedding."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.cls = nn.Parameter(torch.randn(1, 1, 16))
        self.pos = nn.Parameter(torch.randn(1, 5, 16))
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        t = self.embed(x)
        t = torch.cat([self.cls.expand(t.shape[0], -1, -1), t], dim=1) + self.pos
        return self.head(torch.relu(t[:, 0]))


MODELS = {
    "post_relu": (_layer, (1, 8, 32)),
    "pre_relu": (lambda: _layer(True, "relu"), (1, 8, 32)),
    "post_gelu": (lambda: _layer(False, "gelu"), (1, 8, 32)),
    "pre_gelu": (lambda: _layer(True, "gelu"), (1, 8, 32)),
    "encoder_2_layers": (_encoder, (1, 8, 32)),
    "mha": (lambda: _Mha().eval(), (1, 6, 16)),
    "mha_need_weights": (lambda: _MhaWeights().eval(), (1, 6, 16)),
    "tokens": (lambda: _Tokens().eval(), (1, 4, 8)),
}
#: in the default run: the issue's layer and the small ones
DEFAULT = ("post_relu", "mha", "mha_need_weights", "tokens")


def _design(name):
    make, shape = MODELS[name]
    torch.manual_seed(1)
    return pycde_accel.compile(make(), (torch.randn(*shape),), CFG)


@pytest.mark.parametrize("name", [n if n in DEFAULT else pytest.param(n, marks=pytest.mark.slow)
                                  for n in MODELS])
def test_golden_executors_bit_exact(name):
    d = _design(name)
    kinds = [n.kind for n in d.frontend.quantized.graph.nodes]
    if name != "tokens":
        assert kinds.count("matmul") == 2 * (2 if name == "encoder_2_layers" else 1)
    else:
        assert "param" in kinds and "pad" in kinds
    assert d.frontend.accuracy["top1_agreement"] >= 0.95, d.frontend.accuracy
    qm = d.frontend.quantized
    rng = np.random.default_rng(2)
    shape = MODELS[name][1]
    for _ in range(2):
        x = [rng.integers(-128, 128, size=shape)]
        want = reference.run(qm, x).outputs
        got_d, _ = executor.run(d.compiled, x)
        got_c, _ = cmdexec.run(d.compiled, x)
        for w, a, b in zip(want, got_d, got_c):
            np.testing.assert_array_equal(np.asarray(a), w)
            np.testing.assert_array_equal(np.asarray(b), w)


#: in Verilator (slow): both norms and both activations among them; bench/seq_encoder.py
#: simulates all four layer variants
SIMULATED = ("post_relu", "pre_gelu", "encoder_2_layers", "mha", "tokens")


@pytest.mark.slow
@pytest.mark.parametrize("name", SIMULATED)
def test_verilator_bit_exact_and_perf_model(name, build_accel, tmp_path):
    from pycde_accel.simulate import simulate
    d = _design(name)
    r = simulate(d.frontend, CFG, tmp_path, sim=build_accel(CFG, rowred=True), compiled=d.compiled)
    assert r.bit_exact, r.mismatches
    for layer in r.layers:
        assert abs(layer["predicted_cycles"] - layer["cycles"]) <= 0.05 * layer["cycles"], layer
