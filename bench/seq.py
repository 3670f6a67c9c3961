"""Sequence models on the accelerator: cycles per recurrent step against the GEMM bound of
that step, the bottleneck, and the perf model against Verilator for these layers.

``python bench/seq.py [--array 8x8] [--axi 64] [--cases lstm,gru]``

Each case is a model run on the whole accelerator in Verilator (``simulate.simulate``: one
build for the config, bit-exact check). For a recurrent layer (pycde_accel/ops/rnn.py) the
program is, per layer, one GEMM for the input projections of all steps and then, per step,
the recurrent GEMM followed by the step's element-wise layers (LUT, MUL, ADD). Per step it
reports:

* ``cycles_per_step``: the simulated cycles of one step's layers (mean over the steps), split
  into the recurrent GEMM and the element-wise layers;
* ``gemm_bound``: the recurrent GEMM's lower bound, max(core bound, read-DMA bound) of its
  commands (``perfmodel.bounds``: the core at one beat per cycle per tile, the read DMA at one
  beat per cycle for the weight panels, records and rows it loads), and which of the two it is;
* ``bottleneck``: what the step's cycles are mostly spent on (the GEMM's bound named, or the
  element-wise layers' fixed per-layer cost);
* ``max_model_error_pct``: the perf model's prediction against Verilator over these layers
  (bound: 5%).

``CASES`` is a list: a case is a model spec and the kind of analysis (``recurrent``); more
kinds (an encoder layer against max(MAC bound, bandwidth bound)) are added as entries.

The last stdout line is JSON: per case the figures above, ``max_model_error_pct`` over all of
them, the bound and the config.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

BOUND_PCT = 5.0
HERE = Path(__file__).resolve()
EXAMPLES = HERE.parents[1] / "examples"


def gru_classifier():
    """The GRU twin of examples/lstm.py: ``nn.GRU(16, 32)`` over 8 steps, Linear on the last."""
    import torch
    from torch import nn

    class GRUClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(16, 32, batch_first=True)
            self.fc = nn.Linear(32, 10)

        def forward(self, x):
            y, _ = self.gru(x)
            return self.fc(y[:, -1])
    torch.manual_seed(0)
    return GRUClassifier().eval(), (torch.randn(1, 8, 16),)


#: name -> (model spec, analysis)
CASES = [
    ("lstm", str(EXAMPLES / "lstm.py"), "recurrent"),
    ("gru", f"{HERE}:gru_classifier", "recurrent"),
]


def _err(pred: int, sim: int) -> float:
    return 100.0 * (pred - sim) / sim if sim else 0.0


def recurrent(fe, r, compiled, cfg) -> dict:
    """Per-step figures of the (first) recurrent layer of a simulated model."""
    from pycde_accel.perfmodel.bounds import bounds
    node = next(n for n in fe.quantized.graph.nodes if n.kind == "rnn")
    idx = [i for i, l in enumerate(compiled.layers)
           if l["name"] == node.name or l["name"].startswith(node.name + ".")]
    T = node.dims(fe.quantized.graph.node(node.inputs[0]).shape)[0]
    # layer 0 of the recurrent layer: its input GEMM, then T steps of equal length
    per_step = (len(idx) // node.layers - 1) // T
    steps = [idx[1 + t * per_step:1 + (t + 1) * per_step] for t in range(T)]
    sim_c = [l["cycles"] for l in r.layers]
    pred_c = [l["predicted_cycles"] for l in r.layers]
    step_cycles = [sum(sim_c[i] for i in s) for s in steps]
    gemm_cycles = [sim_c[s[0]] for s in steps]
    b = bounds(compiled.commands[steps[1][0]], cfg)       # a steady step's recurrent GEMM
    core, read = b["core"], b["read"]
    gemm_bound = max(core, read)
    mean = sum(step_cycles) / T
    gemm_mean = sum(gemm_cycles) / T
    eltwise = mean - gemm_mean
    which = "read DMA (the recurrent weights and their records, streamed every step)" \
        if read >= core else "systolic core"
    bottleneck = (f"recurrent GEMM, bound by the {which}" if gemm_mean >= eltwise else
                  f"element-wise layers ({per_step - 1} per step, each a layer start with its "
                  f"table/operand loads)")
    errs = [abs(_err(pred_c[i], sim_c[i])) for i in idx]
    return {"steps": T, "layers_per_step": per_step, "cycles_per_step": round(mean, 1),
            "gemm_cycles_per_step": round(gemm_mean, 1),
            "eltwise_cycles_per_step": round(eltwise, 1),
            "gemm_bound": gemm_bound, "gemm_core_bound": core, "gemm_read_bound": read,
            "gemm_bound_by": "read" if read >= core else "core",
            "step_vs_gemm_bound": round(mean / gemm_bound, 3) if gemm_bound else None,
            "gemm_vs_gemm_bound": round(gemm_mean / gemm_bound, 3) if gemm_bound else None,
            "bottleneck": bottleneck, "input_gemm_cycles": sim_c[idx[0]],
            "max_model_error_pct": round(max(errs), 3)}


ANALYSES = {"recurrent": recurrent}


def main(argv=None) -> int:
    from pycde_accel import frontend
    from pycde_accel.backend import compile_program
    from pycde_accel.config import AccelConfig, parse_array
    from pycde_accel.simulate import build_accelerator, simulate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--axi", type=int, default=64, help="AXI data width in bits")
    ap.add_argument("--cases", default=",".join(c[0] for c in CASES))
    ap.add_argument("--work", default=None, help="work folder (default: a temporary one)")
    args = ap.parse_args(argv)
    rows, cols = parse_array(args.array)
    cfg = AccelConfig(rows=rows, cols=cols, axi_data_width=args.axi).validate()
    wanted = [c for c in args.cases.split(",") if c]
    out, worst, ok = {}, 0.0, True
    with tempfile.TemporaryDirectory(prefix="bench_seq_") as tmp:
        work = Path(args.work or tmp)
        t0 = time.time()
        sim = build_accelerator(cfg, work, rowred=True)   # softmax / LayerNorm: ROWRED
        print(f"{cfg.array} array, {cfg.axi_data_width}-bit AXI (Verilator build "
              f"{time.time() - t0:.0f} s)")
        for name, spec, kind in CASES:
            if name not in wanted:
                continue
            fe = frontend.run(spec, seed=0, eval_batches=1)
            compiled = compile_program(fe, cfg)
            r = simulate(fe, cfg, work / name, sim=sim, compiled=compiled)
            ok &= r.bit_exact
            f = ANALYSES[kind](fe, r, compiled, cfg)
            f.update(bit_exact=r.bit_exact, total_cycles=r.total_cycles,
                     predicted_cycles=r.predicted_cycles)
            worst = max(worst, f["max_model_error_pct"])
            out[name] = f
            print(f"{name}: {f['steps']} steps of {f['layers_per_step']} layers; "
                  f"{f['cycles_per_step']} cycles per step (recurrent GEMM "
                  f"{f['gemm_cycles_per_step']}, element-wise {f['eltwise_cycles_per_step']})")
            print(f"  GEMM bound of a step {f['gemm_bound']} cycles (core {f['gemm_core_bound']}, "
                  f"read DMA {f['gemm_read_bound']}): step/bound {f['step_vs_gemm_bound']}, "
                  f"GEMM/bound {f['gemm_vs_gemm_bound']}")
            print(f"  bottleneck: {f['bottleneck']}")
            print(f"  perf model: max |error| {f['max_model_error_pct']}% over its layers; total "
                  f"{r.total_cycles} simulated, {r.predicted_cycles} predicted; bit-exact "
                  f"{r.bit_exact}")
    print(json.dumps({"cases": out, "max_model_error_pct": round(worst, 3), "bound_pct": BOUND_PCT,
                      "within_bound": worst <= BOUND_PCT, "bit_exact": ok, "array": cfg.array,
                      "axi_data_width": cfg.axi_data_width}))
    return 0 if worst <= BOUND_PCT and ok else 1


if __name__ == "__main__":
    sys.exit(main())
