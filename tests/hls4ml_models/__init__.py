"""The PyTorch models of hls4ml's test suite (github.com/fastmachinelearning/hls4ml,
``test/pytest/*pytorch*.py``), rewritten without hls4ml: ``MODELS`` maps a name to a builder
returning ``(torch.nn.Module, example_inputs)`` at batch 1 with the input shapes the test uses.

In scope: every model those tests convert and check numerically (LayerNorm's
``test_layernorm_pytorch.py`` and the recurrent ones of ``test_recurrent_pytorch.py``: GRU,
LSTM, RNN, included).
Left out as well, because hls4ml's tests do not run them numerically: the spiking models of
``test_snn_pytorch.py`` / ``test_extensions_pytorch_snn.py`` (hls4ml-specific modules whose
PyTorch forward is the identity), ``test_sequential_parsing_pytorch.py`` (parsing only; its
second 5x5 conv does not fit its 1x5x5 input) and ``test_pytorch_profiler.py`` (weight plots).
Names are ``<test file>/<model>``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

MODELS: dict = {}


def model(name):
    def deco(fn):
        assert name not in MODELS, name
        MODELS[name] = fn
        return fn
    return deco


def _seeded(make, *shapes):
    """``make()`` under seed 0, in eval mode, with uniform [0, 1) inputs of ``shapes`` (hls4ml's
    tests feed ``np.random.rand``)."""
    torch.manual_seed(0)
    m = make().eval()
    return m, tuple(torch.rand(*s) for s in shapes)


class _Fn(nn.Module):
    """A model that is one function of its inputs (hls4ml's ``ReLuModel``, ``MergeModule`` ...)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


# ---- test_pytorch_api.py -----------------------------------------------------------------------

@model("api/linear")
def _linear():
    # LinearModel: Linear(1, 1) on a (1,) input
    return _seeded(lambda: nn.Linear(1, 1), (1, 1))


# test_activations: Sequential(Linear(1, 1), activation)
ACTIVATIONS = {
    "softmax": lambda: nn.Softmax(dim=-1),
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "leaky_relu": lambda: nn.LeakyReLU(negative_slope=1.0),
    "elu": lambda: nn.ELU(alpha=1.0),
    "prelu": lambda: nn.PReLU(init=0.25),
    "sigmoid": nn.Sigmoid,
    "threshold": lambda: nn.Threshold(threshold=1.0, value=0.0),
}
for _n, _act in ACTIVATIONS.items():
    model(f"api/activation_{_n}")(
        lambda act=_act: _seeded(lambda: nn.Sequential(nn.Linear(1, 1), act()), (1, 1)))

# test_activation_functionals: the functional alone on a (1,) input
FUNCTIONALS = {
    "softmax": lambda x: F.softmax(x, dim=-1),
    "relu": F.relu,
    "tanh": F.tanh,
    "leaky_relu": lambda x: F.leaky_relu(x, negative_slope=1.0),
    "elu": lambda x: F.elu(x, alpha=1.0),
    "sigmoid": F.sigmoid,
    "threshold": lambda x: F.threshold(x, threshold=1.0, value=0.0),
}
for _n, _fn in FUNCTIONALS.items():
    model(f"api/functional_{_n}")(lambda fn=_fn: _seeded(lambda: _Fn(fn), (1, 1)))

# test_conv1d / test_conv2d: Sequential(Conv(2, 2, 3, padding=p), ReLU) on 2x4 / 2x4x4
for _p in (0, 1):
    model(f"api/conv1d_pad{_p}")(lambda p=_p: _seeded(
        lambda: nn.Sequential(nn.Conv1d(2, 2, 3, padding=p), nn.ReLU()), (1, 2, 4)))
    model(f"api/conv2d_pad{_p}")(lambda p=_p: _seeded(
        lambda: nn.Sequential(nn.Conv2d(2, 2, 3, padding=p), nn.ReLU()), (1, 2, 4, 4)))

# test_pooling: Sequential(Pool(2, padding=p)) on 2x121 (1-d) / 2x15x18 (2-d)
for _pool in (nn.MaxPool1d, nn.MaxPool2d, nn.AvgPool1d, nn.AvgPool2d):
    for _p in (0, 1):
        _shape = (1, 2, 121) if "1d" in _pool.__name__ else (1, 2, 15, 18)
        model(f"api/pooling_{_pool.__name__}_pad{_p}")(lambda pool=_pool, p=_p, s=_shape: _seeded(
            lambda: nn.Sequential(pool(2, padding=p)), s))


class BatchNormModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(5, 8)
        self.relu = nn.ReLU()
        self.bn = nn.BatchNorm1d(8)

    def forward(self, x):
        return self.bn(self.relu(self.linear(x)))   # the ReLU keeps the BN out of the Linear


model("api/bn")(lambda: _seeded(BatchNormModel, (1, 5)))


class SqueezeModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(5, 3, bias=False)
        self.bn = nn.BatchNorm1d(3)                  # unused, as in the original
        nn.init.ones_(self.linear.weight)

    def forward(self, x):
        x = torch.unsqueeze(x, dim=1)                # (1, 5) -> (1, 1, 5)
        x = self.linear(x)                           # (1, 1, 3)
        x = torch.squeeze(x)                         # (3,)
        return torch.relu(x)


model("api/squeeze")(lambda: _seeded(SqueezeModel, (1, 5)))

# test_flatten: Sequential(Conv2d(1, 32, 5, 1, 1), Flatten, ReLU) on 1x5x5
model("api/flatten")(lambda: _seeded(
    lambda: nn.Sequential(nn.Conv2d(1, 32, 5, 1, 1), nn.Flatten(), nn.ReLU()), (1, 1, 5, 5)))


class ModelSkippedLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(3, 6, 3, bias=False)
        self.conv2 = nn.Conv1d(6, 5, 3, bias=False)
        self.dropout1 = nn.Dropout()
        self.fc1 = nn.Linear(5 * 4, 6, bias=False)
        self.dropout2 = nn.Dropout()
        self.fc2 = nn.Linear(6, 5, bias=False)

    def forward(self, x):
        x = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        x = torch.flatten(self.dropout1(x), 1)
        return self.fc2(self.dropout2(self.fc1(x)))


model("api/skipped_layers")(lambda: _seeded(ModelSkippedLayers, (1, 3, 8)))


class RemoveTranspose(nn.Module):
    def __init__(self, rank):
        super().__init__()
        if rank == 2:
            self.conv1 = nn.Conv1d(1, 4, 3, bias=False)
            self.fc1 = nn.Linear(4 * 6, 5, bias=False)
        else:
            self.conv1 = nn.Conv2d(1, 4, 3, bias=False)
            self.fc1 = nn.Linear(4 * 6 * 6, 5, bias=False)

    def forward(self, x):
        x = torch.flatten(torch.relu(self.conv1(x)), 1)
        return torch.relu(self.fc1(x))


model("api/remove_transpose_rank2")(lambda: _seeded(lambda: RemoveTranspose(2), (1, 1, 8)))
model("api/remove_transpose_rank3")(lambda: _seeded(lambda: RemoveTranspose(3), (1, 1, 8, 8)))


class ViewModel(nn.Module):
    def __init__(self, n_in=2, n_out=4, size_in=128):
        super().__init__()
        self.view_mult = n_out * size_in
        self.conv1 = nn.Conv1d(n_in, n_out, kernel_size=3, padding=1, bias=False)

    def forward(self, x):
        return self.conv1(x).view(-1, self.view_mult)


model("api/view")(lambda: _seeded(ViewModel, (1, 2, 128)))

model("api/einsum_outer_product")(lambda: _seeded(
    lambda: _Fn(lambda x, y: torch.einsum("bi,bj->bij", x, y)), (1, 4), (1, 5)))
model("api/einsum_batch_matmul")(lambda: _seeded(
    lambda: _Fn(lambda x, y: torch.einsum("bij,bjk->bik", x, y)), (1, 2, 5), (1, 5, 4)))


class EinsumSingleInput(nn.Module):
    def __init__(self, input_dim=8):
        super().__init__()
        self.linear = nn.Linear(input_dim, input_dim)

    def forward(self, x):
        out = self.linear(x)
        return torch.einsum("ij,ij->i", out, out)


model("api/einsum_single_input")(lambda: _seeded(EinsumSingleInput, (1, 8)))

# ---- test_merge_pytorch.py: two 3x10x10 inputs -------------------------------------------------

MERGES = {
    "cat": lambda x, y: torch.cat([x, y], dim=1),
    "add": torch.add, "mul": torch.mul, "sub": torch.sub,
    "minimum": torch.minimum, "maximum": torch.maximum,
}
for _n, _fn in MERGES.items():
    model(f"merge/{_n}")(lambda fn=_fn: _seeded(lambda: _Fn(fn), (1, 3, 10, 10), (1, 3, 10, 10)))

# ---- test_batchnorm_pytorch.py -----------------------------------------------------------------

model("batchnorm/batchnorm")(lambda: _seeded(lambda: nn.Sequential(nn.BatchNorm1d(16)), (1, 16)))


class BatchNormWithFusion(nn.Module):
    def __init__(self, filters=2):
        super().__init__()
        self.conv1 = nn.Conv1d(filters, filters, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm1d(filters)
        self.relu1 = nn.ReLU()

    def forward(self, x):
        return self.relu1(self.bn1(self.conv1(x)))


model("batchnorm/fusion")(lambda: _seeded(BatchNormWithFusion, (1, 2, 32)))

# ---- test_upsampling_pytorch.py: nearest upsampling, then ReLU ---------------------------------

model("upsampling/1d")(lambda: _seeded(
    lambda: nn.Sequential(nn.Upsample(scale_factor=2), nn.ReLU()), (1, 4, 8)))
model("upsampling/2d_fractional")(lambda: _seeded(
    lambda: nn.Sequential(nn.UpsamplingNearest2d(scale_factor=(1, 2.4)), nn.ReLU()), (1, 4, 6, 8)))

# ---- test_zeropadding_pytorch_onnx.py: constant (zero) padding alone ----------------------------

model("zeropadding/constantpad1d")(lambda: _seeded(lambda: nn.ConstantPad1d((2, 3), 0), (1, 2, 4)))
model("zeropadding/constantpad2d")(lambda: _seeded(
    lambda: nn.ConstantPad2d((1, 2, 3, 4), 0), (1, 2, 3, 4)))

# ---- test_extensions_pytorch.py: the custom reverse layer is a flip of the last dim ------------


class Reverse(nn.Module):
    def forward(self, x):
        return torch.flip(x, dims=[-1])


class ReverseModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.reverse1, self.relu, self.reverse2, self.reverse3 = Reverse(), nn.ReLU(), Reverse(), Reverse()

    def forward(self, x):
        return self.reverse3(self.reverse2(self.relu(self.reverse1(x))))


model("extensions/reverse")(lambda: _seeded(ReverseModel, (1, 8)))

# ---- test_layernorm_pytorch.py: Sequential(LayerNorm(5)) on a (4, 5) input ---------------------

model("layernorm/layernorm")(lambda: _seeded(lambda: nn.Sequential(nn.LayerNorm(5)), (1, 4, 5)))

# ---- test_recurrent_pytorch.py: one step of a GRU, an LSTM and an RNN, the state given ---------


class _Recurrent(nn.Module):
    """hls4ml's GRUNet / LSTM / RNN: the layer (10 -> 20, batch_first, bias) with the initial
    state as inputs, the output sequence out."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(10, 20, num_layers=1, batch_first=True, bias=True)
        self.lstm = cell is nn.LSTM

    def forward(self, x, h0, *c0):
        output, _ = self.rnn(x, (h0, c0[0]) if self.lstm else h0)
        return output


model("recurrent/gru")(lambda: _seeded(lambda: _Recurrent(nn.GRU), (1, 1, 10), (1, 1, 20)))
model("recurrent/lstm")(lambda: _seeded(lambda: _Recurrent(nn.LSTM), (1, 1, 10), (1, 1, 20),
                                        (1, 1, 20)))
model("recurrent/rnn")(lambda: _seeded(lambda: _Recurrent(nn.RNN), (1, 1, 10), (1, 1, 20)))
