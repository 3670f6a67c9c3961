"""The accelerator against this machine's CPU: float PyTorch (1 thread and all threads) next to
the accelerator's latency at its placed Fmax, per model, with the device-peak fraction.

    python bench/vs_cpu.py [--only NAME ...] [--reps N] [--fmax MHZ] [--array RxC] [--spad N]
                           [--axi BITS] [--work DIR]

Models: the built-ins (mlp, lenet5, resblock), every example under ``examples/`` that is a CNN
(its module holds an ``nn.Conv2d``), and two CIFAR-size CNNs defined here (1x3x32x32):
``vgg_cifar`` (VGG-style: 3x3 convs 32-32 / 64-64 / 128 with max-pools, a classifier) and
``resnet_cifar`` (ResNet-style: a stem and three basic blocks 16 / 32 / 64, the last two
strided with 1x1 shortcuts, global average pool, a classifier). A model that is the same
network as one before it (layers, shapes, kernels, strides, ReLUs: an example that copies a
built-in) is named and counted once (``same_network_as``).

For each model, in one run:

* CPU: the float module the frontend loaded (the same weights), ``torch.inference_mode``,
  ``torch.set_num_threads(1)`` and then all the cores this process may use; ``--warmup`` calls
  first, then the median of ``--reps`` timed calls (at least 50 unless told otherwise). Each
  median is taken before and again after the model's simulation, and the faster counts (a
  busy moment slows a median, nothing speeds one up); their spread is printed. The CPU is
  named (``cpu_model``) and measured on a fixed reference, a 256x256x256 float32 matmul on one
  thread at the start and at the end of the run (``cpu_ref_gflops_1t``, the faster), so runs
  on different machines, or on one machine at a busy time, can be told apart.
* Accelerator: cycles from the Verilator simulation of the whole accelerator
  (``pycde_accel.simulate``; the run is bit-exact against the integer reference or the script
  fails), at the placed Fmax of the config: ``--fmax MHZ`` if given, else Yosys + nextpnr of the
  config (``fpga.project.synth_model``; an identical earlier placement is reused from the
  synthesis cache, else it is placed once, about 8+ minutes on a busy machine). Where the Fmax
  came from is printed. The simulation's board memory is charged at that Fmax (the config's
  ``clock_mhz`` is set to it), so a wider ``--axi`` cannot buy bytes per cycle the board does
  not give at that clock.

Speedup = CPU time / accelerator time. ``device_peak_fraction`` = the VGG-style CNN's achieved
MAC/s (the model's MACs, channel padding not counted) over the device's peak: its DSP count x the
placed Fmax (so: model MACs / (cycles x DSP count)). Targets (issue 16):
``device_peak_fraction >= 0.5`` and ``geomean_speedup_vs_cpu_1t >= 1.0``; the script prints each
target, met or missed and by how much. Ends with one JSON line: ``min_speedup_vs_cpu_1t``,
``geomean_speedup_vs_cpu_1t``, ``device_peak_fraction``, ``fmax_mhz``, ``fmax_source``,
``targets_missed``, ``memory`` (the board memory and the bytes per cycle charged at the
Fmax), ``cpu_model``, ``cpu_ref_gflops_1t`` (and ``cpu_ref_gflops_1t_runs``, start
and end) and ``models`` (per model: cpu_1t_us, cpu_1t_spread_pct, cpu_all_us, cycles, accel_us,
speedup_vs_cpu_1t, speedup_vs_cpu_all, model_macs, accel_gmacs, bit_exact,
max_model_error_pct: the perf model's worst per-layer error against these Verilator cycles;
cpu_1t_gmacs, speedup_bound_vs_cpu_1t) and ``geomean_speedup_bound_vs_cpu_1t``: the speedup the
device could reach at most, every one of its DSPs busy every cycle at ``BOUND_MHZ`` (150, the
default accelerator's clock target), memory and padding not counted. A geomean target above
that bound cannot be met on this device against this CPU, whatever the accelerator does.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve()
BUILTINS = ("mlp", "lenet5", "resblock")
CIFAR = ("vgg_cifar", "resnet_cifar")
PEAK_MODEL = "vgg_cifar"
TARGETS = {"device_peak_fraction": 0.5, "geomean_speedup_vs_cpu_1t": 1.0}
#: the clock the issue asks of the default accelerator: the bound below assumes it
BOUND_MHZ = 150.0
MIN_REPS = 50


# ---- the CIFAR-size CNNs ----------------------------------------------------------------------
def _conv_bn(cin: int, cout: int, stride: int = 1) -> list:
    return [nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(cout)]


def _randomize_bn(model: nn.Module, seed: int) -> None:
    """Trained-looking BatchNorm statistics (the defaults fold into an identity)."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(0.1 * torch.randn(n, generator=g))
            m.running_var.copy_(0.5 + torch.rand(n, generator=g))
            m.weight.data.copy_(0.8 + 0.4 * torch.rand(n, generator=g))
            m.bias.data.copy_(0.1 * torch.randn(n, generator=g))


