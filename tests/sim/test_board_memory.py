"""The board memory's bandwidth (pycde_accel.perfmodel.memory, sim/axi_mem.sv's throttle): each
target preset names its board memory; the rate is the board's bytes per cycle at the config's
clock; the RTL memory under the native harness moves no more beats per cycle than that (and
reaches it), and the perf model follows it within 5% per layer; design.json / report.json say
what the board gives and what the layers need. One accelerator build (8x8, 64-bit AXI)
shared with tests/test_sim.py; a throttle is a run-time plusarg, so a config that differs only
in its clock or memory runs on that build."""

from __future__ import annotations

from fractions import Fraction

import pytest

from gemm_bench import gemm_program
from pycde_accel import perfmodel, report
from pycde_accel.backend import compile_program
from pycde_accel.config import AccelConfig
from pycde_accel.errors import ConfigError
from pycde_accel.fpga import DEVICES
from pycde_accel.perfmodel import demand, memory
from pycde_accel.sim import fast
from pycde_accel.simulate import run_layers, simulate

CFG = AccelConfig()
#: 1.6 GB/s at 800 MHz: 2 bytes per cycle, a quarter of a 64-bit beat (a clock chosen for a
#: tight throttle on the default build; the clock changes no SV)
SLOW = CFG.replace(clock_mhz=800.0)
#: 4 bytes per cycle (half a beat): the rate the built-ins are checked at
HALF = CFG.replace(clock_mhz=400.0)


@pytest.fixture(scope="module")
def accel(build_accel):
    return build_accel(CFG)


def test_every_preset_names_its_board_memory():
    for dev in DEVICES.values():
        m = dev.memory
        assert m is not None and m.board and m.source and m.width_bits > 0 and m.mt_s > 0
    assert DEVICES["ecp5-85f"].memory.bytes_per_s == pytest.approx(1.6e9)
    assert DEVICES["xc7a100t"].memory.bytes_per_s == pytest.approx(1.3333e9, rel=1e-4)


def test_rate_is_board_bandwidth_over_clock():
    assert memory.bytes_per_cycle(CFG) == 16                 # 1.6 GB/s at 100 MHz
    assert memory.rate(CFG) is None                          # >= two 8-byte beats a cycle
    assert memory.rate(CFG.replace(clock_mhz=150.0)) == (32, 3)
    # a wider bus buys no bandwidth: the same 16 bytes a cycle, now one 16-byte beat
    assert memory.rate(CFG.replace(rows=4, cols=16, axi_data_width=128)) == (16, 1)
    assert memory.rate(CFG.replace(target="xc7a100t", axi_data_width=256)) == (40, 3)
    assert memory.rate(CFG.replace(clock_mhz=150.0, memory="ideal")) is None
    assert memory.charged_bytes_per_cycle(SLOW) == 2
    with pytest.raises(ConfigError, match="memory must be one of"):
        CFG.replace(memory="fast").validate()
    assert fast.memory_plusargs({"memory_rate": [32, 3]}) == ["+MEM_BW_NUM=32", "+MEM_BW_DEN=3"]
    assert fast.memory_plusargs({}) == []


def test_budget_moves_the_board_rate():
    """An R beat due and a W beat wanted on every cycle: the credit counter lets through
    num / (AB * den) beats per cycle, and W gets its share (R does not starve it)."""
    b = memory.Budget(CFG.replace(clock_mhz=150.0))     # 32/3 bytes a cycle, 8-byte beats
    r = w = 0
    for t in range(1, 3001):
        b.begin(t, True)
        if b.r_valid:
            b.take_r()
            r += 1
        if b.w_ok:
            b.take_w()
            w += 1
        b.end(True)
    assert r + w == pytest.approx(3000 * Fraction(32, 3) / 8, abs=2)
    assert min(r, w) >= 0.4 * (r + w)


def test_throttled_gemm_in_the_harness(accel, tmp_path):
    """A 64x64x64 GEMM on the native harness at 2 bytes per cycle: every beat of both
    channels fits in cycles * 2 bytes and the throttle is reached; the ideal memory is
    faster; the perf model is within 5% of both."""
    b = gemm_program(CFG, 64, 64, 64, seed=3)
    image = b.compiled.load_inputs([b.a])
    cyc = {}
    for name, cfg in (("board", SLOW), ("ideal", SLOW.replace(memory="ideal"))):
        runs, _ = run_layers(cfg, accel, b.compiled.layers, image, tmp_path / name,
                             stall_cycles=0, engine="native")
        r = runs[0]
        cyc[name] = r["cycles"]
        pred = perfmodel.predict(b.compiled, cfg).layers[0].cycles
        assert abs(pred - r["cycles"]) <= 0.05 * r["cycles"], (name, pred, r["cycles"])
        if name == "board":
            # the read counter counts every R beat (the command fetch's too)
            moved = r["dma_rd_bytes"] + r["dma_wr_bytes"]
            assert moved <= 2 * r["cycles"] + 16          # 16: the full counter at the start
            assert moved >= 0.9 * 2 * r["cycles"]         # memory-bound: the rate is reached
    assert cyc["board"] > 1.5 * cyc["ideal"]


