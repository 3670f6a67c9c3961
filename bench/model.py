"""The cycle model against Verilator: predicted vs simulated cycles per layer of the built-ins.

``python bench/model.py [--array 8x8] [--axi 64] [--clock 100] [--memory board|ideal]
[--models mlp,lenet5,resblock] [--gemm 64x64x64]``

Every built-in model is compiled by the back end and run on the whole accelerator in Verilator
(``simulate.simulate``: one Verilator build for the config, bit-exact check); next to each layer's
measured cycles it prints the cycles ``pycde_accel.perfmodel`` predicts from the same command
list, and the error. ``--gemm MxNxK`` adds single GEMM layers (``gemm_bench.gemm_program``, as
bench/layer.py runs them). ``--clock`` / ``--memory``: the config's clock and memory model (the
board memory's bandwidth is charged at the clock, ``pycde_accel.perfmodel.memory``; a high
clock gives fewer bytes per cycle). Bound: every layer within 5%.

The last stdout line is JSON: ``max_model_error_pct`` (over every layer), ``max_total_error_pct``
(over the models' totals), the per-model totals, the bound and the config.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

BOUND_PCT = 5.0


def _err(pred: int, sim: int) -> float:
    return 100.0 * (pred - sim) / sim if sim else 0.0


def main(argv=None) -> int:
    from pycde_accel import frontend, perfmodel
    from pycde_accel.config import AccelConfig, parse_array
    from pycde_accel.simulate import build_accelerator, run_layers, simulate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--axi", type=int, default=64, help="AXI data width in bits")
    ap.add_argument("--models", default="mlp,lenet5,resblock")
    ap.add_argument("--gemm", default="", help="comma-separated MxNxK GEMM layers to add")
    ap.add_argument("--clock", type=float, default=100.0, help="clock in MHz (default 100)")
    ap.add_argument("--memory", default="board", choices=("board", "ideal"))
    ap.add_argument("--work", default=None, help="work folder (default: a temporary one)")
    args = ap.parse_args(argv)
    rows, cols = parse_array(args.array)
    cfg = AccelConfig(rows=rows, cols=cols, axi_data_width=args.axi, clock_mhz=args.clock,
                      memory=args.memory).validate()
    worst, worst_total, totals, ok = 0.0, 0.0, {}, True
    with tempfile.TemporaryDirectory(prefix="bench_model_") as tmp:
        work = Path(args.work or tmp)
        t0 = time.time()
        sim = build_accelerator(cfg, work)
        print(f"{cfg.array} array, {cfg.axi_data_width}-bit AXI, {cfg.memory} memory at "
              f"{cfg.clock_mhz:g} MHz (Verilator build "
              f"{time.time() - t0:.0f} s)")
        print(f"  {'model':10} {'layer':14} {'op':8} {'simulated':>10} {'predicted':>10} "
              f"{'error':>8}")
        for m in [m for m in args.models.split(",") if m]:
            fe = frontend.run(m, seed=0, eval_batches=1)
            r = simulate(fe, cfg, work / m, sim=sim)
            ok &= r.bit_exact
            for l in r.layers:
                e = _err(l["predicted_cycles"], l["cycles"])
                worst = max(worst, abs(e))
                print(f"  {m:10} {str(l['name'])[:14]:14} {str(l['op'])[:8]:8} {l['cycles']:>10} "
                      f"{l['predicted_cycles']:>10} {e:>+7.2f}%")
            et = _err(r.predicted_cycles, r.total_cycles)
            worst_total = max(worst_total, abs(et))
            totals[m] = {"simulated": r.total_cycles, "predicted": r.predicted_cycles,
                         "error_pct": round(et, 3), "bit_exact": r.bit_exact}
            print(f"  {m:10} {'total':14} {'':8} {r.total_cycles:>10} {r.predicted_cycles:>10} "
                  f"{et:>+7.2f}%")
        from gemm_bench import gemm_program
        for g in [g for g in args.gemm.split(",") if g]:
            M, N, K = (int(v) for v in g.lower().split("x"))
            b = gemm_program(cfg, M, N, K, seed=1)
            runs, _ = run_layers(cfg, sim, b.compiled.layers, b.compiled.load_inputs([b.a]),
                                 work / f"gemm_{g}", stall_cycles=0)
            pred = perfmodel.predict(b.compiled, cfg)
            s, p = runs[0]["cycles"], pred.layers[0].cycles
            e = _err(p, s)
            worst = max(worst, abs(e))
            totals[f"gemm_{g}"] = {"simulated": s, "predicted": p, "error_pct": round(e, 3)}
            print(f"  {'gemm':10} {g:14} {'gemm':8} {s:>10} {p:>10} {e:>+7.2f}%")
    print(f"max |error| over layers {worst:.2f}% (bound {BOUND_PCT}%), over model totals "
          f"{worst_total:.2f}%")
    print(json.dumps({"max_model_error_pct": round(worst, 3),
                      "max_total_error_pct": round(worst_total, 3), "bound_pct": BOUND_PCT,
                      "within_bound": worst <= BOUND_PCT, "bit_exact": ok,
                      "array": cfg.array, "axi_data_width": cfg.axi_data_width,
                      "clock_mhz": cfg.clock_mhz, "memory": cfg.memory,
                      "models": totals}))
    return 0 if worst <= BOUND_PCT and ok else 1


def cli(argv=None) -> int:
    """``main`` with a bad config (e.g. cols not a multiple of the AXI beat) as one line and
    exit status 2, not a traceback."""
    from pycde_accel.errors import UserError

    try:
        return main(argv)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(cli())
