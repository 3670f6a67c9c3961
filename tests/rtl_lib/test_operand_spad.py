"""The double-buffered operand scratchpad in Verilator (random fills/reads against a model of
both banks, read latency 1, dropped lanes, release with the last read); its block-RAM mapping
in Yosys (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pycde_accel.errors import ConfigError
from pycde_accel.fpga.devices import DEVICES
from pycde_accel.fpga.yosys import run_yosys
from pycde_accel.rtl_lib.emit import emit_module
from pycde_accel.rtl_lib.operand_spad import make_operand_spad
from pycde_accel.sim import run

#: the cocotb testbench, tb_operand_spad.py next to this file (the runner imports it from TB_DIRS)
TB = "tb_operand_spad"
TB_DIRS = [Path(__file__).resolve().parent]


CASES = [  # lanes, width, depth, seed, p_wr, p_rd, hold
    (3, 32, 16, 1, 1.0, 1.0, 0),
    (3, 32, 16, 2, 0.5, 0.6, 6),
    pytest.param(1, 64, 8, 3, 0.8, 1.0, 2, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("lanes,width,depth,seed,p_wr,p_rd,hold", CASES,
                         ids=["l3w32d16-s1", "l3w32d16-s2", "l1w64d8-s3"])
def test_pingpong(module_sim, tmp_path, lanes, width, depth, seed, p_wr, p_rd, hold):
    sim = module_sim(make_operand_spad(lanes, width, depth))
    spec = {"lanes": lanes, "width": width, "depth": depth, "tiles": 10, "seed": seed,
            "p_wr": p_wr, "p_rd": p_rd, "hold": hold}
    run(sim, TB, tmp_path, module_dirs=TB_DIRS, extra_env={"TB_OSPAD_SPEC": json.dumps(spec)})


def test_refusals():
    with pytest.raises(ConfigError, match="power of two"):
        make_operand_spad(4, 32, 24)
    with pytest.raises(ConfigError, match="width"):
        make_operand_spad(4, 24, 16)
    with pytest.raises(ConfigError, match="lanes"):
        make_operand_spad(0, 32, 16)


@pytest.mark.slow
def test_banks_map_to_block_ram(tmp_path):
    """4 lanes x 2 banks of 128 x 64 bits: one 256 x 64 memory per lane = 2 DP16KD (512 x 36
    each at most), 8 in all; none in LUT RAM."""
    sv = emit_module(make_operand_spad(4, 64, 128), tmp_path / "sv")
    cells = run_yosys(sv.filelist.read_text().split(), sv.top, DEVICES["ecp5-85f"],
                      tmp_path / "sv").cells
    print(f"operand spad 4 lanes x 2 x 128 x 64 in synth_ecp5: {cells}")
    assert cells.get("DP16KD") == 8, cells
    assert "TRELLIS_DPR16X4" not in cells
