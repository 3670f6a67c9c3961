"""Print the back end's per-layer figures: ``python -m pycde_accel.backend [MODEL ...] [--array RxC]``.

For each model (default: the built-ins) it compiles the program, runs the command golden model
(:mod:`.cmdexec`) on the model's example input, checks the output bit-exact against the integer
reference, and prints per layer the op, M/N/K, loop order, commands, tiles, MACs, exec cycles
(sum of EXEC K) and the DMA beats read and written. The last stdout line is a JSON object of the
per-model totals.
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
    from . import cmdexec, compile_program

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
            outs, ex = cmdexec.run(cp, xq)
            ok = all(np.array_equal(a, b) for a, b in zip(outs, reference.run(fe.quantized, xq).outputs))
            print(f"{spec} on {cfg.array}, AXI {args.axi} bit: commands bit-exact with the reference: {ok}")
            print(f"  {'#':>2} {'op':8} {'layer':14} {'M':>5} {'N':>5} {'K':>5} {'order':12} {'cmds':>6} "
                  f"{'tiles':>6} {'MACs':>9} {'array MACs':>10} {'exec cyc':>8} {'rd beats':>8} {'wr beats':>8}")
            for s, c in zip(cp.stats, ex.layers):
                print(f"  {s['index']:>2} {s['op']:8} {s['name'][:14]:14} {s.get('M', ''):>5} "
                      f"{s.get('N', ''):>5} {s.get('K', ''):>5} {s.get('order', ''):12} {c.commands:>6} "
                      f"{c.tiles:>6} {s['macs']:>9} {s['array_macs']:>10} {c.exec_cycles:>8} {c.dram_beats_read:>8} "
                      f"{c.dram_beats_written:>8}")
            t = cp.totals()
            t["bit_exact"] = ok
            t["dram_beats_read"] = sum(c.dram_beats_read for c in ex.layers)
            t["dram_beats_written"] = sum(c.dram_beats_written for c in ex.layers)
            t["cmd_beats_read"] = sum(c.cmd_beats_read for c in ex.layers)
            print(f"  total: {t['commands']} commands, {t['tiles']} tiles, {t['macs']} MACs "
                  f"({t['array_macs']} on the array, padding included), "
                  f"{t['exec_cycles']} exec cycles, {t['dram_beats_read']} + {t['cmd_beats_read']} "
                  f"beats read (data + commands), {t['dram_beats_written']} written, image "
                  f"{t['image_bytes']} B")
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
