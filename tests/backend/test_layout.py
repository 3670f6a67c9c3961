"""DRAM layout: weight panels in DMA order, records, views, alignment, determinism."""

import numpy as np
import pytest

from pycde_accel.backend import compile_program
from pycde_accel.backend.layout import View, merge_loops, pack_params, pack_weight
from pycde_accel.config import AccelConfig

from .conftest import frontend_result


def test_pack_weight_panels():
    b = np.arange(5 * 7).reshape(5, 7) % 100          # K=5, N=7
    data = np.frombuffer(pack_weight(b.astype(np.int8), 3, 8), dtype=np.int8)
    pb = 16                                           # 5*3 = 15 bytes -> 16
    assert data.size == 3 * pb
    for nt in range(3):
        panel = data[nt * pb: nt * pb + 15].reshape(5, 3)
        cols = b[:, nt * 3:(nt + 1) * 3]
        assert np.array_equal(panel[:, :cols.shape[1]], cols)
        assert not panel[:, cols.shape[1]:].any() and data[nt * pb + 15] == 0


def test_pack_params_records():
    recs = np.frombuffer(pack_params(np.array([-5, 6]), np.array([1 << 30, 3]), np.array([1, 31]), 4), "<i4")
    assert recs.reshape(4, 4).tolist() == [[-5, 1 << 30, 1, 0], [6, 3, 31, 0], [0] * 4, [0] * 4]
    assert pack_params(None, 7, 2, 1) == np.array([0, 7, 2, 0], "<i4").tobytes()


def test_views():
    v = View.contiguous("x", (2, 3, 4, 5)).transpose((0, 3, 1, 2))   # channels-last seen as NCHW
    assert v.strides == (60, 1, 20, 5)
    assert v.reshape((2, 60)) is None                                # a flatten needs a copy/fold
    assert v.reshape((2, 5, 12)).strides == (60, 1, 5)
    assert np.array_equal(v.offsets(), np.arange(120).reshape(2, 3, 4, 5).transpose(0, 3, 1, 2))
    assert merge_loops((2, 3, 4), (12, 4, 1), (12, 4, 1)) == ((1, 1, 1, 24), [(0, 0, 0, 1), (0, 0, 0, 1)])
    assert merge_loops((2, 3, 4, 5, 6), (1, 2, 6, 24, 120)) is None


@pytest.mark.parametrize("model", ["lenet5", "resblock"])
def test_image_is_deterministic_and_aligned(model):
    fe = frontend_result(model)
    cfg = AccelConfig(rows=4, cols=2, axi_data_width=128)
    a, b = compile_program(fe, cfg), compile_program(fe, cfg)
    assert a.image == b.image and a.to_json() == b.to_json()
    syms = sorted(a.symbols.values(), key=lambda s: s.addr)
    assert syms[0].name == "program" and syms[0].addr == 0
    for s, nxt in zip(syms, syms[1:]):
        assert s.addr % 16 == 0 and s.addr + s.size <= nxt.addr           # aligned, disjoint
    kinds = [s.kind for s in syms]
    assert kinds.index("input") > max(i for i, k in enumerate(kinds) if k in ("weight", "params"))
    assert len(a.image) == a.layout.total
    # the packed weight of the first conv is in the image, panel by panel, K in (kh, kw, c) order
    w = fe.quantized.layers["conv2d"].weight
    oc = w.shape[0]
    bmat = w.transpose(2, 3, 1, 0).reshape(-1, oc)
    sym = a.symbols["conv2d.weight"]
    got = np.frombuffer(a.image[sym.addr:sym.addr + sym.size], dtype=np.int8)
    assert np.array_equal(got, np.frombuffer(pack_weight(bmat.astype(np.int8), 2, 16), dtype=np.int8))
