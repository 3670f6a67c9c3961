"""Build and simulate the systolic core from Python: :func:`build_core` + :func:`run_systolic`.

``build_core(config, cache_root)`` emits the core's SV and builds it in Verilator once per SV
(a cache folder keyed by the SV's hash) from ``EmittedSV.sim_filelist``, i.e. with the
simulation models of the primitives the core instantiates (ECP5 targets:
``rtl_lib/MULT18X18D_sim.sv``); ``run_systolic(build, config, runs, test_dir)`` runs the
cocotb bench ``tb_systolic.py`` (next to this file) on it and returns its per-run results.
A run is ``{"name", "ks": [K per tile], "mode": "random"|"min"|"max"|"minmax", "seed",
"bp": {"a": p, "b": p, "c": p}}`` (p: probability that valid/ready is offered in a cycle).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Sequence

from pycde_accel.config import AccelConfig
from pycde_accel.rtl_lib.emit import emit_core
from pycde_accel.sim.runner import SimBuild, build, run

#: where the testbench is (cocotb imports it by module name from this folder)
HERE = Path(__file__).resolve().parent


def build_core(config: AccelConfig, cache_root: os.PathLike | str) -> SimBuild:
    """Emit the core for ``config`` and build it (once per distinct SV) under ``cache_root``."""
    with tempfile.TemporaryDirectory(prefix="pycde_accel_core_") as tmp:
        sv = emit_core(config, Path(tmp) / "sv")
        # the simulation list: the synthesis files + behavioral models of vendor primitives
        return build(sv.sim_filelist, sv.top, cache_root=cache_root)


def run_systolic(sim: SimBuild, config: AccelConfig, runs: Sequence[dict],
                 test_dir: os.PathLike | str) -> list[dict]:
    tdir = Path(test_dir)
    tdir.mkdir(parents=True, exist_ok=True)
    spec = {"rows": config.rows, "cols": config.cols, "data_width": config.data_width,
            "acc_width": config.acc_width, "runs": list(runs)}
    spec_path, out_path = tdir / "spec.json", tdir / "results.json"
    spec_path.write_text(json.dumps(spec))
    run(sim, "tb_systolic", tdir, module_dirs=[HERE],
        extra_env={"TB_SYSTOLIC_SPEC": str(spec_path.resolve()),
                   "TB_SYSTOLIC_OUT": str(out_path.resolve())})
    return json.loads(out_path.read_text())
