"""A small attention block: the scores are a matmul between two activations.

Run it through the compiler with::

    python -m pycde_accel gen examples/tiny_attention.py --out out/attention
    python -m pycde_accel sim examples/tiny_attention.py --out out/attention

``build()`` returns ``(model, example_inputs)``, as every model file does. Softmax is not
supported on the accelerator, so the block keeps the raw scaled scores (a linear attention):
out = (Q K^T) V, with Q, K, V linear projections of the tokens.
"""

import torch
from torch import nn


class TinyAttention(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):                       # x: [tokens, dim]
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = torch.matmul(q, k.transpose(0, 1))   # [tokens, tokens]
        mixed = torch.matmul(scores, v)               # [tokens, dim]
        return self.out(torch.relu(mixed))


def build():
    torch.manual_seed(0)
    return TinyAttention().eval(), (torch.randn(8, 16),)
