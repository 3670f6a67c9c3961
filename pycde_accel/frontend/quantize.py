"""Post-training int8 quantization: the scheme, its integer primitives, and calibration.

The scheme (symmetric everywhere, so there are no zero points)
--------------------------------------------------------------
* Activations: one scale per tensor, ``s = max|x| / 127`` over the calibration data (the example
  inputs plus 32 seeded batches from the examples' distribution, ``numpy.random.default_rng([seed,
  1])``, run through the float layer graph in float64); a tensor that is all zero gets ``s = 1``. The real value of an int8 code ``q`` is ``q * s``.
* Model inputs are quantized on the host: ``q = clip(rint(x / s), -128, 127)`` (``rint`` rounds
  half to even); outputs are dequantized as ``q * s``.
* Weights (Linear, Conv2d): one scale per output channel, ``s_w[c] = max|W[c]| / 127``,
  ``q_w = clip(rint(W / s_w[c]), -127, 127)`` (symmetric range, -128 never used).
  A channel whose weights are all zero takes the largest scale of the other channels.
* Bias: int32, ``q_b[c] = clip(rint(b[c] / (s_in * s_w[c])), -2^31, 2^31-1)``.
* Linear / Conv2d (Conv2d as im2col + matmul) / matmul of two activations: the accumulator
  ``acc = sum(q_x * q_w) (+ bias_q)`` is exact in int32 (the reference raises if a value leaves int32).
  It is requantized to int8 per output channel (per tensor for a matmul of two activations) with
  the real multiplier ``M = s_in * s_w[c] / s_out`` (``s_a * s_b / s_out``), written as the TFLite /
  gemmlowp pair ``(m0, shift)``: ``M ~= m0 * 2^-31 * 2^-shift``, ``m0`` in ``[2^30, 2^31)``
  (a Q0.31 number in [0.5, 1)) and ``shift`` in ``[0, 31]`` a right shift (see
  :func:`quantize_multiplier`). Calibration guarantees ``M < 1`` by raising ``s_out`` where needed
  (to at least ``max_c(s_in * s_w[c]) * (1 + 2^-20)``), so the hardware needs no left shift.
  :func:`requantize` is TFLite's ``MultiplyByQuantizedMultiplier`` for a non-positive exponent:
  ``RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(acc, m0), shift)``, then the clamp.
  Rounding: the high-mul rounds ties toward +infinity (gemmlowp's nudge), the divide-by-2^shift
  rounds ties away from zero; the docstrings below state both exactly.
* A ReLU that directly follows a Linear, Conv2d, matmul or residual add (and is that op's only
  consumer) is fused into it: the final clamp is ``[0, 127]`` instead of ``[-128, 127]``; the output
  scale is then calibrated on the ReLU's output. A ReLU elsewhere is ``max(q, 0)`` on int8 and
  keeps the scale.
* Residual add ``y = a + b``: ``y_q = sat8(RoundingDivideByPOT(a_q * ma + b_q * mb, shift))``
  (see :func:`residual_add`) with ``ma = round(s_a / s_y * 2^shift)``, ``mb`` likewise, ``|m| < 2^15``,
  ``shift`` the largest value in ``[0, 31]`` that keeps both below 2^15 (:func:`add_multipliers`);
  ``s_y >= max(s_a, s_b) / 2^14`` is enforced so that ``shift = 0`` always fits. ``|a_q * ma + b_q * mb|
  < 2^23``, so the sum fits any 24-bit or wider signed adder.
* MaxPool2d, flatten/reshape/view and transpose/permute move int8 values and keep the scale
  (max-pool padding, if any, is padding with -128).

LayerNorm, softmax and GELU (integer-only)
------------------------------------------
None of them has an integer formula of its own: each is a chain of the integer steps above,
every step with its own calibrated per-tensor scale, so the integer reference reproduces it bit
for bit by running those steps (``ops/layer_norm.py``, ``ops/softmax.py``, ``ops/lut.py``).
The steps and their error bounds, for a step of output scale ``s_y`` (inside the int8 range,
i.e. for inputs like the calibration data; values beyond it saturate at -128 / 127):

* **table** (``lut``: ``exp``, ``rsqrt``, ``reciprocal``, GELU in both forms, erf, tanh, ...):
  ``y_q = clip(rint(f(x_q * s_x) / s_y))`` for each of the 256 codes, so
  ``|y_q * s_y - f(x_q * s_x)| <= s_y / 2``: exact up to the output's own rounding. GELU
  (``approximate='none'``: ``x * (1 + erf(x / sqrt(2))) / 2``; ``'tanh'``: the tanh form) is a
  table, and so is any erf or exp.
* **row reduction** (``rowmix``: ``center`` ``a * (x - mean(x))``, ``sum``, ``mean`` over the
  last dim, broadcast back over it): the accumulator ``q_x @ M`` is an exact integer (``M =
  L*I - J`` or ``J``, int8 weight codes), then one :func:`requantize` with ``M_r = s_x * a / (L
  s_y)`` (center, mean) or ``s_x * a / s_y`` (sum): ``|y_q * s_y - exact| <= 3/4 * s_y +
  2^-24 * s_y`` (the high-mul rounds by at most half a unit of the Q0.31 product, the divide
  by ``2^shift`` by at most half a step, ``m0`` is within ``2^-31`` relative of ``M_r``), so
  within one output step.
* **product** (``mul`` of two activations): the exact int16 product requantized: within one
  output step of ``x_q * s_x * z_q * s_z`` likewise.

LayerNorm ``(x - mean) / sqrt(var + eps) * gamma + beta`` is ``d = center(x)``, ``d2 = d * d``,
``v = mean(d2)``, ``r = rsqrt(v + eps)`` (table), ``n = d * r``, then the per-element affine
map (a diagonal ``linear``). Softmax is ``m = max(x)`` (``ceil(log2 L)`` exact steps of a row
rotation and an element-wise max), ``t = x - m``, ``e = exp(a * t)`` (table; ``e = 1`` at the
maximum, so ``e`` uses the whole int8 range), ``s = sum(e)``, ``r = 1 / s`` (table), ``y = e *
r``; ``r`` and ``y`` are at most 1, and their scales cover 1 whatever the calibration saw. Each
step's bound above holds against the exact step applied to its (dequantized) integer input;
through the chain the errors add, weighted by the derivatives of the later steps.
``tests/ops/test_layer_norm.py`` and ``tests/ops/test_softmax.py`` check every step's bound and
the bit-exactness of the chain against slow pure-Python definitions (hypothesis properties),
and end-to-end figures against float PyTorch (softmax rows of 8 scores: max abs error below
0.05 of a probability, 0.01-0.03 typically). Accuracy limits: the variance and the row sum are
int8 codes of a per-tensor scale, so a row whose variance (sum of exps) is far below the
calibrated maximum gets a coarse ``1/sqrt`` (``1/s``), and one far above it saturates.

Every function here that the hardware implements is a pure function on numpy integer arrays
(or Python ints), computed in int64 internally, returning int64 arrays; scalars broadcast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

INT8_MIN, INT8_MAX = -128, 127
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
#: residual-add multipliers satisfy |m| < ADD_MULT_LIMIT
ADD_MULT_LIMIT = 1 << 15
MAX_SHIFT = 31


# ------------------------------------------------------------------------------------------
# Integer primitives (the arithmetic the hardware kernels implement bit for bit)
# ------------------------------------------------------------------------------------------

def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def _check_range(name: str, x: np.ndarray, lo: int, hi: int) -> None:
    if x.size and (x.min() < lo or x.max() > hi):
        raise ValueError(f"{name} outside [{lo}, {hi}]: [{x.min()}, {x.max()}]")


def saturating_rounding_doubling_high_mul(a, b) -> np.ndarray:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` on int32 values ``a`` and ``b``.

    Exactly::

        if a == b == -2^31: return 2^31 - 1                  # the only overflow
        p = a * b                                            # exact, 64-bit
        nudge = 2^30 if p >= 0 else 1 - 2^30
        return trunc((p + nudge) / 2^31)                     # division truncating toward zero

    i.e. the high 32 bits of ``2 * a * b`` rounded to nearest with ties toward +infinity:
    ``floor(a * b / 2^31 + 1/2)`` (so -0.5 -> 0, -1.5 -> -1, 0.5 -> 1), saturated. ``a`` and
    ``b`` must lie in int32 (ValueError otherwise); the result lies in int32.
    """
    a, b = _i64(a), _i64(b)
    _check_range("srdhm a", a, INT32_MIN, INT32_MAX)
    _check_range("srdhm b", b, INT32_MIN, INT32_MAX)
    p = a * b
    t = p + np.where(p >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    q = np.where(t >= 0, t >> 31, -((-t) >> 31))
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, np.int64(INT32_MAX), q)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """gemmlowp ``RoundingDivideByPOT``: ``x / 2^exponent`` rounded to nearest, ties away from 0.

    Exactly::

        mask = 2^exponent - 1
        remainder = x & mask                                  # two's complement, = x mod 2^exponent
        threshold = (mask >> 1) + (1 if x < 0 else 0)
        return (x >> exponent) + (1 if remainder > threshold else 0)   # >> is arithmetic (floor)

    ``exponent`` in ``[0, 62]``; ``x`` any int64 (int32 in the hardware).
    """
    x, e = _i64(x), _i64(exponent)
    _check_range("rounding_divide_by_pot exponent", e, 0, 62)
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0).astype(np.int64)
    return (x >> e) + (remainder > threshold).astype(np.int64)


