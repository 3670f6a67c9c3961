"""Thin layers: the first conv with its input im2col'd by the host against the DMA im2col over
channels padded to the beat, in Verilator, in one run.

``python bench/thin.py [--array 8x8] [--axi 64] [--models lenet5,examples/small_cnn.py,vgg_cifar,dw]``

For each model the back end compiles the program twice: as the compiler does now (a thin conv
of a model input reads it im2col'd from the host: K = KH*KW*C padded once to the beat) and with
``compile_program(..., host_im2col=False)`` (the input channels-last with its channels padded to
the array width, the DMA doing the im2col: K = KH*KW*pitch), the baseline. Both run on the
whole accelerator in Verilator (one build for the config; each must be bit-exact with the
integer reference). Printed per model: the first conv's cycles, its K and its array MACs, both
ways; the whole model's cycles both ways; the speedups; the perf model's error on every layer of
the new program. ``vgg_cifar`` is bench/vs_cpu.py's VGG-style CIFAR CNN; ``dw`` a
mobilenet_v2-style 3x3 depthwise pair (stride 1 and 2, 32 channels at 16x16, after a 1x1 conv):
for it "before" is also the depthwise convs as the slice WGEMM (K = taps * cols, ``1 - 1/cols``
of the array's MACs padding, ``compile_program(..., depthwise=False)``) and "after" the core's
depthwise mode (EXEC DW, cols == AXI bytes: K = taps); the padding waste (the array's MACs
against the model's) is printed per layer.

The last stdout line is JSON: per model ``first_conv_cycles`` / ``total_cycles`` (``before``,
``after``), ``first_conv_speedup``, ``total_speedup``, ``padding_waste`` (before/after, the
model's), ``max_model_error_pct``; ``min_first_conv_speedup`` over the models with a thin first
conv; ``all_bit_exact``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def dw_net():
    """A mobilenet_v2-style 1x1 expand conv, 3x3 depthwise (stride 1), 3x3 depthwise
    (stride 2), 1x1 project; 32 channels at 16x16."""
    import torch
    from torch import nn
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Conv2d(8, 32, 1), nn.ReLU6(),
                          nn.Conv2d(32, 32, 3, padding=1, groups=32), nn.ReLU6(),
                          nn.Conv2d(32, 32, 3, stride=2, padding=1, groups=32), nn.ReLU6(),
                          nn.Conv2d(32, 16, 1))
        x = torch.randn(1, 8, 16, 16)
    return m.eval(), (x,)


def _model(spec: str):
    from pycde_accel import frontend
    from pycde_accel.frontend.loader import from_module
    if spec == "vgg_cifar":
        import vs_cpu
        return frontend.run(from_module(*vs_cpu.vgg_cifar()), eval_batches=1)
    if spec == "dw":
        return frontend.run(from_module(*dw_net()), eval_batches=1)
    return frontend.run(spec if not spec.endswith(".py") else str(ROOT / spec), eval_batches=1)


def _err(pred, sim) -> float:
    return 100.0 * (pred - sim) / sim if sim else 0.0


def main(argv=None) -> int:
    from pycde_accel.backend import compile_program
    from pycde_accel.config import AccelConfig, parse_array
    from pycde_accel.simulate import build_accelerator, simulate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--axi", type=int, default=64, help="AXI data width in bits")
    ap.add_argument("--models", default="lenet5,examples/small_cnn.py,vgg_cifar,dw")
    ap.add_argument("--work", default=None)
    args = ap.parse_args(argv)
    rows, cols = parse_array(args.array)
    cfg = AccelConfig(rows=rows, cols=cols, axi_data_width=args.axi).validate()
    out, ok, worst = {}, True, 0.0
    with tempfile.TemporaryDirectory(prefix="bench_thin_") as tmp:
        work = Path(args.work or tmp)
        sim = build_accelerator(cfg, work / "build")
        print(f"{cfg.array} array, {cfg.axi_data_width}-bit AXI ({cfg.memory} memory at "
              f"{cfg.clock_mhz:g} MHz)")
        for spec in [m for m in args.models.split(",") if m]:
            fe = _model(spec)
            res = {}
            for way, host in (("before", False), ("after", True)):
                # dw: before = the slice WGEMM (K = taps * cols), after = the core's DW mode
                cp = compile_program(fe, cfg, host_im2col=host,
                                     depthwise=host if spec == "dw" else True)
                r = simulate(fe, cfg, work / spec.replace("/", "_") / way, sim=sim, compiled=cp)
                ok &= r.bit_exact
                conv = next((i for i, s in enumerate(cp.stats) if s["kind"] == "conv2d"), None)
                res[way] = (cp, r, conv)
            fig = {}
            for way, (cp, r, conv) in res.items():
                l = r.layers[conv] if conv is not None else None
                fig[way] = {"total_cycles": r.total_cycles, "bit_exact": r.bit_exact,
                            "macs": r.macs, "array_macs": r.array_macs,
                            "padding_waste": round(1 - r.macs / r.array_macs, 4) if r.array_macs else 0.0,
                            **({"first_conv_cycles": l["cycles"], "first_conv_K": cp.stats[conv]["K"],
                                "first_conv_array_macs": l["array_macs"],
                                "first_conv_macs": l["macs"]} if l else {})}
            cp, r, _ = res["after"]
            errs = [abs(_err(l["predicted_cycles"], l["cycles"])) for l in r.layers
                    if l.get("predicted_cycles") is not None]
            fig["max_model_error_pct"] = round(max(errs), 3) if errs else None
            worst = max(worst, fig["max_model_error_pct"] or 0.0)
            b, a = fig["before"], fig["after"]
            fig["total_speedup"] = round(b["total_cycles"] / a["total_cycles"], 4)
            if "first_conv_cycles" in a:
                fig["first_conv_speedup"] = round(b["first_conv_cycles"] / a["first_conv_cycles"], 4)
            out[spec] = fig
            print(f"  {spec}: bit-exact {b['bit_exact']} / {a['bit_exact']}; whole model "
                  f"{b['total_cycles']} -> {a['total_cycles']} cycles ({fig['total_speedup']:.3f}x), "
                  f"padding waste {b['padding_waste']:.1%} -> {a['padding_waste']:.1%}")
            if "first_conv_cycles" in a:
                print(f"    first conv: K {b['first_conv_K']} -> {a['first_conv_K']}, array MACs "
                      f"{b['first_conv_array_macs']} -> {a['first_conv_array_macs']} (model "
                      f"{a['first_conv_macs']}), cycles {b['first_conv_cycles']} -> "
                      f"{a['first_conv_cycles']} ({fig['first_conv_speedup']:.3f}x)")
            for i, l in enumerate(r.layers):
                if l["op"] in ("gemm", "wgemm") and l["array_macs"]:
                    print(f"    {i:>2} {l['name'][:14]:14} {l['op']:6} {l['cycles']:>9} cycles "
                          f"(predicted {l['predicted_cycles']}), MACs {l['macs']} of "
                          f"{l['array_macs']} on the array (waste {1 - l['macs'] / l['array_macs']:.1%})")
            print(f"    perf model: worst layer error {fig['max_model_error_pct']}%")
    sp = [f["first_conv_speedup"] for f in out.values() if f.get("first_conv_speedup", 1) > 1.0]
    summary = {"config": cfg.array, "axi_bits": cfg.axi_data_width, "models": out,
               "min_first_conv_speedup": min(sp) if sp else None, "all_bit_exact": ok,
               "max_model_error_pct": round(worst, 3)}
    print(json.dumps(summary, sort_keys=True))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
