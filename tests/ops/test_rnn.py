"""The ``rnn`` op (nn.LSTM, nn.GRU, nn.RNN tanh/relu): capture of the variants and the one-line
refusals of the options it does not build, the float meaning against torch, the integer
reference against the torch integer form and against float (the LSTM and GRU classifiers'
top-1 agreement), design.json round trip, both golden models of the back end bit-exact on
small shapes, and Verilator runs (one small in the default run, the rest slow)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from pycde_accel import frontend
from pycde_accel.backend import cmdexec, compile_program, executor
from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError
from pycde_accel.frontend import capture, design, floateval, graph as g, intmodule, reference

CFG = AccelConfig()
CELLS = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn_tanh": nn.RNN, "rnn_relu": nn.RNN}


class Seq(nn.Module):
    """A recurrent layer, then a Linear on the last step (``take``: ``last`` = y[:, -1] or
    y[-1], ``y`` the whole sequence, ``h`` h_n, ``c`` c_n), the initial state given or not."""

    def __init__(self, cell, feat, hidden, layers=1, batch_first=True, take="last", state=False):
        super().__init__()
        kw = {"nonlinearity": "relu"} if cell == "rnn_relu" else {}
        self.r = CELLS[cell](feat, hidden, num_layers=layers, batch_first=batch_first, **kw)
        self.fc = nn.Linear(hidden, 5)
        self.cell, self.bf, self.take, self.state = cell, batch_first, take, state

    def forward(self, x, *s):
        if self.state:
            y, hn = self.r(x, tuple(s) if self.cell == "lstm" else s[0])
        else:
            y, hn = self.r(x)
        if self.take == "y":
            return self.fc(y)
        if self.take == "h":
            return self.fc(hn[0] if self.cell == "lstm" else hn)
        if self.take == "c":
            return self.fc(hn[1])
        return self.fc(y[:, -1] if self.bf else y[-1])


def _model(cell, T=3, N=1, feat=6, hidden=8, layers=1, batch_first=True, take="last", state=False):
    torch.manual_seed(0)
    m = Seq(cell, feat, hidden, layers, batch_first, take, state).eval()
    x = torch.randn(N, T, feat) if batch_first else torch.randn(T, N, feat)
    ins = (x,)
    if state:
        ins += (0.5 * torch.randn(layers, N, hidden),)
        if cell == "lstm":
            ins += (0.5 * torch.randn(layers, N, hidden),)
    return m, ins


CASES = [dict(cell="lstm"), dict(cell="gru"), dict(cell="rnn_tanh"), dict(cell="rnn_relu"),
         dict(cell="lstm", batch_first=False, N=2, layers=2),
         dict(cell="gru", layers=2, state=True), dict(cell="lstm", state=True, take="c"),
         dict(cell="lstm", take="h", layers=2), dict(cell="gru", take="y", N=2),
         dict(cell="rnn_tanh", hidden=12, feat=5, state=True)]


def _ids(c):
    return "-".join(f"{k}={v}" for k, v in c.items())


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_capture_and_float_meaning(case):
    """Capture gives one rnn node whose float meaning is torch's; the quantized model's two
    golden back-end models are bit-exact with the reference at 8x8 (4x8 below)."""
    m, ins = _model(**case)
    gr = capture.capture(m, ins)
    rnns = [n for n in gr.nodes if n.kind == "rnn"]
    assert len(rnns) == 1 and rnns[0].cell == case["cell"]
    got = floateval.run_float_outputs(gr, [t.double().numpy() for t in ins])[0]
    np.testing.assert_allclose(got, m(*ins).detach().double().numpy(), atol=1e-5)
    _golden(case, CFG)


def _refusal(mod, x) -> str:
    with pytest.raises(UserError) as e:
        capture.capture(mod, (x,))
    return str(e.value)


@pytest.mark.parametrize("kw, what", [(dict(bidirectional=True), "bidirectional=True"),
                                      (dict(proj_size=4), "proj_size > 0")])
def test_unsupported_options_are_one_line_naming_the_option(kw, what):
    msg = _refusal(nn.Sequential(nn.LSTM(8, 8, **kw)), torch.randn(4, 1, 8))
    assert "\n" not in msg
    assert msg.startswith("nn.LSTM (module 0") and what in msg and "unsupported option" in msg


def test_constant_nonzero_initial_state_is_refused():
    class C(nn.Module):
        def __init__(self):
            super().__init__()
            self.r = nn.GRU(4, 4)
            self.h = nn.Parameter(torch.ones(1, 1, 4))

        def forward(self, x):
            return self.r(x, self.h)[0]
    msg = _refusal(C(), torch.randn(3, 1, 4))
    assert "non-zero constant initial state" in msg and "\n" not in msg


def _quantized(case, tmp_path=None):
    m, ins = _model(**case)
    gr = g.fuse_relu(capture.capture(m, ins))
    rng = np.random.default_rng(0)
    calib = [[t.double().numpy() for t in ins]] + \
        [[rng.standard_normal(t.shape) * (0.5 if i else 1.0) for i, t in enumerate(ins)]
         for _ in range(8)]
    from pycde_accel.frontend import quantize
    return m, ins, quantize.quantize_graph(gr, calib)


def _int_inputs(qm, ins, seed):
    rng = np.random.default_rng(seed)
    return reference.quantize_inputs(qm, [rng.standard_normal(t.shape) * (0.5 if i else 1.0)
                                          for i, t in enumerate(ins)])


@pytest.mark.parametrize("case", [CASES[3], CASES[5], CASES[6]], ids=_ids)
def test_torch_integer_form_matches_the_reference(case):
    _, ins, qm = _quantized(case)
    im = intmodule.IntegerModule(qm)
    for seed in range(2):
        xq = _int_inputs(qm, ins, seed)
        want = reference.run(qm, xq).outputs[0]
        got = im(*[torch.from_numpy(x.astype(np.int8)) for x in xq])
        np.testing.assert_array_equal(got.numpy().astype(np.int64), want)


SMALL = AccelConfig(rows=4, cols=8, axi_data_width=32)


@pytest.mark.parametrize("case", [CASES[i] for i in (4, 5, 9)], ids=_ids)
def test_backend_golden_models_bit_exact_4x8(case):
    _golden(case, SMALL)


def _golden(case, cfg):
    _, ins, qm = _quantized(case)
    cp = compile_program(qm, cfg)
    T = ins[0].shape[1] if case.get("batch_first", True) else ins[0].shape[0]
    layers = case.get("layers", 1)
    rnn = next(n.name for n in qm.graph.nodes if n.kind == "rnn")
    gemms = [s for s in cp.stats if s["name"] == rnn and s["op"] == "gemm"]
    # per layer one GEMM for the input projections of all steps (M = T * N rows), then one
    # recurrent GEMM per step (M = N rows)
    N = ins[0].shape[0] if case.get("batch_first", True) else ins[0].shape[1]
    assert len(gemms) == layers * (T + 1)
    assert [s["M"] * s["batch"] for s in gemms] == ([T * N] + [N] * T) * layers
    for seed in range(2):
        xq = _int_inputs(qm, ins, seed)
        want = reference.run(qm, xq).outputs
        got_d, _ = executor.run(cp, xq)
        got_c, _ = cmdexec.run(cp, xq)
        for w, a, b in zip(want, got_d, got_c):
            np.testing.assert_array_equal(a, w)
            np.testing.assert_array_equal(b, w)


MODEL = '''
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.r = cell(16, 32, batch_first=True)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        y, _ = self.r(x)
        return self.fc(y[:, -1])


def lstm():
    torch.manual_seed(0)
    return Classifier(nn.LSTM).eval(), (torch.randn(1, 8, 16),)


def gru():
    torch.manual_seed(0)
    return Classifier(nn.GRU).eval(), (torch.randn(1, 8, 16),)
'''


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("rnn") / "seq.py"
    path.write_text(MODEL)
    return path


@pytest.mark.parametrize("fn", ["lstm", "gru"])
def test_classifier_accuracy_on_100_inputs(model_file, fn):
    """The int8 cell (int8 states, table gates) against float torch: top-1 agreement >= 0.95 on
    the 100 seeded inputs design.json's ``accuracy`` is computed on."""
    fe = frontend.run(f"{model_file}:{fn}")
    assert fe.accuracy["num_batches"] == 100
    assert fe.accuracy["top1_agreement"] >= 0.95, fe.accuracy
    assert fe.accuracy["max_abs_error"] < 0.5, fe.accuracy


