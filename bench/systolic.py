"""Systolic core utilization in Verilator: measured cycles against the ideal M*K*N/(rows*cols).

For each array size of the sweep, the core (default widths: int8 operands, 32-bit accumulator)
is built once in Verilator and driven by the cocotb bench without back-pressure:

* one tile (M=rows, N=cols, K=256): ideal K cycles;
* T back-to-back tiles of K=256 (T=4 and T=16): ideal T*K cycles;
* a burst of short tiles (K=rows, the shortest K that does not stall): ideal T*rows.

Measured = cycles from the first input beat to the last output beat, inclusive. Every count is
also compared with the core's documented formula (``rtl_lib.systolic.run_cycles``).
The last stdout line is one JSON object: ``util_single_tile`` and ``util_back_to_back`` (minimum
over the sweep, K=256, 16 tiles), ``util_back_to_back_4`` (4 tiles), ``cycles_match_formula``,
and per-size figures.

    python bench/systolic.py [--sizes 2x2,4x4,8x8,16x16,4x8] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from pycde_accel.config import AccelConfig, parse_array
from pycde_accel.rtl_lib.systolic import run_cycles

# the core's testbench and its driver are test code (tests/rtl_lib)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "rtl_lib"))
from systolic_sim import build_core, run_systolic  # noqa: E402

K = 256


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2x2,4x4,8x8,16x16,4x8")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "pycde-accel-bench-cache"),
                    help="Verilator build cache (reused between runs)")
    args = ap.parse_args(argv)
    sizes = [parse_array(s) for s in args.sizes.split(",")]
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)

    rows_out = []
    match = True
    t0 = time.monotonic()
    for rows, cols in sizes:
        cfg = AccelConfig(rows=rows, cols=cols)
        tb = time.monotonic()
        sim = build_core(cfg, cache)
        build_s = time.monotonic() - tb
        runs = [
            {"name": "single", "ks": [K], "seed": 1},
            {"name": "b2b4", "ks": [K] * 4, "seed": 2},
            {"name": "b2b16", "ks": [K] * 16, "seed": 3},
            {"name": "short", "ks": [rows] * 16, "seed": 4},
        ]
        with tempfile.TemporaryDirectory(prefix="bench_systolic_") as tmp:
            res = {r["name"]: r for r in run_systolic(sim, cfg, runs, tmp)}
        fig = {"array": f"{rows}x{cols}", "build_s": round(build_s, 1)}
        for name, r in res.items():
            ideal = sum(r["ks"])  # M*K*N/(rows*cols) with M=rows, N=cols per tile
            formula = run_cycles(rows, cols, r["ks"])
            match &= r["cycles"] == formula
            fig[name] = {"tiles": len(r["ks"]), "k": r["ks"][0], "cycles": r["cycles"],
                         "formula": formula, "ideal": ideal,
                         "util": round(ideal / r["cycles"], 4)}
        rows_out.append(fig)

    hdr = f"{'array':>6} {'run':>7} {'tiles':>5} {'K':>4} {'ideal':>6} {'cycles':>7} " \
          f"{'formula':>7} {'util':>6}"
    print("systolic core, Verilator, no back-pressure; cycles = first input beat .. last "
          "output beat (inclusive)")
    print(hdr)
    print("-" * len(hdr))
    for fig in rows_out:
        for name in ("single", "b2b4", "b2b16", "short"):
            f = fig[name]
            print(f"{fig['array']:>6} {name:>7} {f['tiles']:>5} {f['k']:>4} {f['ideal']:>6} "
                  f"{f['cycles']:>7} {f['formula']:>7} {f['util']:>6.3f}")
    print(f"total time {time.monotonic() - t0:.0f} s (builds cached in {cache})")
    summary = {
        "util_single_tile": min(f["single"]["util"] for f in rows_out),
        "util_back_to_back": min(f["b2b16"]["util"] for f in rows_out),
        "util_back_to_back_4": min(f["b2b4"]["util"] for f in rows_out),
        "cycles_match_formula": bool(match),
        "k": K,
        "sizes": {f["array"]: {"single": f["single"]["util"], "b2b4": f["b2b4"]["util"],
                               "b2b16": f["b2b16"]["util"], "short_k_eq_rows": f["short"]["util"]}
                  for f in rows_out},
    }
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
