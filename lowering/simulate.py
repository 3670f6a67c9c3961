"""Run a lowered kernel's SV in Verilator (cocotb) against memory models: outputs and cycles.

``simulate(kernel, sv, build_dir, inputs, scalars, latency=2, backpressure=0.3)`` builds once
per ``build_dir`` (reused when the SV did not change) and returns :class:`SimResult`:
the output array, the cycle of each store, and ``elements_per_cycle`` = (n-1) / (last store -
first store), the steady-state rate. The testbench is :mod:`.kernel_tb`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..toolchain import setup_verilator_env


@dataclass
class SimResult:
    out: np.ndarray
    store_cycles: list[int]
    cycles: int
    done_cycle: int | None

    @property
    def elements_per_cycle(self) -> float:
        c = self.store_cycles
        return (len(c) - 1) / (c[-1] - c[0]) if len(c) > 1 and c[-1] > c[0] else 0.0


def build(sv: Path, top: str, build_dir: Path):
    from cocotb_tools.runner import get_runner
    setup_verilator_env()
    runner = get_runner("verilator")
    runner.build(sources=[Path(sv)], hdl_toplevel=top, build_dir=Path(build_dir),
                 build_args=["-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC",
                             # tests run short: compile fast rather than simulate fast
                             "-CFLAGS", "-O0"],
                 always=False, log_file=Path(build_dir).resolve() / "build.log")
    return runner


def simulate(kernel, sv: Path, build_dir: Path, inputs: dict, scalars: dict | None = None, *,
             latency: int = 2, backpressure: float = 0.3, seed: int = 0,
             max_cycles: int | None = None, tag: str = "run") -> SimResult:
    build_dir = Path(build_dir)
    runner = build(sv, kernel.name, build_dir)
    ports = kernel.ports()
    cfg = {"ports": ports, "latency": latency, "backpressure": backpressure, "seed": seed,
           "inputs": {k: [int(x) for x in np.asarray(v).ravel()] for k, v in inputs.items()},
           "scalars": {k: int(v) for k, v in (scalars or {}).items()},
           "max_cycles": max_cycles or 200 * kernel.n + 1000}
    cfg_path, res_path = build_dir / f"{tag}.cfg.json", build_dir / f"{tag}.result.json"
    cfg_path.write_text(json.dumps(cfg))
    if res_path.exists():
        res_path.unlink()
    runner.test(test_module="pycde_accel.lowering.kernel_tb", hdl_toplevel=kernel.name, hdl_toplevel_lang="verilog",
                build_dir=build_dir, test_dir=build_dir, test_args=[],
                extra_env={"KERNEL_TB_CONFIG": str(cfg_path), "KERNEL_TB_RESULT": str(res_path)},
                results_xml=str(build_dir.resolve() / f"{tag}.results.xml"), log_file=str(build_dir / f"{tag}.log"))
    if not res_path.exists():
        raise UserError(f"simulation of {kernel.name} produced no result (see {build_dir}/{tag}.log)")
    r = json.loads(res_path.read_text())
    if r["acked"] != kernel.n:
        raise UserError(f"simulation of {kernel.name}: {r['acked']} of {kernel.n} stores completed "
                        f"in {r['cycles']} cycles (deadlock or too slow)")
    return SimResult(np.array(r["out"], dtype=np.int64), r["store_cycles"], r["cycles"],
                     r["done_cycle"])
