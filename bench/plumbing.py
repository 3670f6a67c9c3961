"""Cycles of the merge and tensor-plumbing ops against their bus bound, on the default config.

Each case is a one-op model (model inputs straight into the op, NCHW at realistic small-CNN
shapes), compiled with the default config; its layers' cycles are the perf model's
(:func:`pycde_accel.perfmodel.predict`, fitted to Verilator within a few percent). The bound is
the op's data moved over the bus: ``max(bytes read, bytes written) / AXI bytes per cycle`` with
the bytes the inputs' and the output's padded buffers hold (the read and write channels of AXI
are independent; ``sum_ratio`` uses their sum instead). ``ratio = bound / cycles`` (1.0: at the
bus bound).

Both engines that write computed data, the store engine (GEMM, GATHER) and the vector engine
(ADD, VMAX), take AB cycles per beat (one int8 element per cycle), so no such layer can beat
``bytes written`` cycles: ``engine_ratio = bytes written / cycles`` is the share of that ceiling
(1.0: the output engine never idles), ``ratio`` stays below ``1 / AB`` on this hardware.

``python bench/plumbing.py [--case NAME ...]`` prints one line per case and ends with one JSON
line ``{"config": ..., "cases": {name: {cycles, bound, ratio, sum_ratio, layers}}}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HEAD = "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n\n"

#: name -> (forward body over inputs a[, b], input shapes)
CASES = {
    "sub": ("return a - b", [(1, 64, 16, 16)] * 2),
    "maximum": ("return torch.maximum(a, b)", [(1, 64, 16, 16)] * 2),
    "minimum": ("return torch.minimum(a, b)", [(1, 64, 16, 16)] * 2),
    "cat": ("return torch.cat([a, b], 1)", [(1, 32, 16, 16)] * 2),
    "cat_unaligned": ("return torch.cat([a, b], 1)", [(1, 20, 16, 16), (1, 12, 16, 16)]),
    "flip_w": ("return a.flip(3)", [(1, 64, 16, 16)]),
    "flip_c": ("return a.flip(1)", [(1, 64, 16, 16)]),
    "zero_pad": ("return nn.ZeroPad2d(1)(a)", [(1, 64, 16, 16)]),
    "const_pad": ("return nn.ConstantPad2d(1, 0.5)(a)", [(1, 64, 16, 16)]),
    "upsample2x": ("return nn.Upsample(scale_factor=2)(a)", [(1, 32, 8, 8)]),
    "slice_c": ("return a[:, 16:48]", [(1, 64, 16, 16)]),
    "expand_hw": ("return a.expand(-1, -1, 16, 16)", [(1, 64, 1, 1)]),
    "shuffle": ("n, c, h, w = a.shape\n        return a.view(n, 4, c // 4, h, w).transpose(1, 2)"
                ".reshape(n, c, h, w).flip(2)", [(1, 64, 8, 8)]),
    "batchnorm": ("return self.bn(a)", [(1, 64, 16, 16)]),
}


def model_text(body: str, shapes) -> str:
    args = ", ".join("ab"[:len(shapes)])
    ins = ", ".join(f"torch.randn{tuple(s)}" for s in shapes)
    return HEAD + f'''
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d({shapes[0][1]})
        self.bn.running_var.uniform_(0.5, 2.0)
        self.bn.running_mean.uniform_(-1.0, 1.0)

    def forward(self, {args}):
        {body}


def build():
    torch.manual_seed(0)
    return Net().eval(), ({ins},)
'''


def measure(name: str, work: Path) -> dict:
    from pycde_accel import frontend
    from pycde_accel.backend import compile_program
    from pycde_accel.config import AccelConfig
    from pycde_accel.perfmodel import predict
    body, shapes = CASES[name]
    path = work / f"{name}.py"
    path.write_text(model_text(body, shapes))
    fe = frontend.run(str(path), eval_batches=2)
    cfg = AccelConfig()
    cp = compile_program(fe, cfg)
    pred = predict(cp, cfg)
    ab = cfg.axi_data_width // 8
    syms = cp.symbols
    rd = sum(syms[p.name].size for p in cp.input_placements)
    wr = sum(syms[p.name].size for p in cp.output_placements)
    cycles = sum(lp.cycles for lp in pred.layers)
    bound = max(rd, wr) / ab
    return {"cycles": cycles, "bound": round(bound, 1), "ratio": round(bound / cycles, 3),
            "engine_ratio": round(wr / cycles, 3),
            "sum_ratio": round((rd + wr) / ab / cycles, 3),
            "layers": [f"{s['kind']}:{s['op']}" for s in cp.stats],
            "bytes_read": rd, "bytes_written": wr}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    args = ap.parse_args(argv)
    from pycde_accel.config import AccelConfig
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for name in args.case or CASES:
            r = measure(name, Path(d))
            out[name] = r
            print(f"{name:14s} cycles {r['cycles']:7d}  bound {r['bound']:8.1f}  ratio {r['ratio']:.3f}"
                  f"  (sum {r['sum_ratio']:.3f})  engine {r['engine_ratio']:.3f}  {' '.join(r['layers'])}")
    cfg = AccelConfig()
    print(json.dumps({"config": f"{cfg.rows}x{cfg.cols}, {cfg.axi_data_width}-bit AXI", "cases": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
