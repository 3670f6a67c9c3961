"""The vector engine's row-reduction unit (VEC ROWRED, ``rtl_lib.row_reduce``: the lowered
``row_lanes`` lane tree at one beat per element, the accumulator, the lowered requantize of
each row's total, the broadcast) in Verilator: every result beat bit-exact against the
contract's definition (rows' max, sum or sum of squares over the elements that belong to the
row, padding lanes ignored, requantized, in every byte of the row's beats) under random S
gaps and random write back-pressure, rows of one beat and of several, in one command and over
several; and one beat per cycle without back-pressure (the bus rate)."""

from __future__ import annotations

import numpy as np
import pytest

from pycde_accel import contract
from pycde_accel.config import AccelConfig
from pycde_accel.frontend import quantize as q

from .test_vector_engine import DEPTH, MAX_RUN, Model, _i8, _run, _to_int

W = 64
AB = W // 8
IDENT = (1 << 31) - 1            # SRDHM(x, 2^31 - 1) = x for int8 x: the max's requantize


def _sim(block_sim):
    from pycde_accel.assemble import emit_vector_engine
    cfg = AccelConfig(axi_data_width=W, spad_c_depth=DEPTH)
    return block_sim(f"vec{W}_rowred", lambda sv_dir: emit_vector_engine(
        cfg, sv_dir, max_run=MAX_RUN, rowred=True))


def rowred_ref(s, bpr, length, op, m0, shift):
    """The contract's ROWRED on n = rows * bpr beats ``s`` (n x AB int8): the result beats."""
    rows = np.asarray(s, np.int64).reshape(-1, bpr * AB)[:, :length]
    if op == contract.ROW_MAX:
        r = rows.max(axis=1)
    elif op == contract.ROW_SUMSQ:
        r = (rows * rows).sum(axis=1)
    else:
        r = rows.sum(axis=1)
    y = q.requantize(r, m0, shift)
    return np.repeat(y, bpr * AB).reshape(-1, AB)


def _rowred(m: Model, n, bpr, length, op, m0, shift, dst, s):
    s = np.asarray(s, np.int64).reshape(n, AB)
    m.wc.append([dst, n, 1])
    m.wd.extend(_to_int(r) for r in rowred_ref(s, bpr, length, op, m0, shift))
    m.steps.append({"op": "vec", "n": n, "x_off": bpr, "dst": dst, "ma": int(m0),
                    "mb": int(length | op << 16), "shift": int(shift), "max": 0, "relu": 0,
                    "to_x": 0, "rowred": 1, "s": [_to_int(r) for r in s]})


@pytest.mark.slow
def test_rowred_random_backpressure(block_sim, tmp_path):
    sim = _sim(block_sim)
    rng = np.random.default_rng(15)
    m = Model(AB)
    # softmax's row max: rows of 1 beat (5 of 8 lanes), then 3 beats with a padding beat
    _rowred(m, 6, 1, 5, contract.ROW_MAX, IDENT, 0, 0x1000, _i8(rng, 6, AB))
    s = _i8(rng, 6, AB)
    s[0:3] = -128                                        # a row of minima: -128, not padding
    _rowred(m, 6, 3, 13, contract.ROW_MAX, IDENT, 0, 0x2000, s)
    # row sums (softmax's, LayerNorm's mean) with a real requantization, and squares
    m0, sh = q.quantize_multiplier(1 / 37.0)
    _rowred(m, 8, 2, 16, contract.ROW_SUM, m0, sh, 0x3000, _i8(rng, 8, AB))
    _rowred(m, 4, 4, 27, contract.ROW_SUM, m0, sh, 0x4000, rng.integers(100, 128, (4, AB)))
    m0, sh = q.quantize_multiplier(1 / 3000.0)
    _rowred(m, 6, 3, 20, contract.ROW_SUMSQ, m0, sh, 0x5000, _i8(rng, 6, AB))
    _run(sim, tmp_path, m, p_s=0.6, p_x=1.0, p_wc=0.5, p_wd=0.4)


@pytest.mark.slow
def test_rowred_rate(block_sim, tmp_path):
    """No back-pressure: a command of 128 beats takes 96 cycles more than one of 32 (one beat
    per cycle in and out, rows of one beat and of 4; the rest is the unit's fill and drain,
    paid once per command)."""
    sim = _sim(block_sim)
    rng = np.random.default_rng(2)
    m = Model(AB)
    m0, sh = q.quantize_multiplier(1 / 64.0)
    for bpr, length, op in ((1, 8, contract.ROW_SUM), (4, 30, contract.ROW_MAX)):
        for n in (32, 128):
            _rowred(m, n, bpr, length, op, m0 if op == contract.ROW_SUM else IDENT,
                    sh if op == contract.ROW_SUM else 0, 0x1000 * n, _i8(rng, n, AB))
    res = _run(sim, tmp_path, m)
    took = [t1 - t0 for t0, t1 in res["vec"]]
    for short, long_ in ((took[0], took[1]), (took[2], took[3])):
        assert 96 <= long_ - short <= 98, took
