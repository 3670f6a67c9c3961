"""A thin conv of a model input reads it im2col'd from the host (ops/conv2d.py ``host_im2col``):
K = KH*KW*C padded once to the beat, a plain GEMM, bit-exact in the golden command executor for
channel counts, kernels, strides, padding, dilation and beat widths; chosen only where it saves
beats and the input has no other reader."""

import numpy as np
import pytest
import torch
from torch import nn

from pycde_accel import frontend
from pycde_accel.backend import cmdexec, compile_program, executor, program as P
from pycde_accel.frontend import reference
from pycde_accel.frontend.loader import from_module
from pycde_accel.hostgen import io_npz

from .conftest import cfg


def _run(model, x, config, host=True):
    torch.manual_seed(0)
    fe = frontend.run(from_module(model, (x,)), eval_batches=1)
    cp = compile_program(fe, config, host_im2col=host)
    xq = reference.quantize_inputs(fe.quantized, [x.double().numpy()])
    outs, _ = cmdexec.run(cp, xq)                 # the input row tails and activations garbage
    want = reference.run(fe.quantized, xq).outputs
    assert all(np.array_equal(o, w) for o, w in zip(outs, want)), "differs from the reference"
    outs2, _ = executor.run(cp, xq)               # the descriptor semantics agree too
    assert all(np.array_equal(o, w) for o, w in zip(outs2, want))
    return cp


# (C, kernel, stride, padding, dilation); the second conv reads an activation (DMA im2col)
CASES = [(3, 3, 1, 1, 1), (3, 3, 2, 1, 1), (1, 5, 1, 0, 1), (3, 7, 2, 3, 1), (2, (3, 5), (2, 1), (1, 2), 1),
         (5, 3, 1, 1, 2), (3, 1, 1, 0, 1)]


@pytest.mark.parametrize("ab", [4, 8, 16])
@pytest.mark.parametrize("c,k,s,p,d", CASES)
def test_host_im2col_bit_exact(c, k, s, p, d, ab):
    torch.manual_seed(c + ab)
    conv = nn.Conv2d(c, 12, k, stride=s, padding=p, dilation=d)
    model = nn.Sequential(conv, nn.ReLU(), nn.Conv2d(12, 8, 3, padding=1)).eval()
    x = torch.randn(1, c, 11, 10)
    rows, cols = (8, 16) if ab == 16 else (4, 8)
    config = cfg(rows, cols, ab * 8)
    cp = _run(model, x, config)
    kh, kw = conv.kernel_size
    K, pitch = kh * kw * c, -(-c // cols) * cols
    first = cp.program.layers[0]
    host = -(-K // ab) < kh * kw * pitch // ab    # beats per output pixel, packed vs padded
    assert (cp.input_placements[0].layout is not None) == host
    if host:
        row = -(-K // ab) * ab
        assert first.KIND == "gemm" and not first.has(P.IM2COL) and first.K == K
        assert first.a_stride_m == row and cp.input_placements[0].size == first.M * row
        assert cp.layers[0]["macs"] == cp.layers[0]["array_macs"]    # no channel padding left
    else:                       # 1x1 of 3 channels: one beat either way, stays channels-last
        assert first.has(P.IM2COL) and first.K == kh * kw * pitch
    assert cp.program.layers[-1].has(P.IM2COL)   # the inner conv: the DMA's im2col
    if host:                                      # the host driver packs the same bytes
        import io
        z = np.load(io.BytesIO(io_npz(cp)))
        assert np.array_equal(z["in0_gather"], cp.input_placements[0].gather)


def test_fewer_beats_and_exec_cycles_than_the_dma_im2col():
    """A 3x3 RGB conv on 8x8 / 64-bit: 4 beats (K = 27) per output pixel instead of 9 (K = 72)."""
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU()).eval()
    x = torch.randn(1, 3, 16, 16)
    new, old = (_run(model, x, cfg(8, 8, 64), host) for host in (True, False))
    assert new.stats[0]["K"] == 27 and old.stats[0]["K"] == 72
    assert new.layers[0]["exec_cycles"] * 72 == old.layers[0]["exec_cycles"] * 27
    assert new.layers[0]["bytes_read"] < old.layers[0]["bytes_read"]
    assert old.layers[0]["padding_waste"] == round(1 - 27 / 72, 6) and new.layers[0]["padding_waste"] == 0


@pytest.mark.parametrize("why", ["two readers", "grouped", "wide"])
def test_kept_channels_last(why):
    """The input keeps the channels-last layout when another layer reads it too (a residual),
    when its conv is grouped (WGEMM), or when its channels fill whole beats already."""
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(3, 3, 3, padding=1)

        def forward(self, x):
            return torch.relu(self.c(x)) + x
    model, c = {"two readers": (Two(), 3), "grouped": (nn.Conv2d(4, 8, 3, groups=2), 4),
                "wide": (nn.Conv2d(8, 8, 3), 8)}[why]
    cp = _run(model.eval(), torch.randn(1, c, 6, 6), cfg(4, 8, 64))
    assert cp.input_placements[0].layout is None and cp.input_placements[0].gather is None
