"""The double-buffered operand scratchpad in Verilator (random fills/reads against a model of
both banks, read latency RD_LATENCY, dropped lanes, release with the last read); its block-RAM
mapping in Yosys (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pycde_accel.errors import ConfigError
from pycde_accel.fpga.devices import DEVICES
from pycde_accel.fpga.yosys import run_yosys
from pycde_accel.rtl_lib import ecp5_ebr, keep_ff
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
def test_pingpong(block_sim, tmp_path, lanes, width, depth, seed, p_wr, p_rd, hold):
    mod = make_operand_spad(lanes, width, depth)
    sim = block_sim(mod.module_name, lambda sv_dir: emit_module(mod, sv_dir,
                                                                 sources=[keep_ff.SOURCE]))
    spec = {"lanes": lanes, "width": width, "depth": depth, "tiles": 10, "seed": seed,
            "p_wr": p_wr, "p_rd": p_rd, "hold": hold}
    run(sim, TB, tmp_path, module_dirs=TB_DIRS, extra_env={"TB_OSPAD_SPEC": json.dumps(spec)})


EBR_CASES = [  # lanes, width, depth (words per bank): DP16KD 36-, 18- and 9-bit modes
    (2, 64, 16, 4, 0.7, 0.8, 3),     # 32 words a lane: 512 x 36, two blocks side by side
    (2, 32, 512, 5, 1.0, 1.0, 0),    # 1024 words: 1024 x 18, two blocks
    (1, 16, 1024, 6, 0.8, 0.9, 1),   # 2048 words: 2048 x 9, two blocks
]


@pytest.mark.parametrize("lanes,width,depth,seed,p_wr,p_rd,hold", EBR_CASES,
                         ids=["ebr36", "ebr18", "ebr9"])
def test_pingpong_on_ecp5_block_ram(block_sim, tmp_path, lanes, width, depth, seed, p_wr, p_rd,
                                    hold):
    """The same protocol with the lane memories as DP16KD instances (output register on),
    simulated with ``DP16KD_sim.sv``: the read latency and every port are unchanged."""
    mod = make_operand_spad(lanes, width, depth, ebr=True)
    assert mod.module_name.endswith("_ebr")
    sim = block_sim(mod.module_name, lambda sv_dir: emit_module(
        mod, sv_dir, sim_models=[ecp5_ebr.SIM_MODEL], sources=[keep_ff.SOURCE]))
    spec = {"lanes": lanes, "width": width, "depth": depth, "tiles": 6, "seed": seed,
            "p_wr": p_wr, "p_rd": p_rd, "hold": hold}
    run(sim, TB, tmp_path, module_dirs=TB_DIRS, extra_env={"TB_OSPAD_SPEC": json.dumps(spec)})


def test_ebr_modes():
    """The widest DP16KD aspect ratio that holds the depth, and the blocks side by side."""
    assert ecp5_ebr.ebr_mode(512) == (36, 5)
    assert ecp5_ebr.ebr_mode(513) == (18, 4)
    assert ecp5_ebr.ebr_mode(2048) == (9, 3)
    assert ecp5_ebr.ebr_mode(16384) == (1, 0)
    assert ecp5_ebr.ebr_blocks(64, 256) == 2 and ecp5_ebr.ebr_blocks(64, 1024) == 4
    assert not ecp5_ebr.ebr_supported(16385)
    # a lane deeper than one block keeps the inferred memory (and the default module name)
    assert not make_operand_spad(1, 8, 16384, ebr=True).module_name.endswith("_ebr")


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
    sv = emit_module(make_operand_spad(4, 64, 128), tmp_path / "sv", sources=[keep_ff.SOURCE])
    cells = run_yosys(sv.filelist.read_text().split(), sv.top, DEVICES["ecp5-85f"],
                      tmp_path / "sv").cells
    print(f"operand spad 4 lanes x 2 x 128 x 64 in synth_ecp5: {cells}")
    assert cells.get("DP16KD") == 8, cells
    assert "TRELLIS_DPR16X4" not in cells


@pytest.mark.slow
def test_ebr_blocks_keep_their_output_register(tmp_path):
    """The instantiated DP16KDs reach the netlist as they are: 8 blocks (2 a lane), the output
    register on (REGMODE OUTREG on both halves of the 36-bit mode), the lanes' data registers
    gone from the fabric (the block holds them)."""
    sv = emit_module(make_operand_spad(4, 64, 128, ebr=True), tmp_path / "sv",
                     sources=[keep_ff.SOURCE])
    rep = run_yosys(sv.filelist.read_text().split(), sv.top, DEVICES["ecp5-85f"],
                    tmp_path / "sv")
    assert rep.cells.get("DP16KD") == 8, rep.cells
    net = json.loads((tmp_path / "sv" / "netlist.json").read_text())
    rams = [c for m in net["modules"].values() for c in m["cells"].values()
            if c["type"] == "DP16KD"]
    assert {(c["parameters"]["REGMODE_A"], c["parameters"]["REGMODE_B"]) for c in rams} == \
        {("OUTREG", "OUTREG")}
    # four lanes' 64-bit words: the fabric holds the third read stage (each lane's registered
    # word and selected byte, 4 x (64 + 8) flops) and the write and control registers, but no
    # second copy of the 256 read-data bits (the block's output register holds those)
    third_stage = 4 * (64 + 8)
    assert third_stage < rep.cells.get("TRELLIS_FF", 0) < third_stage + 150, rep.cells


def test_the_release_only_selects_the_next_bank_state(tmp_path):
    """The consumer's release request (the matmul unit's last read, its latest input) reaches
    the bank flags, ``rd_avail_q`` and ``wr_ready_out_q`` as the select of one mux between two
    next states made from flops and the commit, not through their logic (``cmd_active`` ->
    issue -> release -> the bank-full next values -> ``wr_ready_out_q`` ran six LUT levels)."""
    import re

    from .sv_cone import cone, definitions, next_value

    em = emit_module(make_operand_spad(3, 32, 16), tmp_path / "sv", sources=[keep_ff.SOURCE])
    sv = (tmp_path / "sv" / f"{em.top}.sv").read_text()
    defs = definitions(sv)
    for reg in ("bank0_full", "bank1_full", "rd_avail_q", "wr_ready_out_q"):
        expr = next_value(sv, reg)
        if reg == "wr_ready_out_q":   # the ownership's ready, low too after a commit
            ready, _, commit = expr.partition("&")
            assert "rd_release" not in cone(defs, commit), (reg, expr)
            expr = defs[ready.strip()]
        m = re.fullmatch(r"\s*rd_release\s*\?(.*)", expr, re.S)
        assert m, (reg, expr)
        assert "rd_release" not in cone(defs, m.group(1)), (reg, expr)
