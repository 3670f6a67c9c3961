"""Fixtures of the rtl_lib block tests.

``cache_root``: the Verilator build cache of the session. ``block_sim(key, emit)``: the
Verilator build of the SV that ``emit(sv_dir)`` (-> ``rtl_lib.emit.EmittedSV``) writes, made
once per ``key`` and session; ``module_sim(module)``: the same for one PyCDE module class
(``emit_module``), keyed by its SV name.
"""

from __future__ import annotations

import pytest

from pycde_accel import sim
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
            sims[key] = sim.build(sv.filelist, sv.top, cache_root=cache_root)
        return sims[key]

    return get


@pytest.fixture(scope="session")
def module_sim(block_sim):
    def get(module):
        return block_sim(module.module_name, lambda sv_dir: emit_module(module, sv_dir))

    return get
