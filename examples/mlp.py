"""The default model: a 784-128-64-10 MLP with ReLUs (the built-in ``mlp``), as a model file.

    python -m pycde_accel sim examples/mlp.py --out out/mlp
    python -m pycde_accel report examples/mlp.py --out out/mlp

``build()`` returns ``(model, example_inputs)``, as every model file does.
"""

import torch
from torch import nn


def build():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(784, 128), nn.ReLU(),
        nn.Linear(128, 64), nn.ReLU(),
        nn.Linear(64, 10))
    return model.eval(), (torch.randn(1, 784),)
