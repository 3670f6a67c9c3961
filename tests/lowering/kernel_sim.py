"""Run a lowered kernel's SV in Verilator (cocotb) against memory models: outputs and cycles.

``simulate(kernel, sv, build_dir, inputs, scalars, latency=2, backpressure=0.3)`` builds once
per ``build_dir`` (incrementally, through :mod:`pycde_accel.sim.runner`) and returns :class:`SimResult`:
the output array, the cycle of each store, and ``elements_per_cycle`` = (n-1) / (last store -
first store), the steady-state rate. The testbench is ``kernel_tb.py`` (``pipeline_tb.py`` for
:func:`simulate_static`), next to this file: the tests of tests/lowering and bench/kernels.py use
them (the tool does not).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pycde_accel.errors import UserError
from pycde_accel.sim import runner

#: where the testbenches are (cocotb imports them by module name from this folder)
HERE = Path(__file__).resolve().parent


class SimIncomplete(UserError):
    """The cycle limit ran out before every store completed: ``acked`` of the kernel's ``n``
    in ``cycles`` cycles (0 stores: a deadlock; some: maybe only too slow for the limit)."""

    def __init__(self, msg: str, acked: int, cycles: int):
        super().__init__(msg)
        self.acked, self.cycles = acked, cycles


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


def build(sv: Path, top: str, build_dir: Path, sources=()):
    """Verilator build of one kernel's SV (and ``sources``, simulation models it instantiates)
    through :mod:`pycde_accel.sim.runner`."""
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    filelist = build_dir / "filelist.f"
    filelist.write_text("".join(f"{Path(f).resolve()}\n" for f in [*sources, sv]))
    # tests run short: compile fast rather than simulate fast
    # (cache_root: built once per SV text, so several runs share one build)
    return runner.build(filelist, top, cache_root=build_dir, build_args=["-CFLAGS", "-O0"])


def simulate(kernel, sv: Path, build_dir: Path, inputs: dict, scalars: dict | None = None, *,
             latency: int = 2, backpressure: float = 0.3, seed: int = 0,
             max_cycles: int | None = None, tag: str = "run") -> SimResult:
    build_dir = Path(build_dir)
    sim = build(sv, kernel.name, build_dir)
    ports = kernel.ports()
    cfg = {"ports": ports, "latency": latency, "backpressure": backpressure, "seed": seed,
           "inputs": {k: [int(x) for x in np.asarray(v).ravel()] for k, v in inputs.items()},
           "scalars": {k: int(v) for k, v in (scalars or {}).items()},
           "max_cycles": max_cycles or 200 * kernel.n + 1000}
    cfg_path, res_path = build_dir / f"{tag}.cfg.json", build_dir / f"{tag}.result.json"
    cfg_path.write_text(json.dumps(cfg))
    if res_path.exists():
        res_path.unlink()
    runner.run(sim, "kernel_tb", build_dir / tag, module_dirs=[HERE],
               extra_env={"KERNEL_TB_CONFIG": str(cfg_path.resolve()),
                          "KERNEL_TB_RESULT": str(res_path.resolve())})
    if not res_path.exists():
        raise UserError(f"simulation of {kernel.name} produced no result (see {build_dir / tag}/sim.log)")
    r = json.loads(res_path.read_text())
    if r["acked"] != kernel.n:
        raise SimIncomplete(f"simulation of {kernel.name}: {r['acked']} of {kernel.n} stores "
                            f"completed in {r['cycles']} cycles (deadlock or too slow)",
                            r["acked"], r["cycles"])
    return SimResult(np.array(r["out"], dtype=np.int64), r["store_cycles"], r["cycles"],
                     r["done_cycle"])


def static_ports(kernel) -> tuple[dict, dict]:
    """Port of each tensor input and scalar of ``kernel`` lowered by the static route:
    ``in<K>`` with K the function argument index (tensor inputs first, then scalars)."""
    return kernel.arg_ports()


def simulate_static(kernel, sv: Path, build_dir: Path, inputs: dict, scalars: dict | None = None,
                    *, backpressure: float = 0.3, seed: int = 0, tag: str = "run",
                    sources=()) -> SimResult:
    """Run a static-route kernel (``pipeline_tb.py``): all ``n`` results in order, with the
    cycle of each output beat (``store_cycles``). ``sources``: simulation models it needs
    (``rtl_lib.ecp5.SIM_MODEL`` for the ``static-ecp5`` route)."""
    build_dir = Path(build_dir)
    sim = build(sv, kernel.name, build_dir, sources)
    ports, sc = static_ports(kernel)
    cfg = {"ports": ports, "scalars": sc, "n": kernel.n, "backpressure": backpressure,
           "seed": seed, "inputs": {k: [int(x) for x in np.asarray(v).ravel()]
                                    for k, v in inputs.items()},
           "scalar_values": {k: int(v) for k, v in (scalars or {}).items()},
           "max_cycles": 20 * kernel.n + 1000}
    cfg_path, res_path = build_dir / f"{tag}.cfg.json", build_dir / f"{tag}.result.json"
    cfg_path.write_text(json.dumps(cfg))
    if res_path.exists():
        res_path.unlink()
    runner.run(sim, "pipeline_tb", build_dir / tag, module_dirs=[HERE],
               extra_env={"KERNEL_TB_CONFIG": str(cfg_path.resolve()),
                          "KERNEL_TB_RESULT": str(res_path.resolve())})
    if not res_path.exists():
        raise UserError(f"simulation of {kernel.name} produced no result (see {build_dir / tag}/sim.log)")
    r = json.loads(res_path.read_text())
    if len(r["out"]) != kernel.n:
        raise UserError(f"simulation of {kernel.name}: {len(r['out'])} of {kernel.n} results in "
                        f"{r['cycles']} cycles")
    return SimResult(np.array(r["out"], dtype=np.int64), r["out_cycles"], r["cycles"], None)
