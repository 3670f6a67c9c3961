"""K splitting in Verilator (default config: banks of 1024 elements): a 3x3 conv with 128 input
channels (K = 1152: two chunks; stride 2 and padding: 6 pixels, ZERO taps) and a Linear with
K = 2560 (three chunks, the last one ragged) at tiny M/N run bit-exact as CHAIN-ed EXECs, calm and under random AXI pauses, and the perf model
predicts the chained tiles within 1% of the simulated cycle counter."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from pycde_accel import frontend
from pycde_accel.config import AccelConfig
from pycde_accel.simulate import simulate

CFG = AccelConfig()

KSPLIT_MODEL = textwrap.dedent("""
    import torch
    from torch import nn

    class KSplit(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(128, 8, 3, stride=2, padding=1)
            self.fc = nn.Linear(128 * 4 * 5, 8)

        def forward(self, x):
            return torch.relu(self.conv(x)), self.fc(x.flatten(1))

    def build():
        torch.manual_seed(5)
        return KSplit().eval(), (torch.randn(1, 128, 4, 5),)
""")


@pytest.fixture(scope="module")
def accel(build_accel):
    return build_accel(CFG)


@pytest.fixture(scope="module")
def ksplit_fe(tmp_path_factory):
    f = tmp_path_factory.mktemp("ksplit") / "ksplit.py"
    f.write_text(KSPLIT_MODEL)
    return frontend.run(str(f), eval_batches=1)


def test_split_k_bit_exact_and_predicted(accel, ksplit_fe, tmp_path):
    calm = simulate(ksplit_fe, CFG, tmp_path / "calm", sim=accel)
    assert calm.bit_exact, calm.mismatches
    assert [l["op"] for l in calm.layers] == ["gemm", "gemm"]
    for l in calm.layers:
        assert l["core_busy"] == l["exec_cycles"]          # every chunk's beats reached the core
        err = abs(l["predicted_cycles"] - l["cycles"]) / l["cycles"]
        assert err <= 0.01, f"{l['name']}: predicted {l['predicted_cycles']} vs {l['cycles']}"
    busy = simulate(ksplit_fe, CFG, tmp_path / "paused", sim=accel, axi_pause=0.3, seed=11)
    assert busy.bit_exact, busy.mismatches
    for a, b in zip(calm.outputs, busy.outputs):
        np.testing.assert_array_equal(a, b)
    assert busy.total_cycles > calm.total_cycles
