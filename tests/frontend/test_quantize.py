"""The integer primitives against slow, obviously-correct Python-int versions (hypothesis)."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pycde_accel.frontend import quantize as q

I32 = st.integers(-(1 << 31), (1 << 31) - 1)
I8 = st.integers(-128, 127)
# database=None: hypothesis must not write .hypothesis/ into the repo or cwd
SETTINGS = settings(max_examples=300, deadline=None, database=None)


def slow_srdhm(a: int, b: int) -> int:
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    v = a * b + ((1 << 30) if a * b >= 0 else 1 - (1 << 30))
    mag = abs(v) // (1 << 31)                     # truncation toward zero
    return mag if v >= 0 else -mag


def slow_round_half_away(f: Fraction) -> int:
    mag = math.floor(abs(f) + Fraction(1, 2))
    return mag if f >= 0 else -mag


def slow_rdbpot(x: int, e: int) -> int:
    return slow_round_half_away(Fraction(x, 1 << e))


def slow_requantize(acc: int, m0: int, shift: int, relu: bool) -> int:
    y = slow_rdbpot(slow_srdhm(acc, m0), shift)
    return min(max(y, 0 if relu else -128), 127)


def slow_add(a, b, ma, mb, shift, relu):
    y = slow_rdbpot(a * ma + b * mb, shift)
    return min(max(y, 0 if relu else -128), 127)


@SETTINGS
@given(st.lists(st.tuples(I32, I32), min_size=1, max_size=20))
def test_srdhm_matches_python_ints(pairs):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    got = q.saturating_rounding_doubling_high_mul(a, b)
    assert got.tolist() == [slow_srdhm(x, y) for x, y in pairs]


def test_srdhm_edge_cases():
    m = -(1 << 31)
    assert q.saturating_rounding_doubling_high_mul(m, m) == (1 << 31) - 1
    # gemmlowp's nudge rounds ties toward +infinity (not away from zero)
    assert q.saturating_rounding_doubling_high_mul(1, 1 << 29) == 0      # 0.25 -> 0
    assert q.saturating_rounding_doubling_high_mul(1, 1 << 30) == 1      # 0.5 -> 1
    assert q.saturating_rounding_doubling_high_mul(-1, 1 << 30) == 0     # -0.5 -> 0
    assert q.saturating_rounding_doubling_high_mul(3, 1 << 30) == 2      # 1.5 -> 2
    assert q.saturating_rounding_doubling_high_mul(-3, 1 << 30) == -1    # -1.5 -> -1
    assert q.saturating_rounding_doubling_high_mul(-1, (1 << 30) + 1) == -1   # just past -0.5


@SETTINGS
@given(I32, I32)
def test_srdhm_is_round_half_up_of_the_exact_product(a, b):
    """An independent statement of the same rounding: floor(a*b/2^31 + 1/2), saturated."""
    want = min(math.floor(Fraction(a * b, 1 << 31) + Fraction(1, 2)), (1 << 31) - 1)
    assert q.saturating_rounding_doubling_high_mul(a, b) == want


@SETTINGS
@given(st.lists(I32, min_size=1, max_size=20), st.integers(0, 31))
def test_rounding_divide_by_pot_is_round_half_away(xs, e):
    got = q.rounding_divide_by_pot(np.array(xs), e)
    assert got.tolist() == [slow_rdbpot(x, e) for x in xs]


def test_rounding_divide_by_pot_ties():
    assert q.rounding_divide_by_pot(np.array([5, -5, 6, -6, 7, -7, 4, -4]), 1).tolist() == \
        [3, -3, 3, -3, 4, -4, 2, -2]
    assert q.rounding_divide_by_pot(np.array([-3, 3, -2, 2]), 2).tolist() == [-1, 1, -1, 1]


@SETTINGS
@given(st.lists(I32, min_size=1, max_size=16), st.integers(0, (1 << 31) - 1), st.integers(0, 31),
       st.booleans())
def test_requantize_matches_python_ints(accs, m0, shift, relu):
    got = q.requantize(np.array(accs), m0, shift, relu)
    assert got.tolist() == [slow_requantize(a, m0, shift, relu) for a in accs]


@SETTINGS
@given(st.lists(st.integers(-(1 << 20), 1 << 20), min_size=4, max_size=4),
       st.lists(st.integers(1 << 30, (1 << 31) - 1), min_size=4, max_size=4),
       st.lists(st.integers(0, 31), min_size=4, max_size=4), st.booleans())
def test_requantize_per_channel_broadcast(accs, m0s, shifts, relu):
    acc = np.array([accs, [-a for a in accs]])                 # 2 rows x 4 channels
    got = q.requantize(acc, np.array(m0s), np.array(shifts), relu)
    for r in range(2):
        for c in range(4):
            assert got[r, c] == slow_requantize(int(acc[r, c]), m0s[c], shifts[c], relu)


@SETTINGS
@given(st.integers(-(1 << 24), 1 << 24), st.floats(1e-6, 0.999999))
def test_requantize_approximates_the_real_multiplier(acc, m):
    m0, shift = q.quantize_multiplier(m)
    exact = Fraction(acc) * Fraction(m)
    y = int(q.rounding_divide_by_pot(q.saturating_rounding_doubling_high_mul(acc, m0), shift))
    # two roundings (<= 1/2 each) plus the multiplier's relative error 2^-31
    assert abs(y - exact) <= 1 + abs(exact) * Fraction(1, 1 << 30)


@SETTINGS
@given(st.one_of(st.floats(0.0, 1.0, exclude_max=True), st.just(0.9999999999999998),
                 st.just(2.0 ** -40), st.just(0.5)))
def test_quantize_multiplier(m):
    m0, shift = q.quantize_multiplier(m)
    assert 0 <= m0 < (1 << 31) and 0 <= shift <= 31
    if m == 0:
        assert (m0, shift) == (0, 0)
        return
    if shift < 31:
        assert (1 << 30) <= m0
    approx = Fraction(m0, 1 << (31 + shift))
    assert abs(approx - Fraction(m)) <= Fraction(1, 1 << (31 + shift))


@pytest.mark.parametrize("bad", [1.0, 1.5, -0.1, float("nan")])
def test_quantize_multiplier_refuses_out_of_range(bad):
    with pytest.raises(ValueError):
        q.quantize_multiplier(bad)


@SETTINGS
@given(st.lists(st.tuples(I8, I8), min_size=1, max_size=16),
       st.integers(-(1 << 15) + 1, (1 << 15) - 1), st.integers(-(1 << 15) + 1, (1 << 15) - 1),
       st.integers(0, 31), st.booleans())
def test_residual_add_matches_python_ints(pairs, ma, mb, shift, relu):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    got = q.residual_add(a, b, ma, mb, shift, relu)
    assert got.tolist() == [slow_add(x, y, ma, mb, shift, relu) for x, y in pairs]


@SETTINGS
@given(st.floats(1e-4, 16384.0), st.floats(1e-4, 16384.0))
def test_add_multipliers(ra, rb):
    ma, mb, shift = q.add_multipliers(ra, rb)
    assert abs(ma) < 1 << 15 and abs(mb) < 1 << 15 and 0 <= shift <= 31
    for r, m in ((ra, ma), (rb, mb)):
        assert abs(m / 2 ** shift - r) <= 0.5 / 2 ** shift
    # shift is the largest that fits: one more would overflow (or shift is at its cap)
    if shift < 31:
        assert max(round(ra * 2 ** (shift + 1)), round(rb * 2 ** (shift + 1))) >= (1 << 15) - 1


def test_primitives_refuse_out_of_range_operands():
    with pytest.raises(ValueError):
        q.requantize(np.array([1 << 31]), 1 << 30, 0)
    with pytest.raises(ValueError):
        q.requantize(np.array([1]), 1 << 30, 32)
    with pytest.raises(ValueError):
        q.residual_add(np.array([128]), np.array([0]), 1, 1, 0)
    with pytest.raises(ValueError):
        q.residual_add(np.array([1]), np.array([0]), 1 << 15, 1, 0)


def test_quantize_tensor_rounds_half_to_even_and_saturates():
    assert q.quantize_tensor([0.5, 1.5, 2.5, -0.5, 1000.0, -1000.0], 1.0).tolist() == \
        [0, 2, 2, 0, 127, -128]


def test_weight_scales_per_channel_and_zero_channels():
    w = np.array([[1.0, -2.0], [0.0, 0.0], [0.5, 0.25]])
    s = q.weight_scales(w)
    assert s.tolist() == [2 / 127, 2 / 127, 0.5 / 127]
    assert q.quantize_weights(w, s).tolist() == [[64, -127], [0, 0], [127, 64]]
