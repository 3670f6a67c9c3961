"""Capture lists every unsupported op at once: one line per distinct problem (op, count, module
paths, source line), recurrent layers named as the layer with the option they refuse, options with their own message;
the CLI still exits 2 and leaves no output folder."""

import pytest

from pycde_accel import cli
from pycde_accel.errors import UserError
from pycde_accel.frontend import capture
from pycde_accel.frontend.loader import callable_spec, load_model

MODELS = """\
import torch
from torch import nn


class CumSum(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 1)


class Many(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.ConvTranspose2d(4, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.acts = nn.ModuleList([CumSum() for _ in range(3)])
        self.fc = nn.Linear(4 * 8 * 8, 3)

    def forward(self, x):
        x = self.bn(self.c(x))
        for a in self.acts:
            x = a(x) + x
        x = torch.cumprod(x, 1)
        return self.fc(x.flatten(1))


def many():
    return Many(), (torch.randn(1, 4, 8, 8),)


class Rec(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 4, batch_first=True, proj_size=2)
        self.gru = nn.GRU(2, 4, batch_first=True, bidirectional=True)
        self.rnn = nn.RNN(8, 8, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(16, 2)

    def forward(self, x):
        y, _ = self.lstm(x)
        y, _ = self.gru(y)
        y, _ = self.rnn(y)
        return self.fc(y)


def rec():
    return Rec(), (torch.randn(1, 4, 8),)


def lstm_only():
    return nn.Sequential(nn.LSTM(8, 8, bidirectional=True)), (torch.randn(4, 1, 8),)


class Opts(nn.Module):
    def __init__(self):
        super().__init__()
        self.reflect = nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect")
        self.idx = nn.MaxPool2d(2, return_indices=True)

    def forward(self, x):
        x = self.reflect(x)
        return self.idx(x)[0]


def opts():
    return Opts(), (torch.randn(1, 3, 32, 32),)
"""


@pytest.fixture
def models(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(MODELS)
    return path


def _error(spec) -> str:
    m = load_model(spec)
    with pytest.raises(UserError) as e:
        capture.capture(m.module, m.example_inputs, fallback_source=m.fallback_source)
    return str(e.value)


def _line_of(text: str, needle: str) -> int:
    return next(i + 1 for i, line in enumerate(MODELS.splitlines()) if needle in line)


def test_every_problem_is_listed_once(models):
    msg = _error(f"{models}:many")
    lines = msg.splitlines()
    c, cumsum, cumprod = (_line_of(MODELS, s) for s in ("self.bn(self.c(x))", "torch.cumsum(x, 1)",
                                                         "torch.cumprod(x, 1)"))
    assert lines[0] == "3 problems in the model (5 nodes refused), one per line:"
    assert lines[1] == (f"  unsupported op aten.conv_transpose2d.input in module c "
                        f"(ConvTranspose2d), m.py:{c}")
    # the three CumSums of one source line are one problem with a count; the BatchNorm after
    # the refused conv and the adds after the refused cumsums are not problems of their own
    assert lines[2] == (f"  unsupported op aten.cumsum.default x3 in modules acts.0, acts.1, "
                        f"acts.2 (CumSum), m.py:{cumsum}")
    assert lines[3] == f"  unsupported op aten.cumprod.default in the top-level forward, m.py:{cumprod}"
    assert lines[4].startswith("supported: Linear, Conv2d")
    assert len(lines) == 5


def test_recurrent_layers_are_named_as_layers(models):
    lines = _error(f"{models}:rec").splitlines()
    src = {k: _line_of(MODELS, f"= self.{k}(") for k in ("lstm", "gru", "rnn")}
    assert lines[1:4] == [
        f"  nn.LSTM (module lstm, m.py:{src['lstm']}): unsupported option: proj_size > 0 "
        f"(a projected hidden state is not built)",
        f"  nn.GRU (module gru, m.py:{src['gru']}): unsupported option: bidirectional=True "
        f"(one direction only)",
        f"  nn.RNN (module rnn, m.py:{src['rnn']}): unsupported option: bidirectional=True "
        f"(one direction only)"]
    assert "aten.zeros" not in "\n".join(lines)


def test_one_recurrent_layer_is_one_line(models):
    msg = _error(f"{models}:lstm_only")
    assert msg.startswith("nn.LSTM (module 0, m.py:") and \
        msg.endswith("unsupported option: bidirectional=True (one direction only)")
    assert "\n" not in msg


def test_each_option_has_its_own_message(models):
    lines = _error(f"{models}:opts").splitlines()
    assert [line.split(" in module")[0].strip() for line in lines[1:3]] == [
        "unsupported op aten.pad.default with mode 'reflect' and pads [1, 1, 1, 1] of a rank-4 "
        "tensor (only constant, non-negative padding of H and W of NCHW, or of L of NCL)",
        "unsupported op MaxPool2d with return_indices=True"]


def test_single_problem_keeps_its_one_line(model_file, unsupported_line):
    msg = _error(str(model_file("net", model_file.sources["unsupported"])))
    assert "\n" not in msg
    assert msg.startswith("unsupported op aten.cumsum.default in module features.3 (CumSum), "
                          f"net.py:{unsupported_line}; supported: ")


def test_torchvision_sources_are_paths_inside_the_package():
    lines = _error(callable_spec("torchvision.models:swin_t", "1x3x32x32")).splitlines()
    assert any("aten.index.Tensor x12 in modules features.1.0.attn, features.1.1.attn, "
               "features.3.0.attn and 9 more (ShiftedWindowAttention), "
               "torchvision/models/swin_transformer.py:" in line for line in lines), lines
    assert all("site-packages" not in line and "/root" not in line for line in lines)


def test_cli_lists_them_and_writes_nothing(models, tmp_path, capsys):
    out = tmp_path / "out"
    code = cli.main(["gen", f"{models}:many", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: 3 problems in the model") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 5
    assert not out.exists()
