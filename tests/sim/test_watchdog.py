"""The stream watchdog on a deliberately stalled design: it names the stream that stopped."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from pycde import Clock, Input, Module, Output, Reset, generator
from pycde.constructs import Mux
from pycde.types import Bits

from pycde_accel.rtl_lib.common import NamedReg, name_module
from pycde_accel.rtl_lib.emit import emit_module
from pycde_accel.sim import SimFailure, build, pytest_cache_root, run

#: the cocotb testbench, tb_watchdog.py next to this file (the runner imports it from TB_DIRS)
TB = "tb_watchdog"
TB_DIRS = [Path(__file__).resolve().parent]


class StallPipe(Module):
    """in_* -> one register stage -> out_*; ``freeze`` forces in_ready low."""

    clk = Clock()
    rst = Reset()
    freeze = Input(Bits(1))
    in_data = Input(Bits(8))
    in_valid = Input(Bits(1))
    in_ready = Output(Bits(1))
    out_data = Output(Bits(8))
    out_valid = Output(Bits(1))
    out_ready = Input(Bits(1))

    @generator
    def build(p):
        full = NamedReg(1, p.clk, p.rst, 0, name="full")
        in_ready = ~p.freeze & (~full.q | p.out_ready)
        in_fire = p.in_valid & in_ready
        out_fire = full.q & p.out_ready
        data = NamedReg(8, p.clk, None, None, ce=in_fire, name="stage")
        data.next(p.in_data)
        full.next(Mux(in_fire, full.q & ~out_fire, Bits(1)(1)))
        p.in_ready = in_ready
        p.out_data = data.q
        p.out_valid = full.q


name_module(StallPipe, "watchdog_stall_pipe")


@pytest.fixture(scope="module")
def pipe(tmp_path_factory):
    with tempfile.TemporaryDirectory(prefix="pycde_accel_wd_") as tmp:
        sv = emit_module(StallPipe, Path(tmp) / "sv")
        return build(sv.filelist, sv.top, cache_root=pytest_cache_root(tmp_path_factory))


def test_watchdog_trips_and_names_the_stream(pipe, tmp_path):
    run(pipe, TB, tmp_path, module_dirs=TB_DIRS,
        testcase=["healthy", "stall_guarded", "idle_guarded"])


def test_unguarded_stall_ends_the_simulation(pipe, tmp_path):
    with pytest.raises(SimFailure, match=r"guard: stream 'in' stalled: valid high, ready low "
                                         r"for 25 cycles"):
        run(pipe, TB, tmp_path, module_dirs=TB_DIRS, testcase="unguarded_stall")
