"""Built-in example models, addressed by short name (``mlp`` is the default).

Each builder returns ``(torch.nn.Module in eval mode, tuple_of_example_tensors)`` with seeded
weights (nothing is downloaded) and a small example batch (batch 1), so that simulating a whole
model stays cheap. Example inputs are standard normal; the frontend draws its calibration and
evaluation inputs from the same distribution (see :mod:`pycde_accel.frontend.loader`).

* ``mlp``:      784-128-64-10 MLP with ReLUs; input ``[1, 784]``.
* ``lenet5``:   LeNet-5 (conv5x5(6, pad 2)-relu-maxpool-conv5x5(16)-relu-maxpool-120-84-10);
                input ``[1, 1, 28, 28]``.
* ``resblock``: conv3x3(3->8)+BN+ReLU stem, one residual block (conv-BN-ReLU-conv-BN, + skip,
                ReLU), maxpool 2x2, linear 8*4*4 -> 10; input ``[1, 3, 8, 8]``. Its BatchNorms have
                seeded non-trivial running statistics, so BN folding is exercised.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

DEFAULT = "mlp"


def _randomize_bn(bn: nn.BatchNorm2d, g: torch.Generator) -> None:
    c = bn.num_features
    with torch.no_grad():
        bn.weight.copy_(1.0 + 0.2 * torch.randn(c, generator=g))
        bn.bias.copy_(0.1 * torch.randn(c, generator=g))
        bn.running_mean.copy_(0.1 * torch.randn(c, generator=g))
        bn.running_var.copy_(0.5 + torch.rand(c, generator=g))


def mlp():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = nn.Sequential(
            nn.Linear(784, 128), nn.ReLU(),
            nn.Linear(128, 64), nn.ReLU(),
            nn.Linear(64, 10))
        x = torch.randn(1, 784)
    return model.eval(), (x,)


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
            nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, 10))

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def lenet5():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = LeNet5()
        x = torch.randn(1, 1, 28, 28)
    return model.eval(), (x,)


class ResBlock(nn.Module):
    def __init__(self, c: int = 8):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(c * 4 * 4, 10)

    def forward(self, x):
        x = self.stem(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        x = self.relu(x + y)
        x = self.pool(x)
        return self.fc(x.flatten(1))


def resblock():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = ResBlock()
        g = torch.Generator().manual_seed(1)
        for bn in (model.stem[1], model.bn1, model.bn2):
            _randomize_bn(bn, g)
        x = torch.randn(1, 3, 8, 8)
    return model.eval(), (x,)


BUILTINS: dict[str, Callable[[], tuple]] = {"mlp": mlp, "lenet5": lenet5, "resblock": resblock}
