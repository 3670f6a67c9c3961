"""pycde-accel-ecp5-dsp-mul (the ``static-ecp5`` route): every kernel multiply of the static
route as one MULT18X18D with its own input and output registers; the same latency and, in
Verilator with the block's simulation model, the same results under random stalls."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pycde_accel.assemble import kernel_for_route, lowering_route
from pycde_accel.fpga.fit import KERNEL_DSP_BY_KERNEL as DSP
from pycde_accel.lowering import bridge, build_kernel
from pycde_accel.rtl_lib.ecp5 import SIM_MODEL

from kernel_sim import simulate_static  # next to this file (pyproject: pythonpath)
from test_kernels import _case  # the kernels' integer references

_LAT = re.compile(r"pycde_accel\.latency = (\d+)")


@pytest.fixture(scope="module")
def circt_ctx():
    return bridge.context("circt")


def test_the_accelerators_route_on_ecp5_only():
    assert lowering_route("static", "ecp5-85f") == "static-ecp5-stream"
    assert lowering_route("static", "ice40-up5k") == "static-stream"
    assert lowering_route("dynamic", "ecp5-85f") == "dynamic"


@pytest.mark.parametrize("name,muls", [("requantize_pc", DSP["requantize"]),
                                       ("mul_requantize", DSP["mul_requantize"]),
                                       ("residual_add", DSP["residual_add"]), ("row_lanes", 8)])
def test_every_multiply_is_a_registered_dsp(name, muls, tmp_path):
    """One block per multiply, as many as the fit (fpga.fit.KERNEL_DSP_BY_KERNEL) counts."""
    k = kernel_for_route(_case(name, np.random.default_rng(0))[0], "static")
    plain = build_kernel(k, tmp_path / "plain", route="static")
    dsp = build_kernel(k, tmp_path / "dsp", route="static-ecp5")
    before, after = plain.hw.read_text(), dsp.hw.read_text()
    assert before.count("comb.mul") == muls
    assert "comb.mul" not in after
    assert after.count("hw.instance") == muls
    ext = re.search(r"hw\.module\.extern @(\w+)<.*verilogName = \"MULT18X18D\"", after)
    assert ext and ext.group(1) == f"{k.name}_MULT18X18D"
    # the kernel's latency is unchanged: the block's registers are the stage registers
    assert _LAT.search(after).group(1) == _LAT.search(before).group(1)
    # fewer fabric registers: the operand and product registers moved into the blocks
    assert after.count("seq.compreg") < before.count("seq.compreg")
    sv = dsp.sv.read_text()
    assert sv.count("MULT18X18D #(") == muls
    for p in ('.REG_INPUTA_CLK("CLK0")', '.REG_OUTPUT_CLK("CLK0")', '.REG_OUTPUT_CE("CE1")'):
        assert sv.count(p) == muls, p


_HW = """
hw.module @k(in %clock : !seq.clock, in %x : i32, in %y : i32, in %e : i1, in %f : i1,
             out o : i32, out q : i32) {{
  %c0 = hw.constant 0 : i16
  %lx = comb.extract %x from 0 : (i32) -> i16
  %zx = comb.concat %c0, %lx : i16, i16
  %a = seq.compreg.ce %{a}, %clock, %e : i32
  %b = seq.compreg.ce %y, %clock, %e : i32
  %p = comb.mul %a, %b : i32
  %r = seq.compreg.ce %p, %clock, %f : i32
  %s = comb.add %p, %a : i32
  hw.output %r, %{out} : i32, i32
}}
"""


def _run(circt_ctx, text):
    from pycde_accel.lowering.passes import REGISTRY
    ir, _, _ = bridge.bindings("circt")
    m = ir.Module.parse(text, circt_ctx)
    REGISTRY["pycde-accel-ecp5-dsp-mul"].run(m, "pycde-accel-ecp5-dsp-mul")
    assert m.operation.verify()
    return str(m)


def test_what_the_block_cannot_hold_stays_a_multiply(circt_ctx):
    # %b holds a full 32-bit value: more than the block's 18-bit signed operand
    out = _run(circt_ctx, _HW.format(a="zx", out="r"))
    assert "comb.mul" in out and "hw.instance" not in out and "hw.module.extern" not in out
    # both operands fit (y is 32 bits: replaced by a zero-extended 16-bit value), but the
    # product also feeds logic in its own stage: no output register to move into the block
    narrow = _HW.replace("%b = seq.compreg.ce %y", "%b = seq.compreg.ce %zx")
    out = _run(circt_ctx, narrow.format(a="zx", out="s"))
    assert "comb.mul" in out and "hw.instance" not in out
    # product only registered: one block, CE0 the operands' enable, CE1 the product's
    out = _run(circt_ctx, narrow.format(a="zx", out="r").replace("%s = comb.add %p, %a : i32\n",
                                                                  ""))
    assert "comb.mul" not in out and out.count("hw.instance") == 1
    assert re.search(r"CE0: %e ?: i1, CE1: %f ?: i1", out), out


@pytest.mark.parametrize("name", ["requantize_pc", "mul_requantize",
                                  pytest.param("residual_add", marks=pytest.mark.slow),
                                  pytest.param("row_lanes", marks=pytest.mark.slow)])
def test_dsp_kernel_in_verilator(name, tmp_path):
    """Bit-exact against the integer reference with the block's model, random stalls on both
    sides (the two clock enables differ), then one result per cycle."""
    rng = np.random.default_rng(sum(map(ord, name)) + 5)
    k, ins, sc, ref = _case(name, rng)
    k = kernel_for_route(k, "static")
    lowered = build_kernel(k, tmp_path / "out", route="static-ecp5")
    assert "MULT18X18D" in lowered.sv.read_text()
    build = tmp_path / "build"
    got = simulate_static(k, lowered.sv, build, ins, sc, backpressure=0.35, seed=3, tag="bp",
                          sources=[SIM_MODEL])
    np.testing.assert_array_equal(got.out, ref)
    fast = simulate_static(k, lowered.sv, build, ins, sc, backpressure=0.0, tag="fast",
                           sources=[SIM_MODEL])
    np.testing.assert_array_equal(fast.out, ref)
    assert fast.elements_per_cycle == 1.0, fast.store_cycles
