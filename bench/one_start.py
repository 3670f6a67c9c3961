"""Whole model per start against one start per layer, in Verilator.

``python bench/one_start.py [--models mlp,lenet5,resblock,examples/small_cnn.py] [--array RxC]``

For each model, one accelerator build (the default config unless ``--array``) runs the model
twice on the native Verilator harness, bit-exact each time:

* ``per_layer``: the host starts the accelerator once per layer (``cmd_base``, ``cmd_count``,
  ``ctrl.start``, wait for the irq, read ``events``/``status``/the six counters, clear the
  events), as before the FENCE command;
* ``one_start``: one start for the whole command list (a FENCE between consecutive layers,
  dispatch holding it until everything earlier finished), then the counters, ``stamp_count``
  and the FENCEs' stamps.

``host_cycles`` is measured, not predicted: the simulated clock from the cycle the host
begins the first ``ctrl.start`` write to the cycle it sees the last irq, so it includes every
CSR write and read the host makes between starts (each AXI4-Lite access takes 3-4 cycles of
the harness; the irq is seen the cycle it rises). A real host adds its interrupt latency and
slower bus accesses per start on top; those are not simulated. ``accel_cycles`` is the sum of
the per-layer counters (per start: start to done; one start: the differences of the stamps).
Also per run: the perf model's worst per-layer error (bound 5%). ``--host-latency N`` adds,
apart and labelled as an estimate, what a host that spends N more cycles per start would see
(``estimated_per_layer_cycles``, ``estimated_one_start_cycles``).

The last stdout line is JSON: per model ``layers``, ``per_layer_host_cycles``,
``one_start_host_cycles``, ``saved_cycles``, ``saved_pct``, ``per_layer_accel_cycles``,
``one_start_accel_cycles``, ``bit_exact``, ``max_model_error_pct``; ``total_saved_cycles``,
``min_saved_pct``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

MODELS = "mlp,lenet5,resblock,examples/small_cnn.py"


def _err_pct(r) -> float:
    errs = [abs(l["cycles"] - l["predicted_cycles"]) / l["cycles"] * 100
            for l in r.layers if l.get("predicted_cycles") is not None and l["cycles"]]
    return round(max(errs), 2) if errs else float("nan")


def main(argv=None) -> int:
    from pycde_accel import frontend
    from pycde_accel.backend import compile_program
    from pycde_accel.config import AccelConfig, parse_array
    from pycde_accel.simulate import build_accelerator, simulate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--array", default=None, help="RxC (default: the default config's)")
    ap.add_argument("--work", default=None)
    ap.add_argument("--host-latency", type=int, default=0, metavar="CYCLES",
                    help="also estimate the totals for a host that takes CYCLES more per start "
                         "(interrupt entry, a slower bus) than the simulated CSR accesses "
                         "(an estimate, printed apart; default 0: only what was simulated)")
    args = ap.parse_args(argv)
    cfg = AccelConfig()
    if args.array:
        r, c = parse_array(args.array)
        cfg = cfg.replace(rows=r, cols=c)
    root = Path(args.work or tempfile.mkdtemp(prefix="one_start_"))
    models = [m for m in args.models.split(",") if m]
    repo = Path(__file__).resolve().parents[1]
    spec = {m: str(repo / m) if m.endswith(".py") and not Path(m).exists() else m
            for m in models}
    fes = {m: frontend.run(spec[m], eval_batches=1) for m in models}
    cps = {m: compile_program(fes[m], cfg) for m in models}
    builds = {}
    out = {}
    print(f"{cfg.array} array, {cfg.axi_data_width}-bit AXI, {cfg.memory} memory; cycles from "
          f"the first start to the last done (host CSR traffic included)")
    print(f"  {'model':28} {'layers':>6} {'per-layer':>10} {'one start':>10} {'saved':>7} "
          f"{'saved %':>7} {'accel/layer':>11} {'accel/one':>10} {'model err %':>11}")
    for m in models:
        rowred = cps[m].uses_rowred
        if rowred not in builds:
            builds[rowred] = build_accelerator(cfg, root / f"build_{int(rowred)}", defer=True,
                                               rowred=rowred)
        runs = {}
        for mode, per_layer in (("per_layer", True), ("one_start", False)):
            runs[mode] = simulate(fes[m], cfg, root / Path(m).stem / mode, sim=builds[rowred],
                                  compiled=cps[m], per_layer_starts=per_layer, engine="native")
        a, b = runs["per_layer"], runs["one_start"]
        saved = a.host_cycles - b.host_cycles
        out[m] = {"layers": len(b.layers), "per_layer_host_cycles": a.host_cycles,
                  "one_start_host_cycles": b.host_cycles, "saved_cycles": saved,
                  "saved_pct": round(100 * saved / a.host_cycles, 2),
                  "per_layer_accel_cycles": a.total_cycles,
                  "one_start_accel_cycles": b.total_cycles,
                  "bit_exact": a.bit_exact and b.bit_exact,
                  "max_model_error_pct": max(_err_pct(a), _err_pct(b))}
        o = out[m]
        if args.host_latency:
            lat = args.host_latency
            o["estimated_per_layer_cycles"] = a.host_cycles + lat * a.starts
            o["estimated_one_start_cycles"] = b.host_cycles + lat * b.starts
        print(f"  {m:28} {o['layers']:>6} {a.host_cycles:>10} {b.host_cycles:>10} {saved:>7} "
              f"{o['saved_pct']:>7.2f} {a.total_cycles:>11} {b.total_cycles:>10} "
              f"{o['max_model_error_pct']:>11.2f}" + ("" if o["bit_exact"] else "  NOT BIT-EXACT"))
    if args.host_latency:
        print(f"  estimate with {args.host_latency} more host cycles per start (not simulated):")
        for m, o in out.items():
            e1, e2 = o["estimated_per_layer_cycles"], o["estimated_one_start_cycles"]
            print(f"  {m:28} {e1:>10} -> {e2:>10}: {100 * (e1 - e2) / e1:.2f}% saved")
    summary = {"models": out, "total_saved_cycles": sum(o["saved_cycles"] for o in out.values()),
               "min_saved_pct": min(o["saved_pct"] for o in out.values())}
    print(json.dumps(summary, sort_keys=True))
    return 0 if all(o["bit_exact"] for o in out.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
