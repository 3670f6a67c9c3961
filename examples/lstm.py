"""An 8-step LSTM classifier: ``nn.LSTM(16, 32)`` over the sequence, then a Linear on the last
step's hidden state.

Run it through the compiler with::

    python -m pycde_accel gen examples/lstm.py --out out/lstm
    python -m pycde_accel sim examples/lstm.py --out out/lstm

``build()`` returns ``(model, example_inputs)``, as every model file does. On the accelerator
the input projections of all 8 steps are one GEMM, each step's recurrent projection another,
and the gates (sigmoid, tanh tables) and the state update (multiply, add) run on the vector
engine (pycde_accel/ops/rnn.py).
"""

import torch
from torch import nn


class LSTMClassifier(nn.Module):
    def __init__(self, features: int = 16, hidden: int = 32, classes: int = 10):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):                       # x: [batch, steps, features]
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


def build():
    torch.manual_seed(0)
    return LSTMClassifier().eval(), (torch.randn(1, 8, 16),)
