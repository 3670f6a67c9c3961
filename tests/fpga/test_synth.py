"""Real Yosys + nextpnr runs on the tiny design (a few seconds each once YoWASP is compiled)."""

import json
import time
from pathlib import Path

import pytest

from pycde_accel.errors import UserError
from pycde_accel.fpga import get_device, synthesize


def test_ecp5_report_has_plausible_numbers(ecp5_run):
    rep, work = ecp5_run
    assert rep.placed and rep.target == "ecp5-85f" and rep.top == "TinyMac"
    assert rep.dsp == 1                      # the one 8x8 product: one MULT18X18D
    assert rep.ff >= 8 + 8 + 16 + 16 + 16    # a_r, b_r, p_r, acc, acc_q
    assert rep.carry >= 8                    # the 16-bit accumulator adder in CCU2C (2 bits each)
    assert rep.bram == 0
    assert set(rep.clocks) == {"clk"}
    assert 50 < rep.fmax_mhz < 500
    assert rep.clocks["clk"]["constraint_mhz"] == 100
    cp = rep.critical_path
    assert cp is not None and cp.steps and cp.start_cell and cp.end_cell
    assert abs(cp.delay_ns - sum(s.delay_ns for s in cp.steps)) < 0.01
    assert cp.delay_ns <= 1000 / rep.fmax_mhz + 0.05
    for name in ("yosys.log", "nextpnr.log", "synth.ys", "netlist.json", "report.json", "report.md"):
        assert (work / name).is_file(), name
    # Yosys's own log is complete (YoWASP's stdout stops after ABC)
    assert "End of script" in (work / "yosys.log").read_text()


def test_long_steps_report_progress(ecp5_run, ecp5_progress):
    for expected in ("yosys: synth_ecp5 of TinyMac (2 files)", "yosys: mapping logic to LUTs (abc9)",
                     "nextpnr-ecp5: placing (analytical)", "nextpnr-ecp5: routing"):
        assert expected in ecp5_progress
    assert ecp5_progress[-1].startswith("nextpnr-ecp5: done in") and "Fmax" in ecp5_progress[-1]


def test_ice40_report_has_plausible_numbers(ice40_run):
    rep, work = ice40_run
    assert rep.placed and rep.family == "ice40"
    assert rep.dsp == 1                      # SB_MAC16
    # Yosys packs the input registers, product and accumulator into the SB_MAC16;
    # only acc_q stays in the fabric
    assert rep.ff >= 16 and "$scopeinfo" not in rep.cells
    assert rep.port_bits == 34
    assert 10 < rep.fmax_mhz < 500
    assert rep.critical_path is not None


def test_presets_match_what_nextpnr_says_the_chips_have(ecp5_run, ice40_run):
    """The preset counts are the chip's, not guesses: nextpnr's report lists what is available."""
    for (rep, work), pairs in ((ecp5_run, {"dsp": "MULT18X18D", "bram": "DP16KD", "lut": "TRELLIS_COMB",
                                           "ff": "TRELLIS_FF"}),
                               (ice40_run, {"dsp": "ICESTORM_DSP", "bram": "ICESTORM_RAM",
                                            "lut": "ICESTORM_LC"})):
        util = json.loads((work / "nextpnr.json").read_text())["utilization"]
        dev = get_device(rep.target)
        for attr, bel in pairs.items():
            assert util[bel]["available"] == getattr(dev, attr), (rep.target, bel)


def test_report_files_are_deterministic_and_path_free(ecp5_run, tiny_sv, tmp_path):
    rep, work = ecp5_run
    text = (work / "report.json").read_text()
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    assert data["resources"]["dsp"] == 1 and data["fmax_mhz"] == rep.fmax_mhz
    assert data["files"] == ["rtl/TinyMul.sv", "rtl/TinyMac.sv"]
    for t in (text, (work / "report.md").read_text()):
        assert str(work) not in t and "/tmp" not in t and "/root" not in t
    # a second run elsewhere gives the same bytes
    again = synthesize(tiny_sv, "TinyMac", "ecp5-85f", tmp_path / "again", seed=1, freq_mhz=100)
    assert (tmp_path / "again" / "report.json").read_text() == text
    assert again.to_markdown() == (work / "report.md").read_text()


