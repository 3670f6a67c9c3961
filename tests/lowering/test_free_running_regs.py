"""pycde-accel-free-running-regs (the accelerator's ``static-stream`` routes): the data
registers of a kernel that the stream wrapper never stalls load on every edge, its MULT18X18D
blocks too; the valid chain keeps its reset; the latency is the plain static route's. The
accelerator's simulations (tests/rtl_lib/test_store_engine.py, tests/test_sim.py) check that
the results stay bit-exact."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pycde_accel.assemble import kernel_for_route
from pycde_accel.lowering import build_kernel
from pycde_accel.lowering.pipeline import ROUTES

from .test_ecp5_dsp_mul import _LAT, _case

_CE_NO_RESET = re.compile(r"seq\.compreg\.ce [^\n]*%clock, %[\w.]+ : i\d+")


@pytest.mark.parametrize("name", ["requantize_pc", "residual_add"])
def test_data_registers_and_dsps_lose_their_enables(name, tmp_path):
    k = kernel_for_route(_case(name, np.random.default_rng(0))[0], "static")
    held = build_kernel(k, tmp_path / "held", route="static-ecp5")
    free = build_kernel(k, tmp_path / "free", route="static-ecp5-stream")
    before, after = held.hw.read_text(), free.hw.read_text()
    assert _CE_NO_RESET.search(before), "the stalling route's stage registers have enables"
    assert not _CE_NO_RESET.search(after)
    # the valid chain (v_*, registers with a reset) is kept; the stage enables, which only
    # the data registers read, are gone
    chain = re.compile(r"%v_\d+ = seq\.compreg")
    assert len(chain.findall(after)) == len(chain.findall(before)) > 0
    assert "_enable = seq.compreg" in before and "_enable = seq.compreg" not in after
    assert _LAT.search(after).group(1) == _LAT.search(before).group(1)
    sv = free.sv.read_text()
    ces = re.findall(r"\.CE[01]\s*\(([^)]*)\)", sv)
    assert ces and all(c.strip() == "1'h1" for c in ces)


def test_only_the_wrapped_routes_run_the_pass():
    runs = {r: any("free-running-regs" in s.pipeline for s in st) for r, st in ROUTES.items()}
    assert runs["static-stream"] and runs["static-ecp5-stream"]
    assert not runs["static"] and not runs["static-ecp5"]
