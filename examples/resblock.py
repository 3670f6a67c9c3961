"""A residual block: conv3x3+BN+ReLU stem, conv-BN-ReLU-conv-BN + skip, ReLU, maxpool, linear.

BatchNorm is folded into the convolutions by the frontend; the skip connection is the vector
engine's residual ADD (with its own requantization scales)::

    python -m pycde_accel sim examples/resblock.py --out out/res
"""

import torch
from torch import nn


class ResBlock(nn.Module):
    def __init__(self, c: int = 8):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(c * 4 * 4, 10)

    def forward(self, x):
        x = self.stem(x)
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        x = torch.relu(x + y)
        return self.fc(torch.flatten(self.pool(x), 1))


def build():
    torch.manual_seed(0)
    model = ResBlock(8)
    with torch.no_grad():                      # non-trivial BatchNorm statistics
        for bn in (model.stem[1], model.bn1, model.bn2):
            bn.weight.normal_(1.0, 0.2)
            bn.bias.normal_(0.0, 0.1)
            bn.running_mean.normal_(0.0, 0.1)
            bn.running_var.uniform_(0.5, 1.5)
    return model.eval(), (torch.randn(1, 3, 8, 8),)
