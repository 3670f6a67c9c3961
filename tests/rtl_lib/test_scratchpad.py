"""The double-buffered scratchpad and the width adapter in Verilator; the BRAM mapping in Yosys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pycde_accel.errors import ConfigError
from pycde_accel.fpga.devices import DEVICES
from pycde_accel.fpga.yosys import run_yosys
from pycde_accel.rtl_lib.emit import emit_module
from pycde_accel.rtl_lib.scratchpad import make_scratchpad, make_width_adapter
from pycde_accel.sim import run

#: the cocotb testbench, tb_scratchpad.py next to this file (the runner imports it from TB_DIRS)
TB = "tb_scratchpad"
TB_DIRS = [Path(__file__).resolve().parent]


def _run(sim, tmp_path, testcase, spec):
    out = tmp_path / "out.json"
    run(sim, TB, tmp_path, module_dirs=TB_DIRS, testcase=testcase,
        extra_env={"TB_SPAD_SPEC": json.dumps(spec), "TB_SPAD_OUT": str(out.resolve())})
    return json.loads(out.read_text()) if out.exists() else None


@pytest.mark.parametrize("seed,p_wr,p_rd,hold", [(1, 1.0, 1.0, 0), (2, 0.5, 0.7, 5),
                                                 (3, 1.0, 0.3, 30), (4, 0.3, 1.0, 2)])
def test_pingpong(module_sim, tmp_path, seed, p_wr, p_rd, hold):
    sim = module_sim(make_scratchpad(36, 32, tag_width=8))
    st = _run(sim, tmp_path, "pingpong", {"width": 36, "depth": 32, "tiles": 12, "seed": seed,
                                          "p_wr": p_wr, "p_rd": p_rd, "hold": hold})
    assert st["tiles_read"] == 12
    assert st["overlap_writes"] > 0        # the DMA side filled while the core side read
    if p_rd < 1.0 or hold:
        assert st["blocked_cycles"] > 0    # both banks full: the producer waited
        assert st["junk_offered"] > 0


ADAPTERS = [(64, 32), pytest.param(64, 128, marks=pytest.mark.slow),
            pytest.param(64, 8, marks=pytest.mark.slow), pytest.param(32, 128, marks=pytest.mark.slow),
            pytest.param(64, 64, marks=pytest.mark.slow)]


@pytest.mark.parametrize("in_w,out_w", ADAPTERS)
@pytest.mark.parametrize("p_in,p_out", [(1.0, 1.0), (0.6, 0.4)])
def test_width_adapter(module_sim, tmp_path, in_w, out_w, p_in, p_out):
    sim = module_sim(make_width_adapter(in_w, out_w))
    _run(sim, tmp_path, "adapter", {"in_width": in_w, "out_width": out_w, "beats": 300,
                                    "seed": in_w + out_w, "p_in": p_in, "p_out": p_out})


@pytest.mark.parametrize("p_in,p_out", [(1.0, 1.0), (0.6, 0.4)])
def test_width_adapter_whole(module_sim, tmp_path, p_in, p_out):
    """The command packer's adapter (64-bit beats into 256-bit commands, never a short one)."""
    sim = module_sim(make_width_adapter(64, 256, whole=True))
    _run(sim, tmp_path, "adapter", {"in_width": 64, "out_width": 256, "beats": 300, "seed": 5,
                                    "p_in": p_in, "p_out": p_out, "whole": True})


def test_refusals():
    with pytest.raises(ConfigError, match="power of two"):
        make_scratchpad(64, 1000)
    with pytest.raises(ConfigError, match="integer ratio"):
        make_width_adapter(64, 48)


@pytest.mark.slow
def test_banks_map_to_block_ram(tmp_path):
    """Two banks of 1024 x 64 bits: 4 DP16KD each (a DP16KD is 1024 x 18 at most)."""
    sv = emit_module(make_scratchpad(64, 1024), tmp_path / "sv")
    cells = run_yosys(sv.filelist.read_text().split(), sv.top, DEVICES["ecp5-85f"],
                      tmp_path / "sv").cells
    print(f"scratchpad 2 x 1024 x 64 in synth_ecp5: {cells}")
    assert cells.get("DP16KD") == 8, cells
    assert "TRELLIS_DPR16X4" not in cells  # no distributed-RAM fallback