def requantize(acc, m0, shift, relu: bool = False) -> np.ndarray:
    """int32 accumulator -> int8 code: TFLite ``MultiplyByQuantizedMultiplier`` plus the clamp.

    Exactly::

        y = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(acc, m0), shift)
        return clip(y, 0, 127) if relu else clip(y, -128, 127)

    ``acc`` int32 values; ``m0`` int32 in ``[0, 2^31)`` (normally ``[2^30, 2^31)``, see
    :func:`quantize_multiplier`); ``shift`` in ``[0, 31]``, a right shift. ``m0`` and ``shift``
    broadcast against ``acc`` (per output channel: pass arrays shaped like the last axis).
    The value approximates ``acc * m0 * 2^-(31 + shift)``. Returns int64 values in the int8 range.
    """
    m0, shift = _i64(m0), _i64(shift)
    _check_range("m0", m0, 0, INT32_MAX)
    _check_range("shift", shift, 0, MAX_SHIFT)
    y = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(acc, m0), shift)
    return np.clip(y, 0 if relu else INT8_MIN, INT8_MAX)


def residual_add(a, b, ma, mb, shift, relu: bool = False) -> np.ndarray:
    """Add two int8 tensors of different scales into a third scale.

    Exactly::

        t = a * ma + b * mb                                  # |t| < 2^23
        y = rounding_divide_by_pot(t, shift)
        return clip(y, 0, 127) if relu else clip(y, -128, 127)

    ``a``, ``b`` int8 values; ``ma``, ``mb`` signed integers with ``|m| < 2^15``; ``shift`` in
    ``[0, 31]``. Returns int64 values in the int8 range.
    """
    a, b, ma, mb, shift = _i64(a), _i64(b), _i64(ma), _i64(mb), _i64(shift)
    _check_range("add input a", a, INT8_MIN, INT8_MAX)
    _check_range("add input b", b, INT8_MIN, INT8_MAX)
    _check_range("ma", ma, -ADD_MULT_LIMIT + 1, ADD_MULT_LIMIT - 1)
    _check_range("mb", mb, -ADD_MULT_LIMIT + 1, ADD_MULT_LIMIT - 1)
    _check_range("shift", shift, 0, MAX_SHIFT)
    y = rounding_divide_by_pot(a * ma + b * mb, shift)
    return np.clip(y, 0 if relu else INT8_MIN, INT8_MAX)


