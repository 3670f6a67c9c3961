"""Print the back end's per-layer figures: ``python -m pycde_accel.backend [MODEL ...] [--array RxC]``.

For each model (default: the built-ins) it compiles the program, runs the golden executor on the
model's example input, checks the output bit-exact against the integer reference, and prints per
layer the op, M/N/K, tiles, MACs, loop order and DRAM bytes (the executor's counts, equal to the
compiler's) and the AXI beats a beat-aligned DMA would move for the same accesses. The last stdout line is a JSON object of the per-model totals.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np


def main(argv=None) -> int:
    from ..config import AccelConfig, parse_array
    from ..errors import UserError
    from .. import frontend
    from ..frontend import reference
    from . import compile_program, executor

    ap = argparse.ArgumentParser(prog="python -m pycde_accel.backend", description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=["mlp", "lenet5", "resblock"])
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--axi", type=int, default=64, help="AXI data width in bits")
    args = ap.parse_args(argv)
    try:
        rows, cols = parse_array(args.array)
        cfg = AccelConfig(rows=rows, cols=cols, axi_data_width=args.axi).validate()
        summary = {}
        for spec in args.models:
            fe = frontend.run(spec, eval_batches=1)
            xq = reference.quantize_inputs(fe.quantized, [t.detach().double().numpy()
                                                          for t in fe.model.example_inputs])
            cp = compile_program(fe, cfg)
            outs, ex = executor.run(cp, xq)
            ok = all(np.array_equal(a, b) for a, b in zip(outs, reference.run(fe.quantized, xq).outputs))
            print(f"{spec} on {cfg.array}, AXI {args.axi} bit: executor bit-exact with the reference: {ok}")
            print(f"  {'#':>2} {'op':8} {'layer':14} {'module':14} {'M':>5} {'N':>5} {'K':>5} {'tiles':>6} "
                  f"{'MACs':>8} {'order':12} {'read B':>8} {'write B':>8} {'rd beats':>8} {'wr beats':>8}")
            for s, c in zip(cp.stats, ex.layers):
                print(f"  {s['index']:>2} {s['op']:8} {s['name'][:14]:14} {s['module'][:14]:14} "
                      f"{s.get('M', ''):>5} {s.get('N', ''):>5} {s.get('K', ''):>5} {c.tiles:>6} "
                      f"{s.get('macs', 0):>8} {s.get('order', ''):12} {c.dram_bytes_read:>8} "
                      f"{c.dram_bytes_written:>8} {c.dram_beats_read:>8} {c.dram_beats_written:>8}")
            t = cp.totals()
            t["bit_exact"] = ok
            t["dram_beats_read"] = sum(c.dram_beats_read for c in ex.layers)
            t["dram_beats_written"] = sum(c.dram_beats_written for c in ex.layers)
            print(f"  total: {t['tiles']} tiles, {t['macs']} MACs, {t['dram_bytes_read']} B read, "
                  f"{t['dram_bytes_written']} B written (+{t['program_bytes']} B of descriptors), "
                  f"image {t['image_bytes']} B, core cycles {t['core_cycles']}; "
                  f"{t['dram_beats_read']} + {t['dram_beats_written']} AXI beats read + written "
                  f"by a beat-aligned DMA")
            summary[spec] = t
            if not ok:
                print(json.dumps(summary, sort_keys=True))
                return 1
        print(json.dumps(summary, sort_keys=True))
        return 0
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
