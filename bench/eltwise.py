"""Cycles per beat of the vector engine's LUT function and MUL against the bus bound.

One model with an input of ``--shape`` (default 1x64x16x16, NCHW) and four element-wise
layers on it: a Sigmoid and a GELU (``lut``: one LOAD S + VEC LUT_SET of the table, then the
map streamed through S), a same-shape product ``x * sigmoid(x)`` (``mul``: LOAD X, LOAD S,
VEC MUL per chunk) and a squeeze-and-excitation product with a (N, C, 1, 1) gate (``mul`` with
BCAST: the gate vector once into X per image, the map through S, the vector re-read per pixel).

Per layer: cycles (the perf model, or with ``--sim`` the Verilator run, which also checks the
result bit-exact), the layer's output beats, cycles per output beat, and the bus bound:
max(beats read, beats written) (the AXI read and write channels move one beat per cycle each);
``of_bound`` = bound / cycles (1.0 = the bus is the limit). Ends with one JSON line.

    python bench/eltwise.py [--shape 1x64x16x16] [--array 8x8] [--axi 64] [--sim]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

MODEL = '''\
import torch
import torch.nn.functional as F
from torch import nn

SHAPE = {shape!r}


class Net(nn.Module):
    def forward(self, x):
        a = torch.sigmoid(x)
        b = F.gelu(x)
        c = x * a
        g = torch.sigmoid(F.max_pool2d(b, SHAPE[2:]))
        return c, b * g


def build():
    torch.manual_seed(0)
    return Net().eval(), (2.0 * torch.randn(*SHAPE),)
'''


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="1x64x16x16")
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--axi", type=int, default=64)
    ap.add_argument("--sim", action="store_true", help="run Verilator (else: the perf model)")
    a = ap.parse_args(argv)
    shape = tuple(int(v) for v in a.shape.split("x"))
    rows, cols = (int(v) for v in a.array.split("x"))

    from pycde_accel import frontend
    from pycde_accel.backend import compile_program
    from pycde_accel.config import AccelConfig
    from pycde_accel.perfmodel import predict

    cfg = AccelConfig(rows=rows, cols=cols, axi_data_width=a.axi)
    ab = a.axi // 8
    with tempfile.TemporaryDirectory(prefix="eltwise_bench_") as tmp:
        path = Path(tmp) / "net.py"
        path.write_text(MODEL.format(shape=shape))
        fe = frontend.run(str(path), eval_batches=2)
        cp = compile_program(fe, cfg)
        if a.sim:
            from pycde_accel.simulate import simulate
            r = simulate(fe, cfg, Path(tmp) / "sim")
            cycles = [layer["cycles"] for layer in r.layers]
            bit_exact = bool(r.bit_exact)
        else:
            cycles = [layer.cycles for layer in predict(cp, cfg).layers]
            bit_exact = None
    rows_out = []
    for s, cyc, cmds in zip(cp.stats, cycles, cp.commands):
        if s["op"] not in ("lut", "mul"):
            continue
        rd, wr = s["dram_bytes_read"] // ab, s["dram_bytes_written"] // ab
        bound = max(rd, wr)
        bcast = any(c.KIND == "vec" and c.mb > 0 for c in cmds) if s["op"] == "mul" else False
        rows_out.append({"layer": s["name"], "op": s["op"] + (" bcast" if bcast else ""),
                         "cycles": int(cyc), "beats": wr, "cycles_per_beat": round(cyc / wr, 3),
                         "read_beats": rd, "write_beats": wr, "bound_cycles": bound,
                         "of_bound": round(bound / cyc, 3)})
    print(f"{'layer':<12} {'op':<10} {'cycles':>8} {'beats':>7} {'cyc/beat':>9} "
          f"{'bound':>7} {'of bound':>9}")
    for r_ in rows_out:
        print(f"{r_['layer']:<12} {r_['op']:<10} {r_['cycles']:>8} {r_['beats']:>7} "
              f"{r_['cycles_per_beat']:>9} {r_['bound_cycles']:>7} {r_['of_bound']:>9}")
    out = {"shape": list(shape), "array": a.array, "axi": a.axi,
           "source": "verilator" if a.sim else "perfmodel", "bit_exact": bit_exact,
           "layers": rows_out}
    print(json.dumps(out))
    return 0 if bit_exact in (None, True) else 1


if __name__ == "__main__":
    sys.exit(main())
