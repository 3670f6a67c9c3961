"""Constant padding and nearest upsampling of (N, C, L) tensors (``nn.ConstantPad1d``,
``F.pad(x, (l, r))``, ``nn.Upsample`` on 1-d): height-1 gathers, on a model input and between
Conv1d layers. Capture, both golden models of the back end bit-exact, the design.json round
trip, and one Verilator run in the slow set."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import pycde_accel
from pycde_accel import frontend
from pycde_accel.backend import cmdexec, compile_program, executor
from pycde_accel.config import AccelConfig
from pycde_accel.frontend import capture, design, reference

CFG = AccelConfig()
SMALL = AccelConfig(rows=4, cols=8, axi_data_width=32)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(3, 5, 3)
        self.pad = nn.ConstantPad1d((1, 2), 0.25)
        self.c2 = nn.Conv1d(5, 4, 2)

    def forward(self, x):
        x = F.pad(x, (2, 0))                                   # on the model input
        y = nn.Upsample(scale_factor=3)(self.pad(self.c1(x)))  # between convs
        return self.c2(torch.relu(y))


@pytest.fixture(scope="module")
def fe():
    torch.manual_seed(0)
    return pycde_accel.compile(Net().eval(), (2.0 * torch.randn(1, 3, 7),)).frontend


def test_capture():
    torch.manual_seed(0)
    gr = capture.capture(Net().eval(), (torch.randn(1, 3, 7),))
    got = [(n.kind, tuple(n.shape)) for n in gr.nodes if n.kind in ("pad", "upsample")]
    assert got == [("pad", (1, 3, 9)), ("pad", (1, 5, 10)), ("upsample", (1, 5, 30))]
    assert [n.factors for n in gr.nodes if n.kind == "upsample"] == [(1, 3)]


def test_references_match_torch_on_codes(fe):
    """Padding and upsampling move codes: the int8 model's pad/upsample layers are np.pad and
    np.repeat of their inputs (the padding code for 0.25 included)."""
    qm = fe.quantized
    x = np.random.default_rng(0).integers(-128, 128, size=(1, 3, 7))
    run = reference.run(qm, [x])
    pads = [n for n in qm.graph.nodes if n.kind == "pad"]
    ups = [n for n in qm.graph.nodes if n.kind == "upsample"]
    np.testing.assert_array_equal(run.values[pads[0].name], np.pad(x, ((0, 0), (0, 0), (2, 0))))
    src = run.values[pads[1].inputs[0]]
    code = int(qm.layers[pads[1].name].ma)
    assert code == int(np.clip(np.round(0.25 / qm.scales[pads[1].inputs[0]]), -128, 127))
    np.testing.assert_array_equal(run.values[pads[1].name],
                                  np.pad(src, ((0, 0), (0, 0), (1, 2)), constant_values=code))
    np.testing.assert_array_equal(run.values[ups[0].name], np.repeat(run.values[pads[1].name], 3, axis=2))


@pytest.mark.parametrize("cfg", [CFG, SMALL])
def test_backend_golden_models_bit_exact(fe, cfg):
    cp = compile_program(fe, cfg)
    # pad, Conv1d, pad, upsample (gathers), the ReLU after the upsample, Conv1d
    assert [s["op"] for s in cp.stats] == ["gather", "wgemm", "gather", "gather", "relu", "wgemm"]
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(-128, 128, size=(1, 3, 7))
        want = reference.run(fe.quantized, [x]).outputs[0]
        np.testing.assert_array_equal(executor.run(cp, [x])[0][0], want)
        np.testing.assert_array_equal(cmdexec.run(cp, [x])[0][0], want)


def test_design_json_round_trip(fe, tmp_path):
    d = frontend.write(fe, tmp_path)
    (tmp_path / "design.json").write_text(json.dumps(d))
    qm = design.load_quantized(tmp_path)
    x = np.random.default_rng(3).integers(-128, 128, size=(1, 3, 7))
    np.testing.assert_array_equal(reference.run(qm, [x]).outputs[0],
                                  reference.run(fe.quantized, [x]).outputs[0])


@pytest.mark.slow
def test_verilator_bit_exact(fe, build_accel, tmp_path):
    from pycde_accel.simulate import simulate
    r = simulate(fe, CFG, tmp_path, sim=build_accel(CFG))
    assert r.bit_exact, r.mismatches