@pytest.mark.parametrize("case", [CASES[5], CASES[6]], ids=_ids)
def test_design_json_round_trip(case, tmp_path):
    _, ins, qm = _quantized(case)
    design.write_npz(tmp_path / "weights.npz", design.weight_arrays(qm))
    (tmp_path / "design.json").write_text(json.dumps(design.design_dict(qm, "m", "m.py:build")))
    back = design.load_quantized(tmp_path)
    for seed in range(2):
        xq = _int_inputs(qm, ins, seed)
        np.testing.assert_array_equal(reference.run(back, xq).outputs[0],
                                      reference.run(qm, xq).outputs[0])


def _sim(case, build_accel, tmp_path, **kw):
    from pycde_accel.simulate import simulate
    m, ins, qm = _quantized(case)
    fe = SimpleNamespace(model=SimpleNamespace(module=m, example_inputs=ins, spec="m.py:build",
                                               name="m"), quantized=qm)
    r = simulate(fe, CFG, tmp_path, sim=build_accel(CFG), **kw)
    assert r.bit_exact, r.mismatches


def test_verilator_bit_exact_small_lstm(build_accel, tmp_path):
    _sim(dict(cell="lstm", T=2, feat=4, hidden=8), build_accel, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("case", [dict(cell="gru", T=2, layers=2, state=True),
                                  dict(cell="rnn_relu", T=3, N=2, batch_first=False),
                                  dict(cell="rnn_tanh", T=2)], ids=_ids)
def test_verilator_bit_exact_slow(case, build_accel, tmp_path):
    _sim(case, build_accel, tmp_path, axi_pause=0.3, seed=5)
