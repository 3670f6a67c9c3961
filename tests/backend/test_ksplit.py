"""K splitting (backend/tiling.py, "K splitting"): a GEMM whose K does not fit a scratchpad bank
runs as CHAIN-ed EXECs per tile, bit-exact in the command golden model and the descriptor
executor, for a plain GEMM (Linear) and a conv (im2col loads cut at chunk boundaries), with one,
two and several chunks (a ragged last one), in both loop orders; the golden model enforces the
CHAIN rules; the perf model's core bound sees one tile per CHAIN run."""

import numpy as np
import pytest

from pycde_accel import contract, perfmodel
from pycde_accel.backend import commands as C, program as P
from pycde_accel.backend.cmdexec import CommandError
from pycde_accel.backend.tiling import k_chunk, k_chunks
from pycde_accel.frontend import graph as g

from .conftest import cfg
from .test_cmdexec import _inputs, _machine_run, _quantize, check

#: 4x8 array, 8-byte beats, banks of 64 elements per lane: chunks of 64
SMALL = dict(spad_a_depth=64, spad_b_depth=64)


def tile_runs(cmds):
    """The EXEC runs of a program: one list of Ks per tile (CHAIN on all but its last)."""
    runs, cur = [], []
    for c in cmds:
        if isinstance(c, C.Exec):
            cur.append(c.K)
            if not c.flags & C.CHAIN:
                runs.append(cur)
                cur = []
    assert not cur, "a CHAIN run is left open"
    return runs


def check_split(cp, config):
    i = next(i for i, d in enumerate(cp.program.layers) if d.KIND == "gemm")
    d = cp.program.layers[i]
    cmds = cp.commands[i]
    runs = tile_runs(cmds)
    chunks = [n for _, n in k_chunks(d.K, config)]
    assert runs == [chunks] * (d.batch * d.m_tiles * d.n_tiles)
    assert sum(isinstance(c, C.Store) for c in cmds) == len(runs)
    for c in cmds:
        if isinstance(c, C.Exec):
            assert c.K <= k_chunk(config)
            if len(chunks) > 1:               # each chunk has banks of its own
                assert c.flags & C.REL_A and c.flags & C.REL_B
        if isinstance(c, C.Load) and c.dst in (C.DST_A, C.DST_B):
            assert c.word + (c.rows * c.beats if not c.flags & C.LANES else c.beats) <= k_chunk(config) // 8
    return d, chunks


def _linear(rng, m, k, n, relu=True):
    x = g.Input("x", (), (m, k), index=0)
    fc = g.Linear("fc", ("x",), (m, n), module="fc", weight=rng.normal(size=(n, k)),
                  bias=rng.normal(size=n), relu=relu)
    return _quantize(g.Graph([x, fc], ["x"], ["fc"]), rng)


def _conv(rng, c, hw, oc, stride, pad=1, after_relu=False):
    """A 3x3 conv; ``after_relu``: of a ReLU of the input (an activation the DMA im2cols), else
    of the model input (written im2col'd by the host when its channels are thin)."""
    h, w = hw
    oh, ow = (h + 2 * pad - 3) // stride + 1, (w + 2 * pad - 3) // stride + 1
    src = "r" if after_relu else "x"
    nodes = [g.Input("x", (), (1, c, h, w), index=0)]
    if after_relu:
        nodes.append(g.ReLU("r", ("x",), (1, c, h, w)))
    nodes += [g.Conv2d("conv", (src,), (1, oc, oh, ow), module="features.0",
                      weight=rng.normal(size=(oc, c, 3, 3)), bias=rng.normal(size=oc),
                      stride=(stride, stride), padding=(pad, pad), relu=True)]
    return _quantize(g.Graph(nodes, ["x"], ["conv"]), rng)


# (K, chunks): one chunk that fills the bank exactly, two, several with a ragged last one
@pytest.mark.parametrize("k,expect", [(64, [64]), (100, [64, 36]), (300, [64] * 4 + [44])])
# N=12: records resident, A-stationary; N=40 on spad_c_depth=16: records reloaded per
# window, B-stationary (the records then load once)
@pytest.mark.parametrize("n,order", [(12, P.A_STATIONARY), (40, P.B_STATIONARY)])
def test_linear_split_bit_exact(k, expect, n, order):
    rng = np.random.default_rng(k + n)
    config = cfg(4, 8, 64, spad_c_depth=16, **SMALL)
    cp, _ = check(_linear(rng, 9, k, n), config, _inputs(_linear(rng, 9, k, n), rng))
    d, chunks = check_split(cp, config)
    assert chunks == expect and cp.stats[0].get("k_chunks", 1) == len(expect)
    if len(expect) > 1:                       # (a K that fits keeps the planner's usual choice)
        assert d.order == order and d.block == 1
    else:
        assert not any(isinstance(c, C.Exec) and c.flags & C.CHAIN for c in cp.commands[0])


def test_linear_split_rerun_with_fresh_inputs():
    rng = np.random.default_rng(3)
    qm = _linear(rng, 5, 300, 20, relu=False)
    config = cfg(4, 8, 64, **SMALL)
    for seed in (1, 2):
        cp, _ = check(qm, config, _inputs(qm, np.random.default_rng(seed)), seed=seed)
    check_split(cp, config)