def test_throttle_same_on_both_fast_engines(accel, tmp_path):
    """The cocotb engine passes the same plusargs to the same RTL memory: every counter equal
    to the native harness's under the throttle."""
    b = gemm_program(CFG, 24, 40, 36, seed=4)
    image = b.compiled.load_inputs([b.a])
    got = {}
    for engine in ("native", "cocotb"):
        runs, after = run_layers(SLOW, accel, b.compiled.layers, image, tmp_path / engine,
                                 stall_cycles=0, engine=engine)
        got[engine] = (runs, bytes(after))
    assert got["native"] == got["cocotb"]
    ideal, _ = run_layers(CFG, accel, b.compiled.layers, image, tmp_path / "ideal",
                          stall_cycles=0, engine="native")
    assert got["native"][0][0]["cycles"] > ideal[0]["cycles"]


@pytest.mark.parametrize("model", ["resblock", pytest.param("lenet5", marks=pytest.mark.slow)])
def test_builtin_throttled_within_5pct(accel, fe_cache, tmp_path, model):
    """A built-in at 4 bytes per cycle: bit-exact, every layer's prediction within 5%."""
    r = simulate(fe_cache(model), HALF, tmp_path, sim=accel)
    assert r.bit_exact, r.mismatches
    for l in r.layers:
        err = abs(l["predicted_cycles"] - l["cycles"]) / l["cycles"]
        assert err <= 0.05, (l["name"], l["predicted_cycles"], l["cycles"])


CONV_POOL = """
import torch
from torch import nn
def build():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)), \\
        (torch.randn(1, 3, 32, 32),)
"""


def test_maxpool_under_write_back_pressure(accel, tmp_path):
    """A max-pool layer with the board memory charged at placed clocks (100 MHz: 2 beats a
    cycle, no throttle; 114.26: 1.75; 140: 1.43): its W beats are throttled, the vector
    engine waits for them and its S reads slow with it. The model follows the RTL within 2%
    at each (it was 9.2% short at 114.26 MHz when the engine's result beats did not wait for
    W), and the throttle costs the RTL cycles."""
    from pycde_accel import frontend
    (tmp_path / "conv_pool.py").write_text(CONV_POOL)
    fe = frontend.run(str(tmp_path / "conv_pool.py"), seed=0, eval_batches=1)
    cycles = {}
    for clock in (100.0, 114.26, 140.0):
        r = simulate(fe, CFG.replace(clock_mhz=clock), tmp_path / f"c{clock:g}", sim=accel)
        assert r.bit_exact, r.mismatches
        pool = r.layers[-1]
        assert "pool" in pool["name"], pool["name"]
        err = abs(pool["predicted_cycles"] - pool["cycles"]) / pool["cycles"]
        assert err <= 0.02, (clock, pool["predicted_cycles"], pool["cycles"])
        cycles[clock] = pool["cycles"]
    assert cycles[114.26] > 1.05 * cycles[100.0], cycles


def test_memory_summary_and_report_fields(fe_cache):
    fe = fe_cache("resblock")
    compiled = compile_program(fe, SLOW)
    s = demand.summary(compiled, SLOW)
    assert s["board"]["kind"] == "16-bit DDR3 at 800 MT/s" and s["board"]["peak_gb_s"] == 1.6
    assert s["board_bytes_per_cycle"] == s["charged_bytes_per_cycle"] == 2.0 and s["throttled"]
    assert len(s["layers"]) == len(compiled.layers)
    need = max(l["demand_bytes_per_cycle"] for l in s["layers"] if l["demand_bytes_per_cycle"])
    assert s["need_bytes_per_cycle"] == need > 2.0
    assert s["need_gb_s"] == pytest.approx(need * 800e6 / 1e9, rel=1e-3)
    assert s["bottleneck"] == "board_memory" and s["memory_bound_layers"] >= 1
    for l in s["layers"]:
        assert l["bottleneck"] in ("board_memory", "axi_read", "axi_write", "core", "store",
                                   "vector")
        assert l["memory_cycles"] >= l["bytes"] / 2
    # with the ideal memory at 100 MHz the bus is the limit: 2 x 8 bytes a cycle
    ideal = demand.summary(compiled, CFG.replace(memory="ideal"))
    assert ideal["charged_bytes_per_cycle"] == 16.0 and not ideal["throttled"]
    sim = {"model": "resblock", "config": SLOW.to_dict(), "bit_exact": True, "mismatches": [],
           "layers": [{"name": "conv", "op": "gemm", "cycles": 1000, "core_busy": 100, "stall": 0,
                       "macs": 6400, "pe_utilization": 0.1, "dma_rd_bytes": 1000,
                       "dma_wr_bytes": 64, "cmds": 9}],
           "total_cycles": 1000, "macs": 6400, "pe_utilization": 0.1, "dma_bytes_read": 1000,
           "dma_bytes_written": 64, "float_max_abs_error": 0.0, "float_top1_match": True}
    rep = report.build(sim, SLOW, compiled=compiled,
                       synth={"target": "ecp5-85f", "fmax_mhz": 160.0, "resources": {"lut": 1}})
    d = rep.data
    assert d["memory"]["need_bytes_per_cycle"] == s["need_bytes_per_cycle"]
    assert d["roofline"]["dram_bytes_per_cycle"] == 2.0       # the board, not the 8-byte beat
    assert d["memory"]["at_fmax"] == {"fmax_mhz": 160.0, "board_bytes_per_cycle": 10.0,
                                      "throttled": True}
    md = rep.to_markdown()
    assert "## Memory" in md and "16-bit DDR3 at 800 MT/s" in md
    assert "bottleneck board_memory" in md
    # at 100 MHz the board gives 16 bytes a cycle, but a 64-bit bus reads 8: the bus limits
    default = demand.summary(compile_program(fe, CFG), CFG)
    assert not default["throttled"] and default["bottleneck"] in ("axi_read", "core")
