"""Shared by the block tests: ``cache_root``, one Verilator build cache for the session (and
all its xdist workers), so that each block is built once per distinct SV. Each block's cocotb
testbench is ``tb_<block>.py`` next to its test, passed to ``sim.run`` by module name with
this folder in ``module_dirs``."""

import pytest

from pycde_accel.sim import runner  # not its pytest_cache_root by name: pytest_* names are hooks


@pytest.fixture(scope="session")
def cache_root(tmp_path_factory):
    return runner.pytest_cache_root(tmp_path_factory)