# K = 9 * pitch: pitch 8 -> 72 = 64 + 8; pitch 24 -> 216 = 3 * 64 + 24 (chunk boundaries
# fall inside a tap of 3 beats, so im2col loads are cut mid-row); stride 2 + padding: ZERO taps.
# Of the model input, 20 channels are written im2col'd by the host: K = 9 * 20 = 180.
@pytest.mark.parametrize("c,expect,host", [(8, [64, 8], False), (20, [64, 64, 64, 24], False),
                                           (20, [64, 64, 52], True)])
@pytest.mark.parametrize("oc,order", [(10, P.A_STATIONARY), (40, P.B_STATIONARY)])
@pytest.mark.parametrize("stride", [1, 2])
def test_conv_split_bit_exact(c, expect, host, oc, order, stride):
    rng = np.random.default_rng(c * oc + stride)
    qm = _conv(rng, c, (7, 6), oc, stride, after_relu=not host)
    config = cfg(4, 8, 64, spad_c_depth=16, **SMALL)
    cp, _ = check(qm, config, _inputs(qm, rng))
    d, chunks = check_split(cp, config)
    assert d.has(P.IM2COL) != host and chunks == expect and d.order == order


def test_default_config_splits_resnet_and_vgg_k():
    """K of ResNet-18's 3x3 convs at 512 channels and VGG-11's first classifier layer: chunks
    of one bank (1024 elements), the last one ragged where K is not a multiple."""
    config = cfg(8, 8)
    assert k_chunk(config) == 1024
    assert [n for _, n in k_chunks(9 * 512, config)] == [1024] * 4 + [512]
    assert len(k_chunks(25088, config)) == 25 and k_chunks(25088, config)[-1] == (24576, 512)
    assert config.max_k >= 25088


def _hand(k1, k2, chain2=False):
    """Two chunks of one tile, by hand: A/B banks of 2 words (16 elements)."""
    a = C.Load(C.DST_A, 2048, 2, 4, 16, 0, 0, C.LANES | C.COMMIT)
    b = C.Load(C.DST_B, 2048, 2, 8, 16, 0, 0, C.LANES | C.COMMIT)
    rel = C.REL_A | C.REL_B
    return [C.Load(C.DST_P, 1024, 16, 1, 0, 0, 0, 0), a, b, a, b,
            C.Exec(k1, 0, 0, rel | C.CHAIN), C.Exec(k2, 0, 0, rel | (C.CHAIN if chain2 else 0)),
            C.Store(3072, 4, 8, 0, 0)]


def test_chain_rules_are_enforced():
    k = cfg(4, 8, 64, spad_a_depth=16, spad_b_depth=16, max_k=24)
    c = _machine_run(k, _hand(16, 8))
    assert (c.tiles, c.exec_cycles, c.array_macs) == (1, 24, 4 * 8 * 24)
    with pytest.raises(CommandError, match="exceeds max_k=24"):
        _machine_run(k, _hand(16, 16))
    with pytest.raises(CommandError, match="no C tile"):          # the STORE finds no tile
        _machine_run(k, _hand(16, 8, chain2=True))
    with pytest.raises(CommandError, match="K=17 outside"):      # a chunk must fit the bank
        _machine_run(k, _hand(17, 1))


def test_perf_bounds_see_one_tile_per_chain_run():
    k = cfg(8, 8, 64, spad_a_depth=16, spad_b_depth=16)
    cmds = _hand(4, 3)
    assert perfmodel.bounds(cmds, k)["core"] == 8               # max(4 + 3, rows), not 2 * rows
    split = perfmodel.predict_layer(cmds, k)
    one = perfmodel.predict_layer(cmds[:5] + [C.Exec(7, 0, 0, C.REL_A | C.REL_B)] + cmds[7:], k)
    assert split >= one


def test_wide_fields_are_split_not_refused():
    """With a parameter memory and X buffer deeper than 16 bits count, a Linear's records LOAD
    (66000 beats) and a ReLU's VEC (66000 beats) are split into commands that fit the engines'
    16-bit fields, and the layers stay bit-exact."""
    rng = np.random.default_rng(7)
    config = cfg(4, 8, 64, spad_c_depth=1 << 17)
    x = g.Input("x", (), (1, 8), index=0)
    fc = g.Linear("fc", ("x",), (1, 33000), module="fc", weight=rng.normal(size=(33000, 8)),
                  bias=rng.normal(size=33000))
    relu = g.ReLU("r", ("fc",), (1, 33000))
    big = g.Input("y", (), (1, 8, 200, 330), index=1)
    relu2 = g.ReLU("r2", ("y",), (1, 8, 200, 330))
    qm = _quantize(g.Graph([x, fc, relu, big, relu2], ["x", "y"], ["r", "r2"]), rng, batches=1)
    cp, _ = check(qm, config, _inputs(qm, rng))
    wide = [c for cmds in cp.commands for c in cmds
            if (isinstance(c, C.Load) and c.beats == 0xFFFF) or (isinstance(c, C.Vec) and c.n == 0xFFFF)]
    assert {type(c) for c in wide} == {C.Load, C.Vec}
    for cmds in cp.commands:
        for c in cmds:
            assert not contract.fields_out_of_range(c.SPEC, vars(c))
