"""Seconds from a model to SystemVerilog: ``python -m pycde_accel gen`` for each example and built-in.

``python bench/gen_time.py [--array 8x8] [--models a,b] [--bound 120]``

Each model (every ``examples/*.py`` and the built-ins mlp, lenet5, resblock) is generated in a
fresh process, as ``python -m pycde_accel gen MODEL --out DIR`` does it (``flow.gen``: Python
and torch start-up, export, quantization and its checks, the back end's commands and DRAM
image, the post-op kernels lowered through CIRCT, the accelerator's SV, design.json and host
files), and the wall time is measured, with the split over flow.gen's steps (from its progress
messages): ``startup`` (interpreter + imports), ``frontend``, ``backend``, ``emit`` (kernels
through CIRCT + SV). Bound: every model under ``--bound`` seconds (default 120). The machine's
load average is printed beside (the figure is wall time). The last stdout line is JSON:
``gen_seconds`` per model, ``phases`` per model, ``max_gen_seconds``, ``total_gen_seconds``, the
bound, the load average and the config.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILTINS = ("mlp", "lenet5", "resblock")

# runs in the child: flow.gen with a progress hook that stamps each step
CHILD = r"""
import json, sys, time
t0 = time.time()
from pathlib import Path
from pycde_accel import flow
from pycde_accel.cli import config_from_args
import argparse
spec, out, array = sys.argv[1:4]
cfg = config_from_args(argparse.Namespace(array=array, target=None, schedule=None, command="gen"))
marks = [("startup", time.time())]
def progress(msg):
    key = ("frontend" if msg.startswith("frontend") else "backend" if msg.startswith("back end")
           else "emit" if msg.startswith("emitting") else None)
    if key:
        marks.append((key, time.time()))
flow.gen(spec, Path(out), cfg, progress=progress)
marks.append(("end", time.time()))
ph = {"startup": marks[0][1] - t0}
for (k, a), (_, b) in zip(marks[1:], marks[2:]):
    ph[k] = ph.get(k, 0.0) + b - a
print("PHASES " + json.dumps({k: round(v, 2) for k, v in ph.items()}))
"""


def models() -> list[str]:
    return [str(p.relative_to(ROOT)) for p in sorted((ROOT / "examples").glob("*.py"))
            if not p.name.startswith("_")] + list(BUILTINS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--models", default="", help="comma-separated specs (default: examples + built-ins)")
    ap.add_argument("--bound", type=float, default=120.0, help="seconds per model")
    args = ap.parse_args(argv)
    specs = [m for m in args.models.split(",") if m] or models()
    times, phases, failed = {}, {}, {}
    print(f"python -m pycde_accel gen MODEL --array {args.array} (fresh process each)")
    with tempfile.TemporaryDirectory(prefix="bench_gen_") as tmp:
        for i, spec in enumerate(specs):
            out = Path(tmp) / f"m{i}"
            t0 = time.time()
            p = subprocess.run([sys.executable, "-c", CHILD, spec, str(out), args.array],
                               cwd=ROOT, capture_output=True, text=True)
            dt = time.time() - t0
            sv = len(list((out / "sv").glob("*.sv"))) if (out / "sv").is_dir() else 0
            if p.returncode != 0 or not sv:
                failed[spec] = (p.stderr.strip().splitlines() or ["no SV written"])[-1]
                print(f"  {spec:28} FAILED after {dt:6.1f} s: {failed[spec]}")
                continue
            times[spec] = round(dt, 2)
            ph = [json.loads(l[7:]) for l in p.stdout.splitlines() if l.startswith("PHASES ")]
            phases[spec] = ph[0] if ph else {}
            split = ", ".join(f"{k} {v:.1f}" for k, v in phases[spec].items())
            print(f"  {spec:28} {dt:6.1f} s  ({sv} SV files; {split})")
    import os
    load = [round(x, 2) for x in os.getloadavg()]
    worst = max(times.values(), default=0.0)
    ok = not failed and worst <= args.bound
    print(f"max {worst:.1f} s per model (bound {args.bound:g} s), total {sum(times.values()):.1f} s"
          f" (load average {load[0]} on {os.cpu_count()} cores)")
    print(json.dumps({"gen_seconds": times, "phases": phases, "max_gen_seconds": worst,
                      "load_average": load,
                      "total_gen_seconds": round(sum(times.values()), 2), "bound_s": args.bound,
                      "within_bound": ok, "failed": failed, "array": args.array}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
