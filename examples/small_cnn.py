"""A small CNN with BatchNorm (folded into the convolutions by the frontend).

    python -m pycde_accel gen examples/small_cnn.py --array 8x8 --out out/cnn
"""

import torch
from torch import nn


def build():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 4 * 4, 10))
    return model.eval(), (torch.randn(1, 1, 16, 16),)
