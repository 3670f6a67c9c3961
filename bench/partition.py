"""End-to-end latency of accelerator + host plans: all-accelerator, all-host and the plan.

``python bench/partition.py [--models lenet5,examples/partition/host_op.py,...]
[--hosts cpu,gpu:t4] [--link pcie3x4] [--array 8x8]``

For each model (a CNN; a model with ops only the host has; an attention block without and one
with a softmax over the queries, which only the host has) and each host (this machine's CPU, timed per layer
in PyTorch; a GPU preset's roofline) it runs
``pycde_accel.partition.make_plan`` (perf-model cycles at the config's clock for the
accelerator, the link's bytes / bandwidth + latency for every crossing tensor) and prints the
predicted end-to-end latency of the three placements with the share of it spent in transfers.
All-accelerator is ``null`` when a layer can run on the host only. Nothing is simulated (the
perf model is within 5% of Verilator, bench/model.py; ``sim --partition`` runs a plan).

The last stdout line is JSON: per model and host, ``all_accel`` / ``all_host`` / ``plan``, each
``{"latency_us", "transfer_share"}``, the plan's accelerator and host layer counts and
``speedup_vs_best_single`` (the better of all-host and all-accelerator over the plan).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("lenet5", "examples/partition/host_op.py", "examples/tiny_attention.py",
          "examples/partition/softmax_attention.py")


def _fig(v):
    if v is None:
        return None
    return {"latency_us": round(v["latency_s"] * 1e6, 3),
            "transfer_share": round(v["transfer_share"], 4)}


def main(argv=None) -> int:
    from pycde_accel import partition
    from pycde_accel.config import AccelConfig, parse_array

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--hosts", default="cpu,gpu:t4")
    ap.add_argument("--link", default=partition.DEFAULT_LINK, choices=sorted(partition.LINKS))
    ap.add_argument("--array", default="8x8")
    args = ap.parse_args(argv)
    rows, cols = parse_array(args.array)
    cfg = AccelConfig(rows=rows, cols=cols).validate()
    figures: dict = {}
    t0 = time.time()
    for spec in args.models.split(","):
        path = ROOT / spec
        model = str(path) if spec.endswith(".py") else spec
        an = partition.analyze(model, cfg)
        name = Path(spec).stem
        figures[name] = {}
        for host in args.hosts.split(","):
            plan = partition.make_plan(model, cfg, host, args.link, analysis=an)
            t = plan["totals"]
            single = [v["latency_s"] for v in (t["all_host"], t["all_accel"]) if v]
            figures[name][host] = {
                "all_accel": _fig(t["all_accel"]), "all_host": _fig(t["all_host"]),
                "plan": _fig(t["plan"]), "accel_layers": t["accel_layers"],
                "host_layers": t["host_layers"],
                "host_only_layers": sum(1 for r in plan["layers"] if r["host_only"]),
                "speedup_vs_best_single": round(min(single) / t["plan"]["latency_s"], 3)}
            f = figures[name][host]
            print(f"{name:>16} on {host:<7} via {args.link}: ", end="")
            for key in ("all_accel", "all_host", "plan"):
                v = f[key]
                print(f"{key} " + ("-" if v is None else
                                   f"{v['latency_us']:.1f} us ({v['transfer_share']:.1%} transfer)")
                      + ("; " if key != "plan" else ""), end="")
            print(f" [{f['accel_layers']} accel / {f['host_layers']} host layers, "
                  f"x{f['speedup_vs_best_single']:.2f} vs the best single device]")
    print(json.dumps({"link": args.link, "array": cfg.array, "clock_mhz": cfg.clock_mhz,
                      "models": figures, "seconds": round(time.time() - t0, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
