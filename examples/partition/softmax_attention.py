"""Single-head self-attention whose weights are normalized over the queries (a softmax over
dim 0 of the scores): the projections and both matmuls suit the accelerator; a softmax over any
dim but the last is an op only the host has, so ``partition`` splits the block around it."""

import torch
from torch import nn


class SoftmaxAttention(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.scale = dim ** -0.5

    def forward(self, x):                                   # x: [tokens, dim]
        scores = torch.matmul(self.q(x), self.k(x).transpose(0, 1)) * self.scale
        return self.out(torch.matmul(torch.softmax(scores, dim=0), self.v(x)))


def build():
    torch.manual_seed(0)
    return SoftmaxAttention().eval(), (torch.randn(8, 16),)
