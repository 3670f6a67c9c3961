"""One int8 GEMM layer on the whole accelerator in Verilator, against its roofline.

``python bench/layer.py [--m 256 --n 256 --k 256] [--array 8x8] [--axi 64]``

C = requant(A @ B + bias) with random int8 A (M x K) and weights B (K x N), compiled by the
back end (``gemm_bench.gemm_program``: A-stationary blocks as deep as the A scratchpad allows, B
panels streamed through the double-buffered B scratchpad) and run by the host driver on the
Verilator model (no watchdog, no AXI pauses). The result is checked bit-exact against the
integer reference. Bounds, from the same compiled program:

* compute bound: tiles x K cycles (the core takes one K-beat per cycle per tile);
* bandwidth bound: max(bytes read, bytes written) / (AXI bytes per beat) cycles (the read and
  write channels are independent, one beat per cycle each), counting every byte the layer's
  commands move (weights, activations, parameters, results) but not the 32-byte commands;

``util_vs_roofline = max(compute bound, bandwidth bound) / measured cycles`` (1.0 = at the
roofline). The last stdout line is JSON with ``util_vs_roofline``, ``cycles``,
``compute_bound_cycles``, ``bandwidth_bound_cycles``. Target >= 0.90 at 256x256x256, 8x8, 64 bit.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    from gemm_bench import gemm_program
    from pycde_accel.config import AccelConfig, parse_array
    from pycde_accel.simulate import run_image

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=256)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--axi", type=int, default=64, help="AXI data width in bits")
    ap.add_argument("--work", default=None, help="work folder (default: a temporary one)")
    args = ap.parse_args(argv)
    rows, cols = parse_array(args.array)
    cfg = AccelConfig(rows=rows, cols=cols, axi_data_width=args.axi).validate()
    bench = gemm_program(cfg, args.m, args.n, args.k, seed=1)
    with tempfile.TemporaryDirectory(prefix="bench_layer_") as tmp:
        work = Path(args.work or tmp)
        t0 = time.time()
        runs, after = run_image(cfg, bench.compiled, bench.compiled.load_inputs([bench.a]), work,
                                stall_cycles=0)
        wall = time.time() - t0
    out = bench.compiled.read_outputs(bytearray(after))[0]
    exact = bool(np.array_equal(out, bench.expected))
    r = runs[0]
    cycles = r["cycles"]
    comp, bw = bench.compute_cycles, bench.bandwidth_cycles
    bound = max(comp, bw)
    f = bench.figures()
    print(f"GEMM {args.m}x{args.n}x{args.k} on {cfg.array}, {args.axi}-bit AXI: {f['tiles']} tiles, "
          f"{f['order']} blocks of {f['block']}, {f['k_chunks']} K chunk(s) per tile, "
          f"{r['cmds']} commands")
    print(f"  measured           {cycles:>9} cycles (bit-exact: {exact})")
    print(f"  compute bound      {comp:>9} cycles (tiles x K)")
    print(f"  bandwidth bound    {bw:>9} cycles ({bench.read_beats} beats read, "
          f"{bench.write_beats} written)")
    print(f"  util_vs_roofline   {bound / cycles:.4f}  (core busy {r['core_busy']} cycles = "
          f"{r['core_busy'] / cycles:.4f} of the run, stall {r['stall']})")
    print(f"  DMA                {r['dma_rd_bytes']} B read, {r['dma_wr_bytes']} B written")
    print(f"  simulation         {wall:.1f} s wall (emit + build + run)")
    print(json.dumps({"util_vs_roofline": round(bound / cycles, 4), "cycles": cycles,
                      "compute_bound_cycles": comp, "bandwidth_bound_cycles": bw,
                      "bit_exact": exact, "M": args.m, "N": args.n, "K": args.k,
                      "k_chunks": f["k_chunks"],
                      "array": cfg.array, "axi_data_width": args.axi}))
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