def relu_int8(x) -> np.ndarray:
    """A standalone ReLU on int8 codes: ``max(x, 0)`` (scale unchanged)."""
    return np.maximum(_i64(x), 0)


def quantize_tensor(x, scale: float) -> np.ndarray:
    """Host-side float -> int8: ``clip(rint(x / scale), -128, 127)`` (rint: ties to even)."""
    return np.clip(np.rint(np.asarray(x, dtype=np.float64) / scale), INT8_MIN, INT8_MAX).astype(np.int64)


# ------------------------------------------------------------------------------------------
# Real multipliers -> integer parameters
# ------------------------------------------------------------------------------------------

def quantize_multiplier(m: float) -> tuple[int, int]:
    """Real multiplier ``0 <= m < 1`` -> ``(m0, shift)`` with ``m ~= m0 * 2^-(31 + shift)``.

    TFLite's ``QuantizeMultiplier``: ``m = q * 2^e`` with ``q`` in [0.5, 1) (frexp),
    ``m0 = round_half_away(q * 2^31)`` (if that is 2^31: ``m0 = 2^30, e += 1``), ``shift = -e``.
    If ``shift`` would exceed 31, ``m0`` is divided down (rounding half away) to ``shift = 31``;
    if ``m`` is so close to 1 that ``shift`` would be -1, ``(m0, shift) = (2^31 - 1, 0)``.
    ``m == 0`` gives ``(0, 0)``. ValueError for ``m`` outside [0, 1).
    """
    if not (0.0 <= m < 1.0) or math.isnan(m):
        raise ValueError(f"requantization multiplier {m!r} outside [0, 1)")
    if m == 0.0:
        return 0, 0
    q, e = math.frexp(m)
    m0 = int(math.floor(q * (1 << 31) + 0.5))
    if m0 == 1 << 31:
        m0 //= 2
        e += 1
    shift = -e
    if shift < 0:   # m rounded up to 1.0: take the largest Q0.31 value instead of a left shift
        return INT32_MAX, 0
    if shift > MAX_SHIFT:
        e = shift - MAX_SHIFT      # m0 < 2^31, so e >= 32 leaves 0
        m0 = 0 if e >= 32 else (m0 + (1 << (e - 1))) >> e
        shift = MAX_SHIFT
    return m0, shift


