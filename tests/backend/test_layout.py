"""DRAM layout: B^T panels, records, padded channels-last views, placements, 64-byte alignment,
determinism, the command region."""

import numpy as np
import pytest

from pycde_accel.backend import compile_program, commands as C
from pycde_accel.backend.layout import (Placement, View, as_view, merge_loops, pack_params, pack_weight,
                                        padded_view)

from .conftest import cfg, example_inputs_q, frontend_result


def test_pack_weight_panels():
    b = (np.arange(5 * 7).reshape(5, 7) % 100).astype(np.int8)    # K=5, N=7
    data = np.frombuffer(pack_weight(b, 4, 4), dtype=np.int8)       # C=4 lanes, Kp=8
    assert data.size == 2 * 4 * 8
    lanes = data.reshape(8, 8)                                      # lane n = B^T row n
    assert np.array_equal(lanes[:7, :5], b.T)
    assert not lanes[:, 5:].any() and not lanes[7].any()


def test_pack_params_records():
    recs = np.frombuffer(pack_params(np.array([-5, 6]), np.array([1 << 30, 3]), np.array([1, 31]), 4), "<i4")
    assert recs.reshape(4, 4).tolist() == [[-5, 1 << 30, 1, 0], [6, 3, 31, 0], [0] * 4, [0] * 4]
    assert pack_params(None, 7, 2, 1) == np.array([0, 7, 2, 0], "<i4").tobytes()


def test_views():
    v = padded_view("x", (2, 4, 5, 3), 8).transpose((0, 3, 1, 2))   # NHWC, C padded to 8, as NCHW
    assert v.strides == (160, 1, 40, 8)
    assert v.reshape((2, 60)) is None                               # a flatten is no view
    assert as_view("x", v.offsets()) == View("x", v.shape, v.strides)
    assert as_view("x", v.offsets().reshape(2, 60)) is None
    assert merge_loops((2, 3, 4), (12, 4, 1), (12, 4, 1)) == ((1, 1, 1, 24), [(0, 0, 0, 1), (0, 0, 0, 1)])
    assert merge_loops((2, 3, 4, 5, 6), (1, 2, 6, 24, 120)) is None


def test_placement_round_trip():
    v = padded_view("x", (1, 3, 3, 5), 8).transpose((0, 3, 1, 2))
    p = Placement("x", "x", 64, 9 * 8 - 3, v.shape, v.offsets(), 8, v.strides)
    x = np.arange(45).reshape(1, 5, 3, 3) - 20
    data = p.pack_input(x)
    assert len(data) == p.size and np.frombuffer(data, np.int8)[8 * 4 + 2] == x[0, 2, 1, 1]
    assert np.array_equal(p.unpack_output(data), x)
    with pytest.raises(ValueError, match="shape"):
        p.pack_input(x[0])


@pytest.mark.parametrize("model", ["lenet5", "resblock"])
def test_image_is_deterministic_and_aligned(model):
    fe = frontend_result(model)
    config = cfg(4, 16, 128)
    a, b = compile_program(fe, config), compile_program(fe, config)
    assert a.image == b.image and a.to_json() == b.to_json()
    syms = sorted(a.symbols.values(), key=lambda s: s.addr)
    assert syms[0].name == "program" and syms[0].addr == 0 and syms[-1].name == "commands"
    for s, nxt in zip(syms, syms[1:]):
        assert s.addr % 64 == 0 and s.addr + s.size <= nxt.addr           # aligned, disjoint
    kinds = [s.kind for s in syms]
    assert kinds.index("input") > max(i for i, k in enumerate(kinds) if k in ("weight", "params"))
    assert len(a.image) == a.layout.total
    # the packed weight of the first conv: B^T lanes, K in (kh, kw, c over the padded pitch 16),
    # or over the real channels when the host writes the input im2col'd (both first convs: 1
    # and 3 channels of a model input that nothing else reads)
    w = fe.quantized.layers["conv2d"].weight
    oc, c, kh, kw = w.shape
    p = a.input_placements[0]
    host = p.layout is not None
    assert host
    bmat = np.zeros((kh, kw, c if host else 16, oc), np.int64)
    bmat[:, :, :c] = w.transpose(2, 3, 1, 0)
    sym = a.symbols["conv2d.weight"]
    got = np.frombuffer(a.image[sym.addr:sym.addr + sym.size], dtype=np.int8)
    assert np.array_equal(got, np.frombuffer(pack_weight(bmat.reshape(-1, oc).astype(np.int8), 16, 16), np.int8))
    # the commands of every layer are in the image where the host will point cmd_base
    for e, cmds in zip(a.layers, a.commands):
        assert C.decode_bytes(a.image[e["cmd_addr"]:e["cmd_addr"] + C.CMD_BYTES * e["cmd_count"]]) == cmds
    xq = example_inputs_q(fe)[0]
    if host:
        # im2col'd: a row of round_up(KH*KW*C, 16) bytes per output pixel of the conv (lenet5:
        # 5*5*1 -> 32), K in (kh, kw, c) order; the host writes the taps, zero on padding and
        # past K
        lo = p.layout
        rb = -(-kh * kw * c // 16) * 16
        assert lo["kind"] == "im2col" and lo["K"] == kh * kw * c and lo["row_bytes"] == rb
        assert p.size == lo["rows"] * rb and lo["rows"] == a.program.layers[0].M
        assert model != "lenet5" or rb == 32
        data = np.frombuffer(p.pack_input(xq), np.int8).reshape(lo["rows"], rb)
        g = p.gather.reshape(lo["rows"], rb)
        assert np.array_equal(data[g >= 0], xq.ravel()[g[g >= 0]]) and not data[g < 0].any()
        assert (g[:, lo["K"]:] == -2).all() and (g[:, :lo["K"]] >= -1).all()
        return
    # inputs are channels-last, padded to the array width
    assert p.pitch == 16 and p.strides == (0, 1, 8 * 16, 16)
    assert np.array_equal(p.unpack_output(p.pack_input(xq)), xq)
