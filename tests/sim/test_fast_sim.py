"""The fast simulation engines (pycde_accel.sim.fast): the RTL memory + RTL watchdog under cocotb
and the Verilator-native harness give the same DRAM image as the cocotbext-axi AxiRam engine,
the same counters that do not depend on memory timing, and exactly the same counters as each
other; a stalled run ends with the stalled stream's name on both. One accelerator build (8x8,
64-bit AXI) shared with tests/test_sim.py through the session's build cache."""

from __future__ import annotations

import numpy as np
import pytest

from pycde_accel import frontend
from pycde_accel.backend import commands as C
from gemm_bench import gemm_program
from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError
from pycde_accel.sim import fast
from pycde_accel.simulate import run_layers, simulate

CFG = AccelConfig()
TIMING_FREE = ("name", "cmd_count", "core_busy", "dma_rd_bytes", "dma_wr_bytes", "cmds",
               "err_code")


@pytest.fixture(scope="module")
def accel(build_accel):
    return build_accel(CFG)


def test_mem_file_layout():
    """$fread fills each word most significant byte first: every word's bytes are reversed,
    and the image is padded to whole words."""
    rng = np.random.default_rng(0)
    for ab in (4, 8, 16):
        data = rng.integers(0, 256, size=5 * ab + 3, dtype=np.uint8).tobytes()
        mem = fast.image_to_mem(data, ab)
        assert len(mem) == 6 * ab
        assert mem[:ab] == data[:ab][::-1]
        words = [mem[i:i + ab][::-1] for i in range(0, len(mem), ab)]
        back = b"".join(words)
        assert back[:len(data)] == data and set(back[len(data):]) == {0}
    assert fast.dump_range([{"addr": 16, "size": 17}, {"addr": 64, "size": 8}], 8) == (2, 8)


def test_wrapper_names_every_stream():
    top = ("module pycde_accel_top(\n  input         clk,\n                rst,\n"
           "  input  [63:0] m_axi_rdata,\n  output [31:0] m_axi_araddr,\n"
           "  output        irq\n);\nendmodule\n")
    assert fast.top_ports(top, "pycde_accel_top") == [
        ("input", "", "clk"), ("input", "", "rst"), ("input", "[63:0]", "m_axi_rdata"),
        ("output", "[31:0]", "m_axi_araddr"), ("output", "", "irq")]
    sv = fast.wrapper_sv(top)
    for _, v, r in fast.STREAMS:
        assert v in sv and r in sv
    assert "sim_axi_mem #(.DW(64), .AW(32)" in sv


def test_gemm_same_on_every_engine(accel, tmp_path):
    """A 24x40x36 GEMM (partial tiles, several B panels): the three engines write the same
    DRAM (= the reference's output); cocotb-fast and native agree on every counter."""
    b = gemm_program(CFG, 24, 40, 36, seed=5)
    image = b.compiled.load_inputs([b.a])
    got = {}
    for eng in ("axiram", "cocotb", "native"):
        runs, after = run_layers(CFG, accel, b.compiled.layers, image, tmp_path / eng,
                                 engine=eng)
        np.testing.assert_array_equal(b.compiled.read_outputs(bytearray(after))[0], b.expected)
        got[eng] = (runs, after)
    assert got["cocotb"][1] == got["axiram"][1] == got["native"][1]
    assert got["cocotb"][0] == got["native"][0]
    for a, f in zip(got["axiram"][0], got["cocotb"][0]):
        assert {k: a[k] for k in TIMING_FREE} == {k: f[k] for k in TIMING_FREE}
        assert f["cycles"] > 0


def test_model_same_on_fast_engines(accel, tmp_path):
    """resblock (GEMMs, residual ADD, several layers) through simulate(): bit-exact with the
    integer reference on both fast engines, the same counters on both."""
    fe = frontend.run("resblock", eval_batches=1)
    co = simulate(fe, CFG, tmp_path / "cocotb", sim=accel, engine="cocotb")
    na = simulate(fe, CFG, tmp_path / "native", sim=accel, engine="native")
    assert co.bit_exact and na.bit_exact, (co.mismatches, na.mismatches)
    assert len(co.layers) > 1
    assert co.layers == na.layers
    for a, b in zip(co.outputs, na.outputs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("engine", ["cocotb", "native"])
def test_stall_is_named(accel, tmp_path, engine):
    """Three committed loads into the A scratchpad and no EXEC: the DMA's read data and the R
    channel stall and the RTL watchdog ends the run with the first one's name (as the Python watchdog does on the AxiRam engine)."""
    cmds = [C.Load(dst=C.DST_A, addr=0, beats=8, rows=1, stride=0, index=0, word=0,
                   flags=C.COMMIT) for _ in range(3)]
    image = bytearray(1 << 14)
    image[0x1000:0x1000 + C.CMD_BYTES * 3] = C.encode_list(cmds)
    layers = [{"name": "hand", "cmd_addr": 0x1000, "cmd_count": 3}]
    with pytest.raises(UserError) as e:
        run_layers(CFG, accel, layers, bytes(image), tmp_path, stall_cycles=300, engine=engine)
    msg = str(e.value)
    # the router's slice and the read DMA's R slice (two beats each) fill first, so the
    # router's input is the first stream to stall; the R channel behind them (the third
    # load's last four beats) is stalled too
    assert "stream 'dma read data' stalled: valid high, ready low for 300 cycles" in msg, msg
    assert "m_axi_r: valid=1 ready=0" in msg, msg
    assert "m_axi_ar: valid=0" in msg


def test_pauses_need_the_axiram_engine(accel, tmp_path):
    with pytest.raises(UserError, match="no AXI pauses"):
        run_layers(CFG, accel, [], bytes(64), tmp_path, axi_pause=0.3, engine="native")
