"""Encoder layers on the accelerator: cycles per layer against max(MAC bound, bandwidth bound),
the bottleneck named per layer, and the perf model against Verilator.

``python bench/seq_encoder.py [--array 8x8] [--axi 64] [--cases SUBSTR] [--no-verilator]``

Cases: ``nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64, batch_first=True)``
on a 1x8x32 input, post-norm and pre-norm (``norm_first``), ReLU and GELU;
``nn.TransformerEncoder`` of two such layers; and ``examples/transformer.py``. Each is compiled
on the config and, unless ``--no-verilator``, simulated on one Verilator build (bit-exact
checked). For every hardware layer:

* ``mac_bound``: the layer's MACs on the array / (rows * cols) cycles;
* ``bw_bound``: max(bytes read (with the commands), bytes written) / (AXI bytes per beat);
* ``bottleneck``: the engine whose closed-form bound (``pycde_accel.perfmodel.bounds``: read
  DMA, write DMA, core, store engine, vector engine) is the largest;
* ``cycles`` (simulated; predicted without Verilator) and the perf model's error.

Per case: the total cycles against max(sum of MAC bounds, sum of bandwidth bounds) (``ratio``:
bound / cycles, 1.0 at the bound), and the cycles by bottleneck. The last stdout line is JSON:
``{"cases": {name: {...}}, "max_model_error_pct": ..., "config": ...}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINES = {"read": "read DMA", "write": "write DMA", "core": "core", "store": "store engine",
           "vector": "vector engine"}


def _layer(norm_first, activation):
    def build():
        import torch
        from torch import nn
        torch.manual_seed(0)
        m = nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64, batch_first=True,
                                       norm_first=norm_first, activation=activation).eval()
        return m, (torch.randn(1, 8, 32),)
    return build


def _encoder():
    import torch
    from torch import nn
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval(), (torch.randn(1, 8, 32),)


CASES = {
    "encoder_layer_post_relu": _layer(False, "relu"),
    "encoder_layer_pre_relu": _layer(True, "relu"),
    "encoder_layer_post_gelu": _layer(False, "gelu"),
    "encoder_layer_pre_gelu": _layer(True, "gelu"),
    "encoder_2_layers": _encoder,
    "examples_transformer": str(ROOT / "examples" / "transformer.py"),
}


def _frontend(spec, tmp: Path):
    from pycde_accel import frontend
    if callable(spec):
        path = tmp / "case.py"
        # a model file the loader reads: the case's builder under its name
        path.write_text("import sys\nsys.path.insert(0, %r)\nimport seq_encoder as S\n"
                        "def build():\n    return S.%s()\n"
                        % (str(Path(__file__).resolve().parent), _name_of(spec)))
        spec = str(path)
    return frontend.run(spec, seed=0, eval_batches=20)


def _name_of(fn) -> str:
    for name, f in CASES.items():
        if f is fn:
            return f"CASES[{name!r}]"
    raise KeyError(fn)


def main(argv=None) -> int:
    from pycde_accel import perfmodel
    from pycde_accel.backend import compile_program
    from pycde_accel.config import AccelConfig, parse_array

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--axi", type=int, default=64, help="AXI data width in bits")
    ap.add_argument("--cases", default="", help="only the cases whose name contains this")
    ap.add_argument("--no-verilator", action="store_true", help="predicted cycles only")
    args = ap.parse_args(argv)
    rows, cols = parse_array(args.array)
    cfg = AccelConfig(rows=rows, cols=cols, axi_data_width=args.axi).validate()
    ab = cfg.axi_data_width // 8
    out, worst = {}, 0.0
    with tempfile.TemporaryDirectory(prefix="bench_seq_") as tmp:
        tmp = Path(tmp)
        sim = None
        if not args.no_verilator:
            from pycde_accel.simulate import build_accelerator
            sim = build_accelerator(cfg, tmp / "build", rowred=True)  # softmax/LayerNorm
        for name, spec in CASES.items():
            if args.cases not in name:
                continue
            (tmp / name).mkdir()
            fe = _frontend(spec, tmp / name)
            cp = compile_program(fe, cfg)
            pred = perfmodel.predict(cp, cfg)
            measured = None
            if sim is not None:
                from pycde_accel.simulate import simulate
                r = simulate(fe, cfg, tmp / name / "sim", sim=sim, compiled=cp)
                if not r.bit_exact:
                    print(f"{name}: NOT bit-exact: {r.mismatches}", file=sys.stderr)
                    return 1
                measured = [layer["cycles"] for layer in r.layers]
            print(f"{name} on {cfg.array}, {cfg.axi_data_width}-bit AXI"
                  f"{', Verilator (bit-exact)' if measured else ', perf model'}; "
                  f"int8 vs float top-1 {fe.accuracy['top1_agreement']}, max abs error "
                  f"{fe.accuracy['max_abs_error']}")
            print(f"  {'#':>3} {'layer':24} {'op':7} {'cycles':>7} {'pred':>7} {'err%':>6} "
                  f"{'MAC bd':>7} {'BW bd':>7} {'ratio':>6}  bottleneck")
            tot = {"cycles": 0, "predicted": 0, "mac_bound": 0.0, "bw_bound": 0.0}
            by_neck: dict = {}
            for i, (st, lp) in enumerate(zip(cp.stats, pred.layers)):
                cyc = measured[i] if measured else lp.cycles
                err = 100.0 * (lp.cycles - cyc) / cyc if cyc else 0.0
                worst = max(worst, abs(err))
                mac = st.get("array_macs", 0) / (rows * cols)
                bw = max(st.get("dram_bytes_read", 0) + 32 * st.get("commands", 0),
                         st.get("dram_bytes_written", 0)) / ab
                neck = ENGINES[max(lp.bounds, key=lambda k: lp.bounds[k])]
                by_neck[neck] = by_neck.get(neck, 0) + cyc
                ratio = max(mac, bw) / cyc if cyc else 0.0
                print(f"  {i:>3} {str(st.get('name'))[:24]:24} {str(st.get('op'))[:7]:7} "
                      f"{cyc:>7} {lp.cycles:>7} {err:>+6.2f} {mac:>7.0f} {bw:>7.0f} "
                      f"{ratio:>6.3f}  {neck}")
                tot["cycles"] += cyc
                tot["predicted"] += lp.cycles
                tot["mac_bound"] += mac
                tot["bw_bound"] += bw
            bound = max(tot["mac_bound"], tot["bw_bound"])
            out[name] = {"layers": len(cp.stats), "cycles": tot["cycles"],
                         "predicted": tot["predicted"], "simulated": measured is not None,
                         "mac_bound": round(tot["mac_bound"]), "bw_bound": round(tot["bw_bound"]),
                         "ratio": round(bound / tot["cycles"], 4),
                         "bound": "MAC" if tot["mac_bound"] >= tot["bw_bound"] else "bandwidth",
                         "cycles_by_bottleneck": by_neck,
                         "top1_agreement": fe.accuracy["top1_agreement"],
                         "max_abs_error": fe.accuracy["max_abs_error"]}
            print(f"  total {tot['cycles']} cycles (predicted {tot['predicted']}) against "
                  f"max(MAC {tot['mac_bound']:.0f}, bandwidth {tot['bw_bound']:.0f}) = "
                  f"{bound:.0f}: ratio {bound / tot['cycles']:.3f}; cycles by bottleneck "
                  f"{by_neck}")
    print(json.dumps({"cases": out, "max_model_error_pct": round(worst, 3),
                      "config": cfg.to_dict()}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