def vgg_cifar():
    """VGG-style CIFAR CNN: [32, 32, M, 64, 64, M, 128, M] 3x3 convs with BatchNorm + ReLU, then
    128*4*4 -> 10 (about 29 M MACs)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        layers, cin = [], 3
        for v in (32, 32, "M", 64, 64, "M", 128, "M"):
            if v == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += _conv_bn(cin, v) + [nn.ReLU()]
                cin = v
        model = nn.Sequential(*layers, nn.Flatten(), nn.Linear(128 * 4 * 4, 10))
        _randomize_bn(model, 1)
        x = torch.randn(1, 3, 32, 32)
    return model.eval(), (x,)


class _Basic(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(*_conv_bn(cin, cout, stride), nn.ReLU(), *_conv_bn(cout, cout))
        self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                    nn.BatchNorm2d(cout)) if stride != 1 or cin != cout else None)
        self.relu = nn.ReLU()

    def forward(self, x):
        s = x if self.short is None else self.short(x)
        return self.relu(self.body(x) + s)


class ResNetCifar(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(*_conv_bn(3, 16), nn.ReLU())
        self.blocks = nn.Sequential(_Basic(16, 16, 1), _Basic(16, 32, 2), _Basic(32, 64, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(self.pool(self.blocks(self.stem(x))).flatten(1))


def resnet_cifar():
    """ResNet-style CIFAR CNN: a 16-channel stem, basic blocks 16, 32 (stride 2), 64 (stride 2)
    with 1x1 shortcuts, global average pool, 64 -> 10 (about 12.5 M MACs)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = ResNetCifar()
        _randomize_bn(model, 2)
        x = torch.randn(1, 3, 32, 32)
    return model.eval(), (x,)


# ---- which models -----------------------------------------------------------------------------
def example_cnns() -> list[str]:
    """``examples/*.py`` whose model holds a Conv2d (as model specs relative to the repository)."""
    from pycde_accel.frontend.loader import load_model

    out = []
    for f in sorted((ROOT / "examples").glob("*.py")):
        spec = str(f.relative_to(ROOT))
        try:
            module = load_model(str(f)).module
        except Exception:
            continue
        if any(isinstance(m, nn.Conv2d) for m in module.modules()):
            out.append(spec)
    return out


def all_models() -> list[str]:
    return [*BUILTINS, *example_cnns(), *CIFAR]


def spec_of(name: str) -> str:
    if name in CIFAR:
        return f"{HERE}:{name}"
    return str(ROOT / name) if name.endswith(".py") else name


# ---- measurements -----------------------------------------------------------------------------
def all_threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def cpu_us(module, inputs: tuple, threads: int, reps: int, warmup: int) -> float:
    """Median wall time of one float forward pass, in microseconds."""
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.inference_mode():
            for _ in range(warmup):
                module(*inputs)
            ts = []
            for _ in range(reps):
                t = time.perf_counter()
                module(*inputs)
                ts.append(time.perf_counter() - t)
    finally:
        torch.set_num_threads(old)
    return statistics.median(ts) * 1e6


def cpu_model() -> str:
    """The CPU's name as the OS gives it (``/proc/cpuinfo``'s model name), else the platform's."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine() or "unknown"


#: the reference: one REF_N^3 float32 matmul, on one thread
REF_N = 256


def cpu_ref_gflops(reps: int = 50) -> float:
    """GFLOP/s of one thread on a REF_N^3 float32 matmul (the median of ``reps`` after warm-up)."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(REF_N, REF_N, generator=g), torch.randn(REF_N, REF_N, generator=g)
    t = cpu_us(lambda x, y: x @ y, (a, b), 1, reps, 5)
    return 2 * REF_N ** 3 / t / 1e3


