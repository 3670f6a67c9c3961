"""Each post-op kernel, lowered through the default (dynamic) route, in Verilator against the
integer semantics (pycde_accel.frontend.quantize), with random back-pressure and a memory that
answers after 3 cycles; and its steady-state rate without back-pressure (>= 1 element/cycle)."""

from __future__ import annotations

import numpy as np
import pytest

from pycde_accel.frontend import quantize as q
from pycde_accel.lowering import build_kernel, kernels

from kernel_sim import simulate, simulate_static  # next to this file (pyproject: pythonpath)

N = 32
I32 = (-(1 << 31), (1 << 31) - 1)


def _case(name, rng):
    """(kernel, inputs, scalars, reference output) with extremes mixed into random data."""
    if name == "requantize_pc":
        k = kernels.requantize(N, relu=True, per_channel=True)
        x = rng.integers(I32[0], I32[1], N, endpoint=True)
        ch = np.arange(N) % 4  # 4 channels, parameters streamed per element
        m0c, shc = rng.integers(1 << 30, 1 << 31, 4), rng.integers(0, 31, 4)
        m0, shift = m0c[ch], shc[ch]
        return k, {"x": x, "m0": m0, "shift": shift}, {}, q.requantize(x, m0, shift, relu=True)
    if name.startswith("requantize"):
        relu = name.endswith("relu")
        k = kernels.requantize(N, relu=relu)
        x = rng.integers(I32[0], I32[1], N, endpoint=True)
        x[:6] = [I32[0], I32[1], 0, -1, 1, -(1 << 20)]
        m0, shift = int(rng.integers(1 << 30, 1 << 31)), int(rng.integers(0, 12))
        return k, {"x": x}, {"m0": m0, "shift": shift}, q.requantize(x, m0, shift, relu=relu)
    if name == "residual_add":
        k = kernels.residual_add(N)
        a, b = rng.integers(-128, 128, N), rng.integers(-128, 128, N)
        a[:2], b[:2] = [-128, 127], [-128, 127]
        ma, mb = (int(v) for v in rng.integers(-(1 << 15) + 1, 1 << 15, 2))
        s = int(rng.integers(0, 20))
        return k, {"a": a, "b": b}, {"ma": ma, "mb": mb, "s": s}, q.residual_add(a, b, ma, mb, s)
    if name == "mul_requantize":
        k = kernels.mul_requantize(N)
        a, b = rng.integers(-128, 128, N), rng.integers(-128, 128, N)
        a[:4], b[:4] = [-128, 127, -128, 0], [-128, -128, 127, 5]
        m0, s = int(rng.integers(1 << 30, 1 << 31)), int(rng.integers(0, 12))
        p = q.saturating_rounding_doubling_high_mul(a.astype(np.int64) * b, m0)
        return k, {"a": a, "b": b}, {"m0": m0, "s": s}, \
            np.clip(q.rounding_divide_by_pot(p, s), -128, 127)
    if name == "maxpool":
        k = kernels.maxpool(N, k=4)
        taps = {f"t{i}": rng.integers(-128, 128, N) for i in range(4)}
        return k, taps, {}, np.max(np.stack(list(taps.values())), axis=0)
    if name == "clamp":
        k = kernels.clamp(N, lo=-20, hi=90)
        x = rng.integers(-128, 128, N)
        return k, {"x": x}, {}, np.clip(x, -20, 90)
    if name == "lut":  # a random table with runs of equal codes (the kernel skips those links)
        table = np.repeat(rng.integers(-128, 128, 128), 2)
        table[:3] = [-128, 127, 127]
        k = kernels.lut(N, table=table)
        x = rng.integers(-128, 128, N)
        x[:4] = [-128, 127, -127, 0]
        return k, {"x": x}, {}, table[x + 128]
    if name == "row_lanes":
        k = kernels.row_lanes(N)
        ab = k.params["ab"]
        xs = rng.integers(-128, 128, (N, ab))
        xs[::5] = -128
        cnt, op = rng.integers(0, ab + 1, N), rng.integers(0, 3, N)
        cnt[:3] = (ab, 0, 1)
        ins = {f"x{i}": xs[:, i] for i in range(ab)}
        ins.update(cnt=cnt, op=op)
        return k, ins, {}, np.array([kernels.row_lanes_ref(xs[i], cnt[i], op[i]) for i in range(N)])
    raise AssertionError(name)


