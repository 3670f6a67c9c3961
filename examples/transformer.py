"""A small transformer classifier: two encoder layers over 8 tokens, with a class token and a
learned positional embedding.

Run it through the compiler with::

    python -m pycde_accel gen examples/transformer.py --out out/transformer
    python -m pycde_accel sim examples/transformer.py --out out/transformer

``build()`` returns ``(model, example_inputs)``, as every model file does. The tokens (8 of
16 features) are embedded by a Linear, a class token is put before them and a positional
embedding added; ``nn.TransformerEncoder`` (2 layers, d_model 32, 2 heads, feed-forward 64,
GELU, pre-norm) mixes them, and the class token's output, normalized, gives 10 logits.
Attention, softmax, LayerNorm and GELU all run on the accelerator as integer steps
(``pycde_accel/frontend/quantize.py``, "LayerNorm, softmax and GELU").
"""

import torch
from torch import nn


class TransformerClassifier(nn.Module):
    def __init__(self, features: int = 16, tokens: int = 8, dim: int = 32, classes: int = 10):
        super().__init__()
        self.embed = nn.Linear(features, dim)
        self.cls = nn.Parameter(0.5 * torch.randn(1, 1, dim))
        self.pos = nn.Parameter(0.5 * torch.randn(1, tokens + 1, dim))
        layer = nn.TransformerEncoderLayer(d_model=dim, nhead=2, dim_feedforward=64,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):                         # x: [batch, tokens, features]
        t = self.embed(x)
        t = torch.cat([self.cls.expand(t.shape[0], -1, -1), t], dim=1) + self.pos
        t = self.encoder(t)
        return self.head(self.norm(t[:, 0]))


def build():
    torch.manual_seed(0)
    return TransformerClassifier().eval(), (torch.randn(1, 8, 16),)
