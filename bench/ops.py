"""Each op's cycles against its own bound (the perf model; Verilator with ``--verilator``).

``python bench/ops.py [--array 8x8] [--axi 64] [--only SUBSTR] [--verilator]``

Every case of :data:`CASES` (one per line: ``(name, module factory, input shape, bound)``;
append yours) is compiled alone (the op on a model input) with the default config and its
layers predicted by :mod:`pycde_accel.perfmodel`. The bound of the case:

* ``macs``: the array's MAC bound, model MACs / (rows * cols) cycles (the MACs the compiler
  reports: a depthwise conv's are taps inside the input times one input channel);
* ``bus``: the bus bound, max(input bytes, output bytes) / (AXI bytes per beat) cycles: the
  tensors as laid out in DRAM, each crossing the bus once (read and write channels are
  independent).

``ratio = bound / cycles`` (1.0: at the bound). Each case also gives ``engine_ratio``: the
busiest engine alone (perf model ``bounds``: read DMA with the commands, write DMA, core, store
engine, vector engine) over the cycles, i.e. how close the op runs to the engine that limits it,
and which one that is. ``--verilator`` also simulates the cases marked small and gives the
measured cycles (and checks them bit-exact). The last stdout line is JSON:
``{"cases": {name: {...}}, "config": ...}``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

from torch import nn


def _mean(dims, keepdim=False):
    class Mean(nn.Module):
        def forward(self, x):
            return x.mean(dims, keepdim=keepdim)
    return Mean()


#: (name, module factory, input shape, bound, small enough for Verilator)
CASES = [
    ("depthwise3x3_c32_16x16", lambda: nn.Conv2d(32, 32, 3, padding=1, groups=32), (1, 32, 16, 16), "macs", False),
    ("depthwise3x3_s2_c32_16x16", lambda: nn.Conv2d(32, 32, 3, 2, 1, groups=32), (1, 32, 16, 16), "macs", False),
    ("depthwise3x3_c8_6x6", lambda: nn.Conv2d(8, 8, 3, padding=1, groups=8), (1, 8, 6, 6), "macs", True),
    ("grouped3x3_g4_c32_8x8", lambda: nn.Conv2d(32, 32, 3, padding=1, groups=4), (1, 32, 8, 8), "macs", False),
    ("dilated3x3_d2_c16_8x8", lambda: nn.Conv2d(16, 16, 3, padding=2, dilation=2), (1, 16, 8, 8), "macs", False),
    ("same4x4_c16_8x8", lambda: nn.Conv2d(16, 16, 4, padding="same"), (1, 16, 8, 8), "macs", False),
    ("conv1d_k3_c16_l64", lambda: nn.Conv1d(16, 16, 3, padding=1), (1, 16, 64), "macs", False),
    ("avgpool2x2_c32_16x16", lambda: nn.AvgPool2d(2), (1, 32, 16, 16), "bus", False),
    ("avgpool3x3_s2_c32_16x16", lambda: nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), (1, 32, 16, 16), "bus", False),
    ("avgpool2x2_c8_4x4", lambda: nn.AvgPool2d(2), (1, 8, 4, 4), "bus", True),
    ("global_mean_c64_7x7", lambda: _mean((2, 3)), (1, 64, 7, 7), "bus", False),
    ("adaptive7x7_from_1x1_c64", lambda: nn.AdaptiveAvgPool2d((7, 7)), (1, 64, 1, 1), "bus", False),
    ("adaptive3x3_from_8x8_c32", lambda: nn.AdaptiveAvgPool2d((3, 3)), (1, 32, 8, 8), "bus", False),
    ("avgpool1d_k2_c16_l64", lambda: nn.AvgPool1d(2), (1, 16, 64), "bus", False),
    ("maxpool3x3_s2_ceil_c32_16x16", lambda: nn.MaxPool2d(3, 2, ceil_mode=True), (1, 32, 16, 16), "bus", False),
    ("maxpool2x2_d2_c16_8x8", lambda: nn.MaxPool2d(2, 1, dilation=2), (1, 16, 8, 8), "bus", False),
    ("maxpool1d_k2_c16_l64", lambda: nn.MaxPool1d(2), (1, 16, 64), "bus", False),
    ("sigmoid_lut_c32_16x16", lambda: nn.Sigmoid(), (1, 32, 16, 16), "bus", False),
    ("gelu_lut_c32_16x16", lambda: nn.GELU(), (1, 32, 16, 16), "bus", False),
    ("hardswish_lut_8ch_4x4", lambda: nn.Hardswish(), (1, 8, 4, 4), "bus", True),
    ("zeropad1_c32_16x16", lambda: nn.ZeroPad2d(1), (1, 32, 16, 16), "bus", False),
    ("upsample2x_c32_8x8", lambda: nn.Upsample(scale_factor=2), (1, 32, 8, 8), "bus", False),
    ("batchnorm_c32_16x16", lambda: nn.BatchNorm2d(32).eval(), (1, 32, 16, 16), "bus", False),
]


def _tensor_bytes(shape, cols: int) -> int:
    """Bytes of a tensor as laid out (channels-last, channels padded to the array's cols)."""
    if len(shape) == 2:
        n, c = shape
        rest = 1
    else:
        n, c, rest = shape[0], shape[1], math.prod(shape[2:])
    return n * rest * (-(-c // cols) * cols)


def run_case(case, cfg, verilator: bool, work: Path | None) -> dict:
    import torch
    import pycde_accel
    from pycde_accel import perfmodel
    name, factory, shape, kind, small = case
    torch.manual_seed(0)
    m = factory().eval()
    x = torch.randn(shape)
    with torch.no_grad():
        y = m(x)
    d = pycde_accel.compile(m, (x,), config=cfg)
    cp = d.compiled
    pred = perfmodel.predict(cp)
    cycles = sum(lp.cycles for lp in pred.layers)
    macs = sum(s["array_macs"] for s in cp.stats)
    ab = cfg.axi_data_width // 8
    if kind == "macs":
        bound = macs / (cfg.rows * cfg.cols)
    else:
        bound = max(_tensor_bytes(tuple(x.shape), cfg.cols), _tensor_bytes(tuple(y.shape), cfg.cols)) / ab
    eng: dict = {}
    for lp in pred.layers:
        for k, v in lp.bounds.items():
            eng[k] = eng.get(k, 0) + v
    busiest = max(eng, key=eng.get)
    r = {"ops": [s["op"] for s in cp.stats], "cycles": cycles, "bound": kind,
         "bound_cycles": round(bound, 1), "ratio": round(bound / cycles, 4), "model_macs": macs,
         "array_exec_cycles": sum(s["exec_cycles"] for s in cp.stats), "busiest_engine": busiest,
         "engine_ratio": round(eng[busiest] / cycles, 4)}
    if verilator and small:
        sim = d.simulate(work=work / name if work else None)
        r["verilator_cycles"] = sum(layer["cycles"] for layer in sim.layers)
        r["verilator_bit_exact"] = bool(sim.bit_exact)
    return r


def main(argv=None) -> int:
    import pycde_accel
    from pycde_accel.config import parse_array
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--axi", type=int, default=64, help="AXI data width in bits")
    ap.add_argument("--only", default="", help="only the cases whose name contains this")
    ap.add_argument("--verilator", action="store_true", help="also simulate the small cases")
    ap.add_argument("--work", default=None, help="Verilator work folder (default: temporary)")
    args = ap.parse_args(argv)
    rows, cols = parse_array(args.array)
    cfg = pycde_accel.AccelConfig(rows=rows, cols=cols, axi_data_width=args.axi)
    out = {}
    with tempfile.TemporaryDirectory(prefix="bench_ops_") as tmp:
        work = Path(args.work or tmp)
        for case in CASES:
            if args.only not in case[0]:
                continue
            r = run_case(case, cfg, args.verilator, work)
            out[case[0]] = r
            print(f"{case[0]:34s} {'+'.join(r['ops']):10s} {r['cycles']:8d} cycles, {r['bound']} bound "
                  f"{r['bound_cycles']:9.1f}: ratio {r['ratio']:.3f}; busiest engine {r['busiest_engine']} "
                  f"{r['engine_ratio']:.3f}" + (f"; Verilator {r['verilator_cycles']} cycles, bit-exact "
                                                f"{r['verilator_bit_exact']}" if "verilator_cycles" in r else ""))
    print(json.dumps({"cases": out, "config": {"array": args.array, "axi": args.axi}}))
    return 0 if all(r.get("verilator_bit_exact", True) for r in out.values()) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