def placed_fmax(cfg, work: Path, given: float | None) -> tuple[float, str]:
    """(Fmax in MHz, where it came from)."""
    if given is not None:
        return given, f"--fmax {given:g} (given on the command line)"
    from pycde_accel.fpga import project

    said = []
    print(f"placing the {cfg.array} accelerator for {cfg.target} (Yosys + nextpnr; reused from the "
          f"synthesis cache when it was placed before)", flush=True)
    res = project.synth_model("mlp", work / "synth", cfg, progress=said.append)
    rep = res.report
    if rep is None or not rep.fmax_mhz:
        raise SystemExit(f"error: no placed Fmax for {cfg.target} (use --fmax MHZ)")
    hit = next((m for m in said if "synthesis cache" in m), None)
    how = ("placed before, " + hit[hit.index("synthesis cache"):].rstrip(")")) if hit \
        else "placed in this run"
    return rep.fmax_mhz, (f"nextpnr ({how}; seed {rep.seed}, constraint {rep.freq_mhz:g} MHz, "
                          f"{rep.dsp} DSP, {rep.lut} LUT4)")


def network_signature(graph) -> tuple:
    """What the accelerator and the CPU compute, weights aside: each node's kind, output shape,
    inputs and the attributes that change its work (kernel, stride, padding, groups, ReLU)."""
    def attr(n, a):
        v = getattr(n, a, None)
        if v is None or callable(v):
            return None
        return tuple(v.shape) if hasattr(v, "shape") else repr(v)

    return tuple((n.kind, tuple(n.shape), tuple(getattr(n, "inputs", ()) or ()),
                  *(attr(n, a) for a in ("weight", "stride", "padding", "dilation", "groups",
                                         "relu", "attrs")))
                 for n in graph.nodes)


