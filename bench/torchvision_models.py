"""torchvision's classification models through the CLI as a user runs them: gen and sim seconds,
cycles, model MACs, how close the run comes to its two bounds, and int8-vs-float agreement.

``python bench/torchvision_models.py [--only NAME ...] [--out DIR]``

For each model (``torchvision.models.<name>(weights=None)``, batch 1) it times
``python -m pycde_accel gen`` and then ``sim`` into the same folder (default config), and reads
``design.json`` (the frontend's agreement with float PyTorch over its 100 seeded inputs:
top-1 agreement and the largest absolute error of the dequantized outputs) and
``sim/result.json`` (Verilator, bit-exact or not). Bounds, in cycles:

* MAC bound: model MACs / (rows * cols), the array busy on useful MACs every cycle;
* bandwidth bound: max(bytes read, bytes written) / AXI bytes per beat (read and write
  channels are independent), the bus busy every cycle with what the run moved.

``mac_ratio = MAC bound / cycles``, ``bw_ratio = bandwidth bound / cycles``. Times are wall
seconds on this machine (gen includes the frontend's 100-input evaluation; sim includes a
Verilator build the first time a memory size is needed). The last stdout line is JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = {"resnet18": "1x3x32x32", "mobilenet_v2": "1x3x32x32", "squeezenet1_1": "1x3x64x64",
          "vgg11": "1x3x32x32"}


def _cli(*args: str) -> float:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pycde_accel", *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-2000:]}")
    return time.perf_counter() - t


def measure(name: str, shape: str, out: Path) -> dict:
    spec = f"torchvision.models:{name}"
    gen_s = _cli("gen", spec, "--input-shape", shape, "--out", str(out))
    sim_s = _cli("sim", spec, "--input-shape", shape, "--out", str(out))
    design = json.loads((out / "design.json").read_text())
    res = json.loads((out / "sim" / "result.json").read_text())
    cfg = design["config"]
    pes = cfg["rows"] * cfg["cols"]
    ab = cfg["axi_data_width"] // 8
    cycles = res["total_cycles"]
    mac_bound = res["macs"] / pes
    bw_bound = max(res["dma_bytes_read"], res["dma_bytes_written"]) / ab
    acc = design["accuracy"]
    return {"input_shape": shape, "gen_s": round(gen_s, 1), "sim_s": round(sim_s, 1),
            "bit_exact": res["bit_exact"], "cycles": cycles,
            "predicted_cycles": res["predicted_cycles"], "model_macs": res["macs"],
            "array_macs": res["array_macs"], "pe_utilization": round(res["pe_utilization"], 4),
            "mac_bound_cycles": round(mac_bound), "mac_ratio": round(mac_bound / cycles, 4),
            "bw_bound_cycles": round(bw_bound), "bw_ratio": round(bw_bound / cycles, 4),
            "dma_bytes_read": res["dma_bytes_read"], "dma_bytes_written": res["dma_bytes_written"],
            "float_inputs": acc["num_rows"], "float_top1_agreement": acc["top1_agreement"],
            "float_max_abs_error": acc["max_abs_error"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=sorted(MODELS), help="these models only")
    ap.add_argument("--out", type=Path, help="keep the output folders here (default: temporary)")
    args = ap.parse_args(argv)
    names = args.only or list(MODELS)
    results = {}
    with tempfile.TemporaryDirectory(prefix="pycde_accel_tv_") as tmp:
        root = args.out or Path(tmp)
        for name in names:
            r = results[name] = measure(name, MODELS[name], root / name)
            print(f"{name:14} {r['input_shape']:10} gen {r['gen_s']:6.1f} s  sim {r['sim_s']:6.1f} s  "
                  f"bit-exact {'yes' if r['bit_exact'] else 'NO'}  {r['cycles']:>9} cycles  "
                  f"{r['model_macs']:>10} MACs  MAC bound {r['mac_ratio']:.3f}  bandwidth bound "
                  f"{r['bw_ratio']:.3f}  float top-1 {r['float_top1_agreement']:.2f} over "
                  f"{r['float_inputs']} inputs, max abs error {r['float_max_abs_error']:.3g}",
                  flush=True)
    print(json.dumps({"models": results}))
    return 0 if all(r["bit_exact"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
