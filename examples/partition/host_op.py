"""A small CNN with an op the accelerator lacks (a cumulative sum over channels) and a
log-softmax head: ``gen`` and ``sim`` refuse it; ``partition`` places those two ops on the
host and the convolutions on the accelerator."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class HostOpNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = torch.cumsum(x, dim=1) / 8          # host only: no cumulative sum on the accelerator
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return F.log_softmax(self.fc(x.flatten(1)), dim=1)


def build():
    torch.manual_seed(0)
    return HostOpNet().eval(), (torch.randn(1, 1, 16, 16),)