@pytest.mark.parametrize("name", [  # requantize_pc covers requantize's datapath; the rest are slow
    pytest.param("requantize", marks=pytest.mark.slow),
    pytest.param("requantize_relu", marks=pytest.mark.slow), "requantize_pc", "residual_add",
    "maxpool", pytest.param("clamp", marks=pytest.mark.slow)])
def test_kernel_in_verilator(name, tmp_path):
    rng = np.random.default_rng(sum(map(ord, name)))
    k, ins, sc, ref = _case(name, rng)
    lowered = build_kernel(k, tmp_path / "out")
    build = tmp_path / "build"
    # random back-pressure on every memory port, memory latency 3
    got = simulate(k, lowered.sv, build, ins, sc, latency=3, backpressure=0.35, seed=1, tag="bp")
    np.testing.assert_array_equal(got.out, ref)
    # no back-pressure, latency 2: one element per cycle in steady state
    fast = simulate(k, lowered.sv, build, ins, sc, latency=2, backpressure=0.0, tag="fast")
    np.testing.assert_array_equal(fast.out, ref)
    assert fast.elements_per_cycle >= 1.0, fast.store_cycles


def test_two_kernels_import_into_one_pycde_system(tmp_path):
    from pycde import System

    from pycde_accel.lowering import import_kernel
    a = build_kernel(kernels.clamp(8), tmp_path / "a")
    b = build_kernel(kernels.maxpool(8, k=2), tmp_path / "b")
    system = System([], name="kernels", output_directory=str(tmp_path / "sys"))
    ca = import_kernel(system, a, "clamp")
    cb = import_kernel(system, b, "maxpool")
    ports = {p.name for p in ca._builder.inputs} | {p.name for p in ca._builder.outputs}
    assert {"in0_ld0.data", "in0_ld0.addr", "in1_st0.address", "in1_st0.data", "in1_st0_ready",
            "in2_valid", "out0_valid", "clock", "reset"} <= ports
    assert cb.__name__ == "maxpool"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["residual_add", "maxpool"])
def test_stock_route_is_correct_too(name, tmp_path):
    """The baseline the bench compares with computes the same results (only slower)."""
    rng = np.random.default_rng(7)
    k, ins, sc, ref = _case(name, rng)
    lowered = build_kernel(k, tmp_path / "out", route="dynamic-stock")
    got = simulate(k, lowered.sv, tmp_path / "build", ins, sc, latency=3, backpressure=0.35)
    np.testing.assert_array_equal(got.out, ref)


def _static_check(name, tmp_path):
    rng = np.random.default_rng(sum(map(ord, name)) + 1)
    k, ins, sc, ref = _case(name, rng)
    lowered = build_kernel(k, tmp_path / "out", route="static")
    assert "pipeline.scheduled" in (tmp_path / "out/ir/03_pipeline.mlir").read_text()
    build = tmp_path / "build"
    got = simulate_static(k, lowered.sv, build, ins, sc, backpressure=0.35, seed=3, tag="bp")
    np.testing.assert_array_equal(got.out, ref)
    fast = simulate_static(k, lowered.sv, build, ins, sc, backpressure=0.0, tag="fast")
    np.testing.assert_array_equal(fast.out, ref)
    assert fast.elements_per_cycle == 1.0, fast.store_cycles  # II = 1


def test_static_route_kernel_in_verilator(tmp_path):
    """The static route (scf -> pipeline.scheduled -> hw): requantize (scalars held, the
    deepest pipeline) against the integer reference, random stalls on both sides, then II=1."""
    _static_check("requantize_relu", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["requantize_pc", "residual_add", "maxpool", "clamp"])
def test_static_route_other_kernels_in_verilator(name, tmp_path):
    _static_check(name, tmp_path)
