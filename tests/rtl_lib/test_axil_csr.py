"""The AXI4-Lite CSR block in Verilator, driven by cocotbext-axi's AxiLiteMaster."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest

from pycde_accel.errors import ConfigError
from pycde_accel.rtl_lib.axil_csr import (CsrMap, CsrReg, default_csr_map, make_axil_csr)
from pycde_accel.rtl_lib.emit import emit_module
from pycde_accel.sim import build, run

#: the cocotb testbench, tb_axil_csr.py next to this file (the runner imports it from TB_DIRS)
TB = "tb_axil_csr"
TB_DIRS = [Path(__file__).resolve().parent]


def small_map() -> CsrMap:
    """Odd widths and reset values, every access kind, a gap in the offsets."""
    return CsrMap((
        CsrReg("go", 0x00, "pulse", 3),
        CsrReg("stat", 0x04, "ro", 7),
        CsrReg("irq", 0x0C, "w1c", 5, reset=0b10001),
        CsrReg("base", 0x10, "rw", 32, reset=0x12345678),
        CsrReg("len", 0x14, "rw", 12, reset=0xABC),
        CsrReg("wide", 0x18, "rw", 20),
    ), 32, 8).validate()


def _build(cache_root, cmap: CsrMap, name: str):
    with tempfile.TemporaryDirectory(prefix="pycde_accel_csr_") as tmp:
        sv = emit_module(make_axil_csr(cmap, name), Path(tmp) / "sv")
        return build(sv.filelist, sv.top, cache_root=cache_root)


def _run(sim, cmap, tmp_path, testcase=None, spec=None):
    (tmp_path / "map.json").write_text(json.dumps(cmap.to_dict()))
    run(sim, TB, tmp_path, module_dirs=TB_DIRS, testcase=testcase,
        extra_env={"TB_CSR_MAP": str((tmp_path / "map.json").resolve()),
                   "TB_CSR_SPEC": json.dumps(spec or {})})


MAPS = {"default": default_csr_map, "small": small_map}


@pytest.mark.parametrize("which", sorted(MAPS))
def test_csr_all_cases(cache_root, tmp_path, which):
    cmap = MAPS[which]()
    sim = _build(cache_root, cmap, f"axil_csr_{which}")
    _run(sim, cmap, tmp_path, spec={"seed": 3, "p_stall": 0.0, "ops": 60})


@pytest.mark.parametrize("seed,p_stall", [(1, 0.3), (2, 0.6), (5, 0.9)])
def test_csr_random_traffic_with_pauses(cache_root, tmp_path, seed, p_stall):
    cmap = small_map()
    sim = _build(cache_root, cmap, "axil_csr_small")
    _run(sim, cmap, tmp_path, testcase="random_traffic",
         spec={"seed": seed, "p_stall": p_stall, "ops": 240})


def test_map_round_trip_and_header():
    cmap = default_csr_map()
    again = CsrMap.from_dict(json.loads(json.dumps(cmap.to_dict())))
    assert again == cmap
    h = cmap.c_header()
    assert h == default_csr_map().c_header()
    assert "#define ACCEL_CTRL_OFFSET 0x000u" in h
    assert "#define ACCEL_STATUS_ERR_CODE_LSB 8u" in h
    names = [r.name for r in cmap.regs]
    for n in ("ctrl", "status", "cmd_base", "cmd_count", "hw_info", "perf_cycles", "perf_core_busy", "perf_stall",
              "perf_dma_rd_bytes", "perf_dma_wr_bytes"):
        assert n in names


def test_ports_are_named_after_registers(tmp_path):
    sv = emit_module(make_axil_csr(small_map(), "axil_csr_small"), tmp_path / "sv")
    text = sv.files[-1].read_text()
    for port in ("output [2:0]  go", "input  [6:0]  stat", "input  [4:0]  irq_set",
                 "output [4:0]  irq", "output [31:0] base"):
        assert re.search(re.escape(port).replace(r"\ \ ", r"\s+").replace(r"\ ", r"\s+"), text), port
    assert "automatic" not in text


@pytest.mark.parametrize("regs,needle", [
    ((CsrReg("a", 0, "rw"), CsrReg("b", 0, "rw")), "used twice"),
    ((CsrReg("a", 2, "rw"),), "not a word offset"),
    ((CsrReg("a", 0, "bogus"),), "access"),
    ((CsrReg("a", 0, "rw", 33),), "width 33"),
    ((CsrReg("a", 0, "rw", 4, reset=16),), "does not fit"),
    ((CsrReg("a", 0, "rw"), CsrReg("a", 4, "ro")), "duplicate"),
])
def test_bad_maps_are_refused(regs, needle):
    with pytest.raises(ConfigError, match=needle):
        make_axil_csr(CsrMap(regs))
