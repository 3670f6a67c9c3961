"""Tiling: the loop nest covers every tile once with its panels in the scratchpad, the traffic
formula matches a count over the schedule, the loop order is the cheaper one, refusals."""

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from pycde_accel.backend import program as P
from pycde_accel.backend.tiling import (ceil_div, inbounds_1d, k_chunk, k_chunks, packed_panel_bytes,
                                        plan_gemm, schedule)
from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError


@settings(max_examples=80, deadline=None)
@given(batch=st.integers(1, 3), mt=st.integers(1, 9), nt=st.integers(1, 9),
       order=st.sampled_from([P.A_STATIONARY, P.B_STATIONARY]), block=st.integers(1, 10))
def test_schedule_covers_each_tile_once_from_loaded_panels(batch, mt, nt, order, block):
    spad_a, spad_b, seen = {}, {}, []
    loads = {"load_a": 0, "load_b": 0}
    for s in schedule(batch, mt, nt, order, block):
        if s.kind == "load_a":
            spad_a[(s.a_half, s.a_slot)] = (s.batch, s.mt)
            loads["load_a"] += 1
        elif s.kind == "load_b":
            spad_b[(s.b_half, s.b_slot)] = (s.batch, s.nt)
            loads["load_b"] += 1
        else:
            assert spad_a[(s.a_half, s.a_slot)] == (s.batch, s.mt)
            assert spad_b[(s.b_half, s.b_slot)] == (s.batch, s.nt)
            assert s.a_slot < block and s.b_slot < block
            seen.append((s.batch, s.mt, s.nt))
    assert sorted(seen) == list(itertools.product(range(batch), range(mt), range(nt)))
    if order == P.A_STATIONARY:
        assert loads == {"load_a": batch * mt, "load_b": batch * ceil_div(mt, block) * nt}
    else:
        assert loads == {"load_a": batch * ceil_div(nt, block) * mt, "load_b": batch * nt}


def test_double_buffering_alternates_halves():
    steps = [s for s in schedule(1, 1, 4, P.A_STATIONARY, 1) if s.kind == "load_b"]
    assert [s.b_half for s in steps] == [0, 1, 0, 1]
    steps = [s for s in schedule(1, 5, 3, P.A_STATIONARY, 2) if s.kind == "load_a"]
    assert [s.a_half for s in steps] == [0, 0, 1, 1, 0]


def test_order_choice_and_traffic():
    cfg = AccelConfig(rows=8, cols=8)
    # batch-1 linear: weights are the big operand, read exactly once (A-stationary)
    t = plan_gemm(1, 128, 784, 1, cfg, a_pass_bytes=784, b_pass_bytes=16 * packed_panel_bytes(784, 8, 8),
                  p_panel_bytes=128, where="x")
    assert t.order == P.A_STATIONARY and t.b_passes == 1 and t.a_passes == 1
    assert t.bytes_read == 784 + 128 * 784 + 16 * 128 and t.tiles == 16
    # conv with few output channels and a long M: the weights stay, A is read once
    t = plan_gemm(784, 6, 25, 1, cfg, a_pass_bytes=784 * 25, b_pass_bytes=200, p_panel_bytes=128, where="x")
    assert t.order == P.B_STATIONARY and t.a_passes == 1 and t.b_passes == 1
    # both options computed by hand for a case where the scratchpad forces re-reads
    small = AccelConfig(rows=2, cols=2, spad_a_depth=64, spad_b_depth=64)
    t = plan_gemm(20, 20, 30, 1, small, a_pass_bytes=600, b_pass_bytes=600, p_panel_bytes=32, where="x")
    # 10 m/n tiles, block = (64 / 8 words) // ceil(30 / 8) = 2 panels: stationary once + streamed 5 times
    assert t.block == 2 and t.bytes_read == 600 + 5 * 600 + 10 * 32     # records fit P: read once


def test_partial_tiles_and_utilization():
    t = plan_gemm(5, 7, 3, 2, AccelConfig(rows=4, cols=4), a_pass_bytes=15, b_pass_bytes=21,
                  p_panel_bytes=16, where="x")
    assert (t.m_tiles, t.n_tiles, t.tiles) == (2, 2, 8)
    assert t.macs == 2 * 5 * 7 * 3
    assert t.stats()["pe_utilization"] == pytest.approx(210 / (8 * 16 * 3), abs=1e-6)
    assert t.bytes_written == 2 * 35


def test_k_longer_than_max_k_is_refused():
    cfg = AccelConfig(max_k=64)
    with pytest.raises(UserError, match="layer fc.*K=65 exceeds config max_k=64"):
        plan_gemm(1, 1, 65, 1, cfg, a_pass_bytes=0, b_pass_bytes=0, p_panel_bytes=0, where="layer fc")


@pytest.mark.parametrize("field", ["spad_a_depth", "spad_b_depth"])
def test_k_longer_than_a_bank_is_split(field):
    """The smaller bank sets the chunk; every tile then streams its own chunks (block 1), so A
    is read once per n-tile and B once per m-tile."""
    cfg = AccelConfig(rows=4, cols=8, **{field: 64})
    assert k_chunk(cfg) == 64 and k_chunks(130, cfg) == [(0, 64), (64, 64), (128, 2)]
    t = plan_gemm(9, 20, 130, 1, cfg, a_pass_bytes=9 * 136, b_pass_bytes=3 * 8 * 136,
                  p_panel_bytes=128, where="layer fc")
    assert (t.k_chunks, t.block, t.order) == (3, 1, P.A_STATIONARY)
    assert t.bytes_read == 3 * 9 * 136 + 3 * (3 * 8 * 136) + 3 * 128
    assert t.stats()["k_chunks"] == 3 and "k_chunks" not in plan_gemm(
        9, 20, 64, 1, cfg, a_pass_bytes=1, b_pass_bytes=1, p_panel_bytes=128, where="x").stats()
    # the EXEC K field (16 bits) bounds a chunk even when a bank holds more
    big = AccelConfig(spad_a_depth=1 << 17, spad_b_depth=1 << 17)
    assert k_chunk(big) == (0xFFFF // 8) * 8


def test_inbounds_counts_padding():
    assert inbounds_1d(4, 3, 1, 1, 4) == 4 * 3 - 2
    assert inbounds_1d(2, 2, 2, 0, 4) == 4
    assert packed_panel_bytes(25, 3, 8) == 3 * 32         # 3 lanes of round_up(25, 8)