def add_multipliers(ra: float, rb: float) -> tuple[int, int, int]:
    """Real ratios ``s_a/s_y``, ``s_b/s_y`` -> ``(ma, mb, shift)`` for :func:`residual_add`.

    ``shift`` is the largest value in [0, 31] with ``round_half_away(|r| * 2^shift) < 2^15`` for
    both ratios; ``m = round_half_away(r * 2^shift)``. ValueError if even shift 0 does not fit.
    """
    def rnd(v: float) -> int:
        return int(math.copysign(math.floor(abs(v) + 0.5), v))
    for shift in range(MAX_SHIFT, -1, -1):
        ma, mb = rnd(ra * 2.0 ** shift), rnd(rb * 2.0 ** shift)
        if abs(ma) < ADD_MULT_LIMIT and abs(mb) < ADD_MULT_LIMIT:
            return ma, mb, shift
    raise ValueError(f"residual add ratios {ra!r}, {rb!r} too large for {ADD_MULT_LIMIT}")


def act_scale(max_abs: float) -> float:
    """Per-tensor activation scale from a calibrated ``max|x|``."""
    return float(max_abs) / 127.0 if max_abs > 0 else 1.0


def weight_scales(w: np.ndarray) -> np.ndarray:
    """Per-output-channel (axis 0) weight scales ``max|W[c]| / 127``; zero channels borrow the max."""
    w = np.asarray(w, dtype=np.float64)
    mx = np.abs(w.reshape(w.shape[0], -1)).max(axis=1) / 127.0
    fallback = mx.max() if mx.max() > 0 else 1.0
    return np.where(mx > 0, mx, fallback)


def quantize_weights(w: np.ndarray, scales: np.ndarray) -> np.ndarray:
    shape = (-1,) + (1,) * (w.ndim - 1)
    return np.clip(np.rint(np.asarray(w, np.float64) / scales.reshape(shape)), -127, 127).astype(np.int64)


def quantize_bias(b: np.ndarray, s_in: float, w_scales: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(np.asarray(b, np.float64) / (s_in * w_scales)), INT32_MIN, INT32_MAX).astype(np.int64)


# ------------------------------------------------------------------------------------------
# Calibration: float layer graph + data -> quantized model
# ------------------------------------------------------------------------------------------

@dataclass
class LayerQuant:
    """Integer parameters of one node (fields unused by a node kind stay None).

    linear/conv2d: ``weight`` int8 codes (torch layout), ``bias`` int32 (or None), ``m0``/``shift``
    per output channel. matmul: scalar ``m0``/``shift``. add: ``ma``, ``mb``, ``shift``.
    """
    weight: np.ndarray | None = None
    bias: np.ndarray | None = None
    weight_scales: np.ndarray | None = None
    m0: np.ndarray | int | None = None
    shift: np.ndarray | int | None = None
    ma: int | None = None
    mb: int | None = None


@dataclass
class QuantizedModel:
    """A (ReLU-fused) layer graph with one activation scale per tensor and per-node integers."""
    graph: "object"
    scales: dict[str, float]
    layers: dict[str, LayerQuant] = field(default_factory=dict)


def calibrate(graph, calibration_inputs: list[list[np.ndarray]]) -> dict[str, float]:
    """max|x| of every tensor of ``graph`` over the calibration batches (float64 evaluation),
    and of the tensors a node computes inside itself (``node:key``, :func:`.floateval.run_float`)."""
    from .floateval import run_float
    maxabs: dict[str, float] = {}
    for inputs in calibration_inputs:
        internal: dict[str, np.ndarray] = {}
        values = run_float(graph, inputs, internal)
        for name, v in list(values.items()) + list(internal.items()):
            maxabs[name] = max(maxabs.get(name, 0.0), float(np.abs(v).max()) if v.size else 0.0)
    return maxabs


def quantize_graph(graph, calibration_inputs: list[list[np.ndarray]]) -> QuantizedModel:
    """Calibrate ``graph`` (already ReLU-fused) and derive every integer parameter (each node's
    ``quantize`` hook: :mod:`pycde_accel.ops`)."""
    maxabs = calibrate(graph, calibration_inputs)
    scales: dict[str, float] = {}
    layers: dict[str, LayerQuant] = {}
    for node in graph.nodes:
        scales[node.name], lq = node.quantize(scales, maxabs)
        if lq is not None:
            layers[node.name] = lq
    return QuantizedModel(graph=graph, scales=scales, layers=layers)
