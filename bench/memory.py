"""The board memory's cost: cycles with the target board's DRAM against an ideal memory, and the
bandwidth each model would need to run compute-bound.

``python bench/memory.py [--models mlp,lenet5,resblock] [--configs NAME,...] [--sim]``

For each built-in model on each config (:func:`configs`: the default 8x8 / 64-bit AXI at
100 MHz and at 150 MHz, 16x8 on a 64-bit bus and 16x16 on a 128-bit bus at 150 MHz, the Arty
A7-100T preset)
it prints the perf model's cycles with the ideal memory (one AXI beat per cycle each way) and
with the board's (``config.memory = "board"``: the target preset's DRAM at the config's clock,
``pycde_accel.perfmodel.memory``), the slowdown, what the board gives per cycle and what the
layers demand to run compute-bound (bytes per cycle and GB/s), and the bottleneck.
``--sim`` also runs each model with the board memory in Verilator (one build per config,
bit-exact check) and prints the simulated cycles and the perf model's error (bound 5% per
layer).

The last stdout line is JSON: per config and model ``ideal_cycles``, ``board_cycles``
(predicted), ``slowdown``, ``board_gb_s``, ``board_bytes_per_cycle``, ``need_bytes_per_cycle``,
``need_gb_s``, ``bottleneck`` (and ``sim_cycles``, ``max_layer_error_pct`` with ``--sim``);
``max_slowdown`` over all.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

BOUND_PCT = 5.0


def configs():
    from pycde_accel.config import AccelConfig
    base = AccelConfig()
    return {
        "8x8-64b-100MHz": base,
        "8x8-64b-150MHz": base.replace(clock_mhz=150.0),
        "16x8-64b-150MHz": base.replace(rows=16, cols=8, clock_mhz=150.0),
        "16x16-128b-150MHz": base.replace(rows=16, cols=16, axi_data_width=128, clock_mhz=150.0),
        "xc7a100t-8x8-64b-100MHz": base.replace(target="xc7a100t"),
    }


def main(argv=None) -> int:
    from pycde_accel import frontend, perfmodel
    from pycde_accel.backend import compile_program
    from pycde_accel.perfmodel import demand
    from pycde_accel.simulate import build_accelerator, simulate

    all_cfgs = configs()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mlp,lenet5,resblock")
    ap.add_argument("--configs", default=",".join(all_cfgs),
                    help=f"comma-separated, of {', '.join(all_cfgs)}")
    ap.add_argument("--sim", action="store_true", help="also simulate with the board memory")
    ap.add_argument("--work", default=None)
    args = ap.parse_args(argv)
    names = [c for c in args.configs.split(",") if c]
    bad = [c for c in names if c not in all_cfgs]
    if bad:
        print(f"error: unknown config {bad[0]!r} (one of {', '.join(all_cfgs)})", file=sys.stderr)
        return 2
    models = [m for m in args.models.split(",") if m]
    fes = {m: frontend.run(m, seed=0, eval_batches=1) for m in models}
    out, worst_slow, worst_err, ok = {}, 1.0, 0.0, True
    with tempfile.TemporaryDirectory(prefix="bench_memory_") as tmp:
        work = Path(args.work or tmp)
        for cname in names:
            cfg = all_cfgs[cname].validate()
            ideal_cfg = cfg.replace(memory="ideal")
            print(f"{cname}: {cfg.array} array, {cfg.axi_data_width}-bit AXI, target "
                  f"{cfg.target} at {cfg.clock_mhz:g} MHz")
            sim = build_accelerator(cfg, work / cname, defer=True) if args.sim else None
            print(f"  {'model':9} {'ideal':>9} {'board':>9} {'slowdn':>7} {'board B/c':>9} "
                  f"{'need B/c':>9} {'need GB/s':>9} {'bottleneck':>10}"
                  + (f" {'simulated':>10} {'max err':>8}" if sim else ""))
            out[cname] = {}
            for m in models:
                compiled = compile_program(fes[m], cfg)
                ideal = perfmodel.predict(compiled, ideal_cfg).total_cycles
                pred = perfmodel.predict(compiled, cfg)
                board = pred.total_cycles
                s = demand.summary(compiled, cfg)
                slow = board / ideal
                worst_slow = max(worst_slow, slow)
                row = {"ideal_cycles": ideal, "board_cycles": board, "slowdown": round(slow, 4),
                       "board_gb_s": s["board"]["peak_gb_s"] if s["board"] else None,
                       "board_bytes_per_cycle": s["board_bytes_per_cycle"],
                       "need_bytes_per_cycle": s["need_bytes_per_cycle"],
                       "need_gb_s": s["need_gb_s"], "bottleneck": s["bottleneck"]}
                line = (f"  {m:9} {ideal:>9} {board:>9} {slow:>7.3f} "
                        f"{s['board_bytes_per_cycle']:>9.3f} {s['need_bytes_per_cycle']:>9.3f} "
                        f"{s['need_gb_s']:>9.3f} {s['bottleneck']:>10}")
                if sim is not None:
                    r = simulate(fes[m], cfg, work / cname / m, sim=sim, compiled=compiled)
                    ok &= r.bit_exact
                    err = max(abs(100.0 * (l["predicted_cycles"] - l["cycles"]) / l["cycles"])
                              for l in r.layers)
                    worst_err = max(worst_err, err)
                    row.update(sim_cycles=r.total_cycles, max_layer_error_pct=round(err, 3),
                               bit_exact=r.bit_exact)
                    line += f" {r.total_cycles:>10} {err:>7.2f}%"
                out[cname][m] = row
                print(line)
    summary = {"max_slowdown": round(worst_slow, 4), "configs": out}
    if args.sim:
        summary.update(max_layer_error_pct=round(worst_err, 3), bound_pct=BOUND_PCT,
                       bit_exact=ok)
        print(f"perf model vs Verilator with the board memory: max |error| over layers "
              f"{worst_err:.2f}% (bound {BOUND_PCT}%)")
    print(json.dumps(summary))
    return 0 if ok and worst_err <= BOUND_PCT else 1


if __name__ == "__main__":
    sys.exit(main())
