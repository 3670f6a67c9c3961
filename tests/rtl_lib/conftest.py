"""Fixtures of the rtl_lib block tests.

Each block's cocotb testbench is ``tb_<block>.py`` next to its test, passed to ``sim.run`` by
module name with this folder in ``module_dirs``.

``cache_root``: one Verilator build cache for the session (and all its xdist workers), so that
each block is built once per distinct SV. ``block_sim(key, emit)``: the Verilator build of the
SV that ``emit(sv_dir)`` (-> ``rtl_lib.emit.EmittedSV``) writes, made once per ``key`` and
session; ``module_sim(module)``: the same for one PyCDE module class (``emit_module``), keyed by
its SV name. ``top_sv``: the text of the emitted top of a 2x8 accelerator (its own logic: dispatch,
read router), for the tests that walk its logic cones (``sv_cone``).
"""

from __future__ import annotations

import pytest

from pycde_accel import sim   # not its pytest_cache_root by name: pytest_* names are hooks
from pycde_accel.rtl_lib.emit import emit_module


@pytest.fixture(scope="session")
def cache_root(tmp_path_factory):
    return sim.pytest_cache_root(tmp_path_factory)


@pytest.fixture(scope="session")
def block_sim(cache_root, tmp_path_factory):
    sims = {}

    def get(key: str, emit):
        if key not in sims:
            sv = emit(tmp_path_factory.mktemp(key) / "sv")
            sims[key] = sim.build(sv.sim_filelist, sv.top, cache_root=cache_root)
        return sims[key]

    return get


@pytest.fixture(scope="session")
def module_sim(block_sim):
    def get(module):
        return block_sim(module.module_name, lambda sv_dir: emit_module(module, sv_dir))

    return get


@pytest.fixture(scope="session")
def top_sv(tmp_path_factory):
    from pycde_accel.assemble import emit_accelerator
    from pycde_accel.config import AccelConfig

    work = tmp_path_factory.mktemp("top_2x8")
    em = emit_accelerator(AccelConfig(rows=2, cols=8), work / "sv", kernel_dir=work / "k")
    return (work / "sv" / f"{em.top}.sv").read_text()