def measure(name: str, cfg, fmax: float, work: Path, reps: int, warmup: int,
            seen: dict | None = None) -> dict | str:
    """One model's figures; or, when ``seen`` (signature -> name) already holds the same
    network under another name (an example that is a built-in's copy), that name: a network
    counts once in the geomean."""
    from pycde_accel import frontend
    from pycde_accel.simulate import simulate

    fe = frontend.run(spec_of(name), seed=0, eval_batches=1)
    if seen is not None:
        sig = network_signature(fe.graph)
        if sig in seen:
            return seen[sig]
        seen[sig] = name
    module, inputs = fe.model.module.eval(), tuple(fe.model.example_inputs)
    t1a = cpu_us(module, inputs, 1, reps, warmup)
    tna = cpu_us(module, inputs, all_threads(), reps, warmup)
    r = simulate(fe, cfg, work / name.replace("/", "_").replace(".py", ""))
    if not r.bit_exact:
        raise SystemExit(f"error: {name}: the accelerator's output is not bit-exact "
                         f"({'; '.join(r.mismatches)})")
    # again after the simulation: the faster median counts, the spread says how steady it was
    t1b = cpu_us(module, inputs, 1, reps, warmup)
    tnb = cpu_us(module, inputs, all_threads(), reps, warmup)
    t1, tn = min(t1a, t1b), min(tna, tnb)
    acc_us = r.total_cycles / fmax
    errs = [abs(l["predicted_cycles"] - l["cycles"]) / l["cycles"] * 100 for l in r.layers
            if l.get("predicted_cycles") is not None and l["cycles"]]
    return {"cpu_1t_us": round(t1, 2), "cpu_1t_spread_pct": round(abs(t1a - t1b) / t1 * 100, 2),
            "cpu_all_us": round(tn, 2), "cpu_all_threads": all_threads(),
            "cycles": r.total_cycles, "accel_us": round(acc_us, 2),
            "speedup_vs_cpu_1t": round(t1 / acc_us, 4), "speedup_vs_cpu_all": round(tn / acc_us, 4),
            "model_macs": r.macs, "accel_gmacs": round(r.macs / acc_us / 1e3, 4),
            "bit_exact": r.bit_exact,
            "max_model_error_pct": round(max(errs), 3) if errs else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", metavar="NAME",
                    help="these models only (names as printed: mlp, examples/small_cnn.py, "
                         "vgg_cifar, ...)")
    ap.add_argument("--reps", type=int, default=MIN_REPS,
                    help=f"timed CPU runs per model and thread count (default {MIN_REPS})")
    ap.add_argument("--warmup", type=int, default=10, help="CPU runs before timing (default 10)")
    ap.add_argument("--fmax", type=float, default=None, metavar="MHZ",
                    help="the accelerator's clock (default: the placed Fmax of the config)")
    ap.add_argument("--array", default=None, metavar="RxC", help="array shape (default: the default config)")
    ap.add_argument("--spad", type=int, default=None, metavar="N",
                    help="A and B scratchpad depth (spad_a_depth = spad_b_depth; default: the "
                         "default config's)")
    ap.add_argument("--axi", type=int, default=None, metavar="BITS",
                    help="AXI data width in bits (default: the default config's); the board's "
                         "memory bandwidth is charged whatever the width")
    ap.add_argument("--work", type=Path, help="keep the simulation and synthesis folders here")
    args = ap.parse_args(argv)

    from pycde_accel.config import AccelConfig, parse_array
    from pycde_accel.errors import UserError
    from pycde_accel.fpga.devices import get_device
    from pycde_accel.report import memory_section

    if args.reps < 1 or args.warmup < 0 or (args.fmax is not None and not args.fmax > 0):
        print("error: --reps must be >= 1, --warmup >= 0, --fmax > 0", file=sys.stderr)
        return 2
    cfg = AccelConfig()
    if args.array:
        r, c = parse_array(args.array)
        cfg = cfg.replace(rows=r, cols=c)
    if args.spad is not None:
        cfg = cfg.replace(spad_a_depth=args.spad, spad_b_depth=args.spad)
    if args.axi is not None:
        cfg = cfg.replace(axi_data_width=args.axi)
    try:
        cfg.validate()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    only = args.only or []
    # the examples are loaded (to see which are CNNs) only when a run needs them
    names = ([n for n in (*BUILTINS, *CIFAR) if n in only]
             if only and not any(n.endswith(".py") for n in only) else all_models())
    if only:
        bad = [n for n in only if n not in names]
        if bad:
            print(f"error: unknown model(s) {', '.join(bad)}; known: {', '.join(BUILTINS + CIFAR)} "
                  f"and the CNNs of examples/*.py", file=sys.stderr)
            return 2
        names = [n for n in names if n in only]
    device = get_device(cfg.target)
    if args.reps < MIN_REPS:
        print(f"note: --reps {args.reps} < {MIN_REPS}: the CPU medians are not the benchmark's")
    tmp, load = None, None
    if args.work:
        work = args.work
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="pycde_accel_vs_cpu_")
        work = Path(tmp.name)
    try:
        fmax, source = placed_fmax(cfg, work, args.fmax)
        print(f"accelerator {cfg.array}, {cfg.axi_data_width}-bit AXI, on {device.name} "
              f"({device.part}, {device.dsp} DSP) at {fmax:.2f} MHz: {source}", flush=True)
        # the board memory is charged at the clock the latency is counted at (bytes per
        # cycle = the board's bytes/s / fmax), not at the config's nominal clock_mhz
        cfg_at = cfg.replace(clock_mhz=round(fmax, 3))
        mem = memory_section(cfg_at)
        b = mem["board"]
        print(f"memory: {b['kind'] + ', ' + str(b['peak_gb_s']) + ' GB/s' if b else 'none named'}; "
              f"at {fmax:.2f} MHz {mem['board_bytes_per_cycle']} bytes/cycle, charged "
              f"{mem['charged_bytes_per_cycle']} (the AXI bus moves at most "
              f"{2 * cfg.axi_data_width // 8}: a beat each way)", flush=True)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        print(f"CPU: float PyTorch {torch.__version__}, median of {args.reps} after {args.warmup} "
              f"warm-up, 1 thread and {all_threads()} threads"
              + ("" if load is None else f" (load average {load:.2f} when it started: other "
                 f"work on the machine slows the CPU figures)"), flush=True)
        cpu, ref0 = cpu_model(), cpu_ref_gflops()
        print(f"CPU: {cpu}; reference ({REF_N}^3 float32 matmul, 1 thread): {ref0:.1f} GFLOP/s",
              flush=True)
        results, seen, same = {}, {}, {}
        for name in names:
            m = measure(name, cfg_at, fmax, work, args.reps, args.warmup, seen)
            if isinstance(m, str):
                same[name] = m
                print(f"  {name:24} the same network as {m} (layers, shapes, kernels, "
                      f"strides): counted once", flush=True)
                continue
            results[name] = m
            print(f"  {name:24} CPU 1t {m['cpu_1t_us']:>10.1f} us (+-{m['cpu_1t_spread_pct']:.1f}%)  "
                  f"CPU {m['cpu_all_threads']}t "
                  f"{m['cpu_all_us']:>10.1f} us  accel {m['accel_us']:>10.1f} us "
                  f"({m['cycles']} cycles, bit-exact)  speedup 1t {m['speedup_vs_cpu_1t']:6.3f}  "
                  f"all {m['speedup_vs_cpu_all']:6.3f}  {m['accel_gmacs']:.3f} GMAC/s of "
                  f"{m['model_macs']} MACs; perf model worst layer "
                  f"{'-' if m['max_model_error_pct'] is None else m['max_model_error_pct']}%",
                  flush=True)
        ref1 = cpu_ref_gflops()
        print(f"CPU reference again at the end: {ref1:.1f} GFLOP/s (at the start {ref0:.1f})")
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        if tmp is not None:
            tmp.cleanup()
    slower = [n for n, m in results.items() if m["cpu_all_us"] > 1.5 * m["cpu_1t_us"]]
    if slower:
        print(f"note: with {all_threads()} threads the CPU was more than 1.5x slower than with 1 on "
              f"{len(slower)} of {len(results)} models ({', '.join(slower)}): its cores were busy "
              f"with other work, so the all-thread figures say little here")
    sp = [m["speedup_vs_cpu_1t"] for m in results.values()]
    geo = math.exp(sum(math.log(s) for s in sp) / len(sp))
    # what the device could do at most: every DSP busy every cycle at BOUND_MHZ (compute only:
    # no memory, no padding), against the CPU's time on the same model
    dev_gmacs = device.dsp * BOUND_MHZ / 1e3
    for m in results.values():
        m["cpu_1t_gmacs"] = round(m["model_macs"] / m["cpu_1t_us"] / 1e3, 4)
        m["speedup_bound_vs_cpu_1t"] = round(dev_gmacs / m["cpu_1t_gmacs"], 4)
    bound = math.exp(sum(math.log(m["speedup_bound_vs_cpu_1t"]) for m in results.values())
                     / len(results))
    peak = None
    if PEAK_MODEL in results:
        m = results[PEAK_MODEL]
        peak = m["model_macs"] / (m["cycles"] * device.dsp)
    fig = {"min_speedup_vs_cpu_1t": round(min(sp), 4), "geomean_speedup_vs_cpu_1t": round(geo, 4),
           "device_peak_fraction": None if peak is None else round(peak, 4)}
    print(f"targets ({cfg.array}, {cfg.rows * cfg.cols} PEs of the device's {device.dsp} DSPs at "
          f"{fmax:.2f} MHz):")
    missed = []
    for key, want in TARGETS.items():
        got = fig[key]
        if got is None:
            print(f"  {key:<28} not measured ({PEAK_MODEL} not in this run)   target >= {want:g}")
            continue
        if got >= want:
            print(f"  {key:<28} {got:8.4f}   target >= {want:g}   met")
        else:
            missed.append(key)
            print(f"  {key:<28} {got:8.4f}   target >= {want:g}   MISSED by {want - got:.4f} "
                  f"({100 * (want - got) / want:.0f}% short)")
    if "geomean_speedup_vs_cpu_1t" in missed:
        below = [n for n, m in results.items() if m["speedup_bound_vs_cpu_1t"] < 1]
        print(f"  note: every one of the device's {device.dsp} DSPs busy every cycle at "
              f"{BOUND_MHZ:g} MHz ({dev_gmacs:.1f} GMAC/s, no memory counted) would give a "
              f"geomean of {bound:.3f}"
              + (f"; below 1 even then on {', '.join(below)} (the CPU runs them at "
                 + ", ".join(f"{results[n]['cpu_1t_gmacs']:.1f}" for n in below)
                 + " GMAC/s)" if below else ""))
    if "device_peak_fraction" in missed:
        ceiling = cfg.rows * cfg.cols / device.dsp
        print(f"  note: the array holds {cfg.rows * cfg.cols} of {device.dsp} DSPs, so even every "
              f"PE busy every cycle gives {ceiling:.3f} of the device's peak")
    print(json.dumps({**fig, "fmax_mhz": round(fmax, 2), "fmax_source": source,
                      "array": cfg.array, "axi_data_width": cfg.axi_data_width,
                      "spad_a_depth": cfg.spad_a_depth,
                      "spad_b_depth": cfg.spad_b_depth, "target": device.name, "device_dsp": device.dsp,
                      "memory": mem,
                      "reps": args.reps, "cpu_all_threads": all_threads(),
                      "load_average_1min": None if load is None else round(load, 2),
                      "cpu_model": cpu, "cpu_ref_gflops_1t": round(max(ref0, ref1), 2),
                      "cpu_ref_gflops_1t_runs": [round(ref0, 2), round(ref1, 2)],
                      "targets": TARGETS, "targets_missed": missed, "models": results,
                      "same_network_as": same,
                      "geomean_speedup_bound_vs_cpu_1t": round(bound, 4),
                      "bound_mhz": BOUND_MHZ},
                     sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