def test_a_tool_failure_is_one_line_naming_the_tool_and_keeps_the_log(tmp_path):
    bad = tmp_path / "bad.sv"
    bad.write_text("module bad(input clk, output y);\n  assign y = nosuchsignal +;\nendmodule\n")
    work = tmp_path / "work"
    with pytest.raises(UserError) as e:
        synthesize([bad], "bad", "ecp5-85f", work)
    msg = str(e.value)
    assert msg.startswith("yosys failed: ") and "ERROR: syntax error" in msg and "\n" not in msg
    assert (work / "yosys.log").is_file() and str(work / "yosys.log") in msg


def test_handoff_targets_are_not_synthesized_here(tiny_sv, tmp_path):
    with pytest.raises(UserError, match="vivado handoff only.*ecp5-85f"):
        synthesize(tiny_sv, "TinyMac", "xc7a100t", tmp_path)


def test_ice40_with_more_ports_than_pins_reports_synthesis_and_why_not_placed(tiny_maker, tmp_path):
    files = tiny_maker(tmp_path / "sv", acc_width=32)          # 50 port bits > 39 pins
    rep = synthesize(files, "TinyMac", "ice40-up5k", tmp_path / "work")
    assert not rep.placed and rep.fmax_mhz is None and rep.dsp == 1
    assert "50 port bits" in rep.note and "39 IO pins" in rep.note
    assert not (tmp_path / "work" / "nextpnr.log").exists()


MANY_MULTS = """module many #(parameter N = 30) (input clk, input [8*N-1:0] a, input [8*N-1:0] b,
                                    output reg [16*N-1:0] p);
  genvar i;
  for (i = 0; i < N; i = i + 1) begin : g
    always @(posedge clk) p[16*i +: 16] <= $signed(a[8*i +: 8]) * $signed(b[8*i +: 8]);
  end
endmodule
"""


def test_a_netlist_with_too_many_multipliers_is_refused_before_placing(tmp_path):
    sv = tmp_path / "many.sv"
    sv.write_text(MANY_MULTS)
    with pytest.raises(UserError) as e:
        synthesize([sv], "many", "ecp5-25f", tmp_path / "work")
    assert "30 MULT18X18D but ecp5-25f has 28" in str(e.value)
    assert not (tmp_path / "work" / "nextpnr.log").exists()


def test_a_nextpnr_failure_is_one_line_naming_the_tool(tmp_path):
    from pycde_accel.fpga import nextpnr
    (tmp_path / "netlist.json").write_text("{ not json")
    with pytest.raises(UserError) as e:
        nextpnr.run_nextpnr(get_device("ecp5-25f"), tmp_path, seed=1, freq_mhz=100)
    msg = str(e.value)
    assert msg.startswith("nextpnr-ecp5 failed: ") and "ERROR" in msg and "\n" not in msg
    assert (tmp_path / "nextpnr.log").is_file()


def _entries(cache_dir: Path) -> list[Path]:
    """The cache's entries (its lock files are not entries)."""
    return [p for p in cache_dir.iterdir() if p.is_dir() and not p.name.startswith(".")]


def test_two_identical_runs_at_once_run_the_tools_once(tiny_sv, tmp_path, monkeypatch):
    """Two synthesize calls of one design at the same time (two test workers, two DSE workers):
    the second waits on the cache entry's lock, says so, and is answered from the first run."""
    import threading
    from pycde_accel.fpga import nextpnr
    monkeypatch.setenv("PYCDE_ACCEL_SYNTH_CACHE", str(tmp_path / "cache"))
    real, calls, inside = nextpnr.run_nextpnr, [], threading.Event()

    def counted(*a, **k):
        calls.append(1)
        inside.set()
        time.sleep(1.0)                     # the other run arrives while this one places
        return real(*a, **k)
    monkeypatch.setattr(nextpnr, "run_nextpnr", counted)
    seen, reps = [], {}

    def run(name):
        reps[name] = synthesize(tiny_sv, "TinyMac", "ecp5-25f", tmp_path / name, seed=4,
                                freq_mhz=80, progress=seen.append)
    a = threading.Thread(target=run, args=("a",))
    a.start()
    assert inside.wait(300)
    run("b")
    a.join()
    assert len(calls) == 1 and reps["a"].to_dict() == reps["b"].to_dict()
    assert any(s.startswith("waiting for an identical synthesis run") for s in seen)
    assert len(_entries(tmp_path / "cache")) == 1


