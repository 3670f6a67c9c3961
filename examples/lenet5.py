"""A LeNet-5 style CNN: conv5x5(6, pad 2)-ReLU-maxpool-conv5x5(16)-ReLU-maxpool-120-84-10.

``build()`` takes a 16x16 image so that a whole-model simulation stays short (the built-in
``lenet5`` is the same network on 28x28 MNIST-sized inputs)::

    python -m pycde_accel sim examples/lenet5.py --out out/lenet
"""

import torch
from torch import nn


class LeNet5(nn.Module):
    def __init__(self, size: int = 16):
        super().__init__()
        s = ((size // 2) - 4) // 2            # spatial size after the second pool
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Linear(16 * s * s, 120), nn.ReLU(),
            nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, 10))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def build():
    torch.manual_seed(0)
    return LeNet5(16).eval(), (torch.randn(1, 1, 16, 16),)
