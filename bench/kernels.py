"""Throughput and size of the post-op kernels under each lowering route.

For every kernel in ``pycde_accel.lowering.kernels.KERNELS`` and every route (``dynamic-stock``:
CIRCT's handshake lowering with handshake-insert-buffers; ``dynamic``: with the project's
handshake passes, the default; ``static``: scf -> pipeline.scheduled -> hw, a fixed-latency
II=1 pipeline fed by element streams; ``calyx``: scf -> calyx with the project's calyx passes ->
fsm -> hw, measured behind its streaming wrapper ``lowering.stream``, streams always valid and
ready, then also placed with nextpnr for Fmax) this lowers the kernel for ``--n`` elements, runs it in
Verilator with memories that answer after ``--latency`` cycles (static: streams always valid
and ready) and no back-pressure, and measures the steady-state rate (elements per cycle between the first and
the last store), then synthesizes it with Yosys (synth_ecp5) for LUT4 and FF counts. A route
that does not reach SV records the stage and error that stopped it.

Usage: python bench/kernels.py [--n 256] [--latency 1] [--kernels a,b] [--routes r1,r2]
                               [--no-synth] [--work DIR]
The last stdout line is one JSON object: ``min_elements_per_cycle`` (the slowest kernel under
the default route) and ``kernels``: kernel -> route -> {elements_per_cycle, cycles_per_element,
lut, ff[, fmax_mhz]} (``synth_error`` in place of the sizes when a tool failed) or
{error} (the stage that stopped the route, or ``simulation: ...`` when the kernel's run
failed; the run goes on with the next cell). A handshake run's cycle limit follows the kernel's
rate (:func:`_handshake_rate`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from pycde_accel.errors import UserError
from pycde_accel.lowering import build_kernel, kernels

# the kernel testbenches and their driver are test code (tests/lowering)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "lowering"))
from kernel_sim import SimIncomplete, simulate, simulate_static  # noqa: E402

ROUTES = ("dynamic-stock", "dynamic", "static", "calyx")
#: Routes placed with nextpnr too (Fmax): the calyx column's figures.
PLACED = ("calyx",)
DEFAULT_ROUTE = "dynamic"


def _inputs(k, rng):
    ins = {nm: rng.integers(-(1 << 20), 1 << 20, k.n) if ty == "i32" else rng.integers(-128, 128, k.n)
           for nm, ty in k.inputs}
    sc = {"m0": 1 << 30 | 12345, "shift": 7, "ma": 1000, "mb": -700, "s": 10}
    return ins, {nm: sc[nm] for nm, _ in k.scalars}


def measure(name: str, route: str, n: int, latency: int, work: Path, synth: bool) -> dict:
    k = kernels.KERNELS[name](n)
    out = work / name / route
    try:
        lowered = build_kernel(k, out, route=route)
    except UserError as e:
        return {"error": str(e).split("; input saved")[0]}
    if lowered.sv is None:
        return {"error": f"route {route} produced no SV"}
    ins, sc = _inputs(k, np.random.default_rng(0))
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the Verilator build is chatty
            if route == "calyx":
                eps = _calyx_rate(k, lowered, out / "sim", ins, sc)
            elif route == "static":
                eps = simulate_static(k, lowered.sv, out / "sim", ins, sc,
                                      backpressure=0.0).elements_per_cycle
            else:
                eps = _handshake_rate(k, lowered.sv, out / "sim", ins, sc, latency)
    except (UserError, OSError, KeyError, ValueError, IndexError, ZeroDivisionError) as e:
        # a kernel that fails in simulation must not end the run: the cell records why
        return {"error": f"simulation: {str(e).splitlines()[0]}"}
    fig = {"elements_per_cycle": round(eps, 4),
           "cycles_per_element": round(1 / eps, 3) if eps else None}
    if synth:
        from pycde_accel.fpga.synth import synthesize
        try:
            rep = synthesize([lowered.sv], k.name, "ecp5-85f", out / "synth",
                             place=route in PLACED)
        except UserError as e:  # a tool that fails on one kernel must not end the run
            fig["synth_error"] = str(e).splitlines()[0]
            return fig
        fig.update(lut=rep.lut, ff=rep.ff, dsp=rep.dsp, carry=rep.carry)
        if rep.placed:
            fig["fmax_mhz"] = round(min(c["achieved_mhz"] for c in rep.clocks.values()), 1)
    return fig


#: Cycle budget of a handshake run: first this many per element (+ fill), then, when stores still
#: complete but too slowly, a budget from the rate measured in that run.
FIRST_BUDGET_PER_ELEMENT = 200
MAX_BUDGET_PER_ELEMENT = 20000


def _handshake_rate(k, sv: Path, work: Path, ins: dict, sc: dict, latency: int) -> float:
    """Elements per cycle of a handshake-route kernel. The cycle limit follows the kernel's
    rate: a run that completes some but not all stores in its budget is run again with the
    budget its own rate needs (twice that, plus the fill), so a slow route (the stock lowering
    of lut takes hundreds of cycles per element) is measured, not cut off; a run with no store
    at all is a deadlock and raises."""
    budget = FIRST_BUDGET_PER_ELEMENT * k.n + 2000
    while True:
        try:
            return simulate(k, sv, work, ins, sc, latency=latency, backpressure=0.0,
                            max_cycles=budget).elements_per_cycle
        except SimIncomplete as e:
            need = 2 * e.cycles * k.n // max(e.acked, 1) + 2000
            if e.acked == 0 or budget >= MAX_BUDGET_PER_ELEMENT * k.n or need <= budget:
                raise
            budget = min(need, MAX_BUDGET_PER_ELEMENT * k.n)


def _calyx_rate(k, lowered, work: Path, ins: dict, sc: dict) -> float:
    """Elements per cycle between the first and the last result of ``<name>_stream``."""
    from pycde_accel.lowering.stream import emit_stream
    from pycde_accel.sim import runner

    tb_dir = Path(__file__).resolve().parents[1] / "tests" / "lowering"  # stream_tb.py
    filelist = emit_stream(k, lowered, work / "sv")
    sim = runner.build(filelist, f"{k.name}_stream", cache_root=work / "build")
    cfg = {"inputs": {nm: [int(v) for v in vs] for nm, vs in ins.items()},
           "scalars": {nm: int(v) for nm, v in sc.items()}, "n": k.n, "p_valid": 1.0,
           "p_ready": 1.0, "seed": 0}
    cfg_path, res = work / "run.json", work / "run.result.json"
    cfg_path.write_text(json.dumps(cfg))
    runner.run(sim, "stream_tb", work / "run", module_dirs=[tb_dir],
               extra_env={"STREAM_TB_CONFIG": str(cfg_path), "STREAM_TB_RESULT": str(res)})
    edges = json.loads(res.read_text())["edges"]
    return (len(edges) - 1) / (edges[-1] - edges[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--latency", type=int, default=1)
    ap.add_argument("--kernels", default=",".join(kernels.KERNELS))
    ap.add_argument("--routes", default=",".join(ROUTES))
    ap.add_argument("--no-synth", action="store_true")
    ap.add_argument("--work", default=None, help="keep builds here (default: a temporary folder)")
    a = ap.parse_args(argv)
    names = [s for s in a.kernels.split(",") if s]
    routes = [s for s in a.routes.split(",") if s]
    figures: dict[str, dict] = {}
    with contextlib.ExitStack() as stack:
        work = Path(a.work) if a.work else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        for name in names:
            figures[name] = {}
            for route in routes:
                fig = measure(name, route, a.n, a.latency, work, not a.no_synth)
                figures[name][route] = fig
                if "error" in fig:
                    why = "failed" if fig["error"].startswith("simulation: ") else "no SV"
                    print(f"{name:16s} {route:14s} {why}: {fig['error']}", flush=True)
                else:
                    size = f"  LUT4 {fig['lut']:6d}  FF {fig['ff']:6d}" if "lut" in fig else ""
                    if "synth_error" in fig:
                        size = f"  synthesis failed: {fig['synth_error']}"
                    if "fmax_mhz" in fig:
                        size += f"  Fmax {fig['fmax_mhz']:6.1f} MHz"
                    print(f"{name:16s} {route:14s} {fig['elements_per_cycle']:.4f} elements/cycle "
                          f"({fig['cycles_per_element']} cycles/element){size}", flush=True)
    default = [f[DEFAULT_ROUTE]["elements_per_cycle"] for f in figures.values()
               if DEFAULT_ROUTE in f and "elements_per_cycle" in f[DEFAULT_ROUTE]]
    summary = {"min_elements_per_cycle": min(default) if len(default) == len(figures) else None,
               "n": a.n, "memory_latency": a.latency, "default_route": DEFAULT_ROUTE,
               "kernels": figures}
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