def test_an_identical_run_comes_from_the_synthesis_cache(tiny_sv, tiny_maker, tmp_path, monkeypatch):
    """Same sources, top, device, seed and clock: the second run reads the first one's tool
    outputs (no Yosys, no nextpnr) and reports exactly the same; other sources run the tools."""
    from pycde_accel.fpga import nextpnr, yosys
    monkeypatch.setenv("PYCDE_ACCEL_SYNTH_CACHE", str(tmp_path / "cache"))
    first = synthesize(tiny_sv, "TinyMac", "ecp5-25f", tmp_path / "a", seed=2, freq_mhz=90)
    assert len(_entries(tmp_path / "cache")) == 1

    def ran(*_a, **_k):
        raise AssertionError("a synthesis tool ran for an identical design")
    with monkeypatch.context() as m:
        m.setattr(yosys, "run_yosys", ran)
        m.setattr(nextpnr, "run_nextpnr", ran)
        seen = []
        again = synthesize(tiny_sv, "TinyMac", "ecp5-25f", tmp_path / "b", seed=2, freq_mhz=90,
                           progress=seen.append)
        assert again.to_dict() == first.to_dict()
        assert (tmp_path / "b" / "report.json").read_text() == (tmp_path / "a" / "report.json").read_text()
        assert (tmp_path / "b" / "yosys.log").is_file() and any("synthesis cache" in s for s in seen)
        with pytest.raises(AssertionError, match="tool ran"):       # another seed: the tools run
            synthesize(tiny_sv, "TinyMac", "ecp5-25f", tmp_path / "c", seed=3, freq_mhz=90)
    other = tiny_maker(tmp_path / "sv18", acc_width=18)
    rep = synthesize(other, "TinyMac", "ecp5-25f", tmp_path / "d", seed=2, freq_mhz=90)
    assert rep.ff > first.ff and len(_entries(tmp_path / "cache")) == 2
    monkeypatch.setenv("PYCDE_ACCEL_SYNTH_CACHE", "off")
    with monkeypatch.context() as m:
        m.setattr(yosys, "run_yosys", ran)
        with pytest.raises(AssertionError, match="tool ran"):       # the cache switched off
            synthesize(tiny_sv, "TinyMac", "ecp5-25f", tmp_path / "e", seed=2, freq_mhz=90)


BRAM_SV = """
module TinyRam(input clk, input we, input [7:0] wa, input [7:0] ra, input [31:0] wd,
               output [31:0] rd);
  reg [31:0] mem [0:255];
  reg [31:0] rd_reg;
  always_ff @(posedge clk) rd_reg <= mem[ra];
  always_ff @(posedge clk) if (we) mem[wa] <= wd;
  assign rd = rd_reg;
endmodule
"""


def test_block_ram_maps_without_read_first_emulation(tmp_path):
    """A memory as CIRCT's seq.hlmem lowering writes it (registered read, write in another
    process) is one DP16KD and nothing else: no address compare and bypass mux after the
    RAM's output (fpga.yosys.MEMORY_ATTRS)."""
    (tmp_path / "TinyRam.sv").write_text(BRAM_SV)
    rep = synthesize([tmp_path / "TinyRam.sv"], "TinyRam", "ecp5-85f", tmp_path / "w",
                     place=False)
    assert rep.bram == 1
    assert rep.lut == 0 and rep.ff == 0 and rep.carry == 0, (rep.lut, rep.ff, rep.carry)
