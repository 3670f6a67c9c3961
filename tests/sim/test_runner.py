"""The Verilator/cocotb runner wrapper and the stream drivers, on a tiny 2-entry FIFO."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pycde_accel.sim import SimFailure, build, pytest_cache_root, run

HERE = Path(__file__).parent

FIFO2_SV = """\
module fifo2(
  input clk, input rst,
  input [7:0] in_data, input in_valid, output in_ready,
  output [7:0] out_data, output out_valid, input out_ready);
  reg [7:0] mem [0:1];
  reg rd, wr;
  reg [1:0] count;
  wire push = in_valid & in_ready;
  wire pop = out_valid & out_ready;
  assign in_ready = count != 2'd2;
  assign out_valid = count != 2'd0;
  assign out_data = mem[rd];
  always_ff @(posedge clk) begin
    if (rst) begin rd <= 1'b0; wr <= 1'b0; count <= 2'd0; end
    else begin
      if (push) begin mem[wr] <= in_data; wr <= ~wr; end
      if (pop) rd <= ~rd;
      count <= count + {1'b0, push} - {1'b0, pop};
    end
  end
endmodule
"""


@pytest.fixture(scope="module")
def fifo_build(tmp_path_factory):
    src = tmp_path_factory.mktemp("fifo2_sv")
    (src / "fifo2.sv").write_text(FIFO2_SV)
    (src / "filelist.f").write_text("fifo2.sv\n")
    return build(src / "filelist.f", "fifo2", cache_root=pytest_cache_root(tmp_path_factory))


@pytest.mark.parametrize("p_in,p_out", [(1.0, 1.0), (0.5, 0.5), (1.0, 0.2), (0.2, 1.0)])
def test_stream_driver_and_sink(fifo_build, tmp_path, p_in, p_out):
    out = tmp_path / "out.json"
    run(fifo_build, "stream_selftest", tmp_path, testcase="passes_all_beats",
        module_dirs=[HERE], plusargs=["+beats=200"],
        extra_env={"SELFTEST_P_IN": str(p_in), "SELFTEST_P_OUT": str(p_out),
                   "SELFTEST_OUT": str(out)})
    res = json.loads(out.read_text())
    assert res["n"] == 200
    if p_in == p_out == 1.0:  # full rate: one beat per cycle, one cycle through the FIFO
        assert res["last_out"] - res["first_in"] == 200


def test_build_cache_is_reused(fifo_build, tmp_path_factory):
    src = tmp_path_factory.mktemp("fifo2_copy")  # same SV, another folder: same build
    (src / "fifo2.sv").write_text(FIFO2_SV)
    (src / "filelist.f").write_text("fifo2.sv\n")
    t = time.monotonic()
    again = build(src / "filelist.f", "fifo2", cache_root=pytest_cache_root(tmp_path_factory))
    assert again.build_dir == fifo_build.build_dir
    assert time.monotonic() - t < 5


def test_a_second_design_reuses_the_verilator_runtime(tmp_path):
    """Two designs in one cache: the second build takes the first's ``verilated*.o`` (make
    compiles only the design and cocotb's main) and still simulates correctly."""
    root = tmp_path / "cache"
    builds = []
    spare = FIFO2_SV.replace("input out_ready);", "input out_ready, output [5:0] spare);\n"
                             "  assign spare = 6'd0;")
    for i, sv in enumerate((FIFO2_SV, spare)):     # two designs (their Vtop.h differ)
        src = tmp_path / f"sv{i}"
        src.mkdir()
        (src / "fifo2.sv").write_text(sv)
        (src / "filelist.f").write_text("fifo2.sv\n")
        builds.append(build(src / "filelist.f", "fifo2", cache_root=root))
    first, second = ((b.build_dir / "build.log").read_text() for b in builds)
    assert "verilated.cpp" in first and "verilated_vpi.cpp" in first
    assert "verilated.cpp" not in second and "verilated_vpi.cpp" not in second
    assert "verilator.cpp" in second        # cocotb's main includes the design's header
    assert {p.name for p in builds[1].build_dir.glob("verilated*.o")} == \
        {p.name for p in builds[0].build_dir.glob("verilated*.o")}
    out = tmp_path / "out.json"
    run(builds[1], "stream_selftest", tmp_path / "run", testcase="passes_all_beats",
        module_dirs=[HERE], plusargs=["+beats=50"],
        extra_env={"SELFTEST_P_IN": "0.5", "SELFTEST_P_OUT": "0.5", "SELFTEST_OUT": str(out)})
    assert json.loads(out.read_text())["n"] == 50


def test_failing_cocotb_test_raises(fifo_build, tmp_path):
    with pytest.raises(SimFailure, match="deliberate failure"):
        run(fifo_build, "stream_selftest", tmp_path, testcase="fails_on_purpose",
            module_dirs=[HERE])


def test_build_error_is_reported(tmp_path):
    (tmp_path / "bad.sv").write_text("module bad(input clk); this is not verilog endmodule\n")
    (tmp_path / "filelist.f").write_text("bad.sv\n")
    with pytest.raises(SimFailure, match="Verilator build of bad failed"):
        build(tmp_path / "filelist.f", "bad", build_dir=tmp_path / "build")


def test_waves_give_a_vcd(tmp_path_factory, tmp_path):
    src = tmp_path_factory.mktemp("fifo2_waves")
    (src / "fifo2.sv").write_text(FIFO2_SV)
    (src / "filelist.f").write_text("fifo2.sv\n")
    sim = build(src / "filelist.f", "fifo2", cache_root=pytest_cache_root(tmp_path_factory),
                waves=True)
    run(sim, "stream_selftest", tmp_path, testcase="short_with_waves", module_dirs=[HERE],
        waves=True)
    vcd = tmp_path / "dump.vcd"
    assert vcd.exists() and "$var" in vcd.read_text()[:20000]
