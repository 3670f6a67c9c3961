"""Command line: ``python -m pycde_accel {gen,sim,synth,ir,report} [MODEL] [--out DIR] ...``.

Every subcommand takes ``--array RxC``, ``--target NAME``, ``--schedule dynamic|static`` (the
post-op kernels' lowering route, ``config.schedule``), ``--memory board|ideal`` (the DRAM
bandwidth the simulators and the perf model charge, ``config.memory``), ``--seed`` and ``--debug``; ``sim`` and
``report`` take ``--waves`` (VCD). Bad input (a model file that is missing, lacks the function,
returns the wrong types or uses an unsupported op; ``--array 0x8``; an unknown target; an
unwritable ``--out``) is one ``error:`` line on stderr, exit code 2, and no output folder.

Output folders (:mod:`pycde_accel.outdir`): every command that writes builds its output in a
staging folder and moves it into place whole; a model is loaded and compiled before anything is
created; only an earlier output of this tool (its ``.pycde-accel`` marker) or an empty folder is
replaced, and ``.``, ``..``, ``""``, home, root, the repository and the model's folder are refused.
An interrupt (SIGINT, SIGTERM) ends every child process (:func:`pycde_accel.proc.guard`), leaves
``--out`` as it was and exits 130.

MODEL is ``path/to/file.py[:function]`` (the function, default ``build``, returns
``(torch.nn.Module, tuple_of_example_tensors)``), an importable ``package.module:callable`` that
returns a ``torch.nn.Module`` when called with no arguments (with ``--input-shape`` and
``--input-dtype``; :func:`pycde_accel.frontend.loader.callable_spec`) or a built-in name; no
MODEL means the built-in default. Errors the user can fix are one line on stderr and a non-zero exit; ``--debug`` shows
the traceback of anything else.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from .config import MEMORIES, SCHEDULES, AccelConfig, parse_array
from .errors import UserError

EPILOG = """examples:
  python -m pycde_accel gen                      # default model, SV into build/
  python -m pycde_accel gen mlp --array 8x8 --out out/mlp
  python -m pycde_accel gen examples/lenet5.py:build --out out/lenet   # a model file's function
  python -m pycde_accel sim examples/lenet5.py --out out/lenet     # Verilator, bit-exact check
  python -m pycde_accel synth --array 2x4 --target ecp5-25f --out out/small   # Yosys + nextpnr
  python -m pycde_accel report --out out/mlp     # report.md/.html: cycles, roofline, resources
  python -m pycde_accel ir --list                # the lowering stages

gen writes DIR/sv/ (whole accelerator, filelist.f), DIR/ir/, DIR/design.json, DIR/dram.bin,
DIR/weights.npz and DIR/host/ (C headers: CSR map, command encoding, layer table; a standalone
Python driver).

MODEL is a built-in name (mlp, lenet5, resblock), path/to/file.py[:function] (the function,
default build, returns (torch.nn.Module, tuple_of_example_tensors)) or package.module:callable,
an importable callable that returns a torch.nn.Module when called with no arguments, with
--input-shape (and --input-dtype, default float32), e.g.
  gen torchvision.models:resnet18 --input-shape 1x3x32x32     (random weights, no model file)
"""


REPORT_EPILOG = """Simulates the model (reusing DIR/sim/result.json when it is for the same model and config),
then writes DIR/report.md, a self-contained DIR/report.html (charts embedded) and DIR/report.json:
cycles per layer (core busy / stalled / other; the perf model's prediction when there is one), a
roofline chart (compute and bandwidth bounds, one point per layer) and resources against the
target's capacity (DIR/synth/report.json from 'synth' when present, for the same config; its
target is taken when --target is not given; else the fit estimate).
Without MODEL, the model of the design DIR holds (DIR/design.json, else DIR/sim/result.json;
a model file is looked for where its spec says), else the built-in default.
Exit status 0 only when the simulation is bit-exact.

examples:
  python -m pycde_accel report --out out/mlp
  python -m pycde_accel synth lenet5 --array 2x4 --target ecp5-25f --out out/lenet && python -m pycde_accel report lenet5 --array 2x4 --out out/lenet
"""


SIM_EPILOG = """Runs every layer of the model on the whole accelerator in Verilator (cocotb, cocotbext-axi
AXI RAM and AXI-Lite master, the host driver of pycde_accel.host), reads the output back from
the simulated DRAM and compares it with the frontend's integer reference. Exit status 0 only
when it is bit-exact. The host starts the accelerator once for the whole model (one command
list, a FENCE between layers; per-layer figures from the FENCEs' counter stamps), or once per
layer with --per-layer-starts. Prints per layer the cycles, PE utilization and DMA bytes, the
cycles from the first start to the last done with the host's CSR traffic, and the agreement
with float PyTorch. Writes DIR/sim/ (SV, Verilator build, plan, result.json).

examples:
  python -m pycde_accel sim                          # default model, 8x8 array
  python -m pycde_accel sim lenet5 --array 4x8 --out out/lenet
  python -m pycde_accel sim mlp --axi-pause 0.3      # random AXI back-pressure
  python -m pycde_accel sim mlp --per-layer-starts   # one start and interrupt per layer
"""


SYNTH_EPILOG = """Open-flow targets write DIR/synth/report.json and report.md (with the Yosys and nextpnr
logs beside them; nextpnr runs out of context with seed 1, towards the config's clock);
Vivado/Quartus targets write project scripts into DIR/vivado/ or DIR/quartus/. Placing the
default accelerator on the ECP5-85F takes 15-25 minutes on one core (a placement already in
the synthesis cache is reused); --no-place stops after Yosys (a few minutes: the cells, no Fmax).

examples:
  python -m pycde_accel synth --target ecp5-85f --no-place --out out/default   # Yosys only
  python -m pycde_accel synth --array 2x4 --target ecp5-25f --out out/small    # placed
  python -m pycde_accel synth --array 4x4 --target 5ceba4 --out out/quartus  # Quartus scripts
  python -m pycde_accel synth --target xc7a100t     # Vivado Tcl + XDC, no Vivado needed
"""


MODEL_HELP = ("path/to/file.py[:function], package.module:callable (with --input-shape) or a "
              "built-in name (default: the built-in default model)")


def _add_model(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", nargs="?", default=None, help=MODEL_HELP)
    p.add_argument("--input-shape", default=None, metavar="SHAPE",
                   help="the input shape of a package.module:callable MODEL, e.g. 1x3x32x32")
    p.add_argument("--input-dtype", default=None, metavar="DTYPE",
                   help="the input dtype of a package.module:callable MODEL (default float32)")


def _add_common(p: argparse.ArgumentParser) -> None:
    _add_model(p)
    p.add_argument("--out", default="build", help="output folder (default: build/)")
    p.add_argument("--array", default=None, metavar="RxC", help="systolic array rows x cols, e.g. 8x8")
    p.add_argument("--seed", type=int, default=0, help="seed for calibration and test inputs (default 0)")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")


def _add_hw(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default=None, metavar="NAME",
                   help="FPGA target (default: the config's, ecp5-85f); an unknown name lists the known ones")
    p.add_argument("--schedule", default=None, choices=SCHEDULES,
                   help="lowering route of the post-op kernels: dynamic (CIRCT handshake), static "
                        "(CIRCT pipeline) or calyx (CIRCT calyx, an FSM per kernel); default: "
                        "the config's")
    p.add_argument("--memory", default=None, choices=MEMORIES,
                   help="DRAM bandwidth the simulator and the perf model charge: board (the "
                        "target board's memory at the config's clock, the default) or ideal "
                        "(one AXI beat per cycle each way, whatever the board has)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pycde_accel",
        description="Compile a PyTorch model into an int8 systolic FPGA accelerator (SystemVerilog via CIRCT).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    g = sub.add_parser("gen", help="generate SV, IR, design.json and host files for a model",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_common(g)
    _add_hw(g)
    m = sub.add_parser("sim", help="run the model on the accelerator in Verilator; exit 0 only if bit-exact",
                       epilog=SIM_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_common(m)
    _add_hw(m)
    m.add_argument("--axi-pause", type=float, default=0.0, metavar="P",
                   help="probability that each AXI channel of the memory pauses in a cycle (default 0)")
    m.add_argument("--waves", action="store_true", help="write a VCD waveform (DIR/sim/run/dump.vcd)")
    m.add_argument("--per-layer-starts", action="store_true",
                   help="start the accelerator once per layer and wait for its interrupt "
                        "between layers (default: the whole model per start, FENCEs between "
                        "the layers)")
    s = sub.add_parser("synth", help="generate, then synthesize with Yosys + nextpnr (or write vendor scripts)",
                       epilog=SYNTH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_common(s)
    _add_hw(s)
    s.add_argument("--no-place", action="store_true",
                   help="open-flow targets: Yosys only (the cells: LUT/FF/DSP/BRAM in a few "
                        "minutes), no placement and no Fmax")
    i = sub.add_parser("ir", help="list the lowering stages, or print one stage's IR (built on demand)")
    _add_common(i)
    i.add_argument("--list", action="store_true", help="list the stages of the route")
    i.add_argument("--stage", default=None, metavar="NAME", help="print this stage's IR, e.g. 06_hw or hw")
    i.add_argument("--schedule", default=None, choices=SCHEDULES,
                   help="the kernels' lowering route: static (CIRCT pipeline dialect), dynamic "
                        "(CIRCT handshake) or calyx (CIRCT calyx with the project's passes); "
                        "default: the config's, as gen builds it")
    i.add_argument("--kernel", default=None, metavar="NAME",
                   help="a post-op kernel (requantize, residual_add, maxpool, clamp ...) instead of the model")
    r = sub.add_parser("report", help="simulate, then write report.md/.html/.json (cycles, roofline, resources)",
                       epilog=REPORT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_common(r)
    _add_hw(r)
    r.add_argument("--axi-pause", type=float, default=0.0, metavar="P",
                   help="probability that each AXI channel of the memory pauses in a cycle (default 0)")
    r.add_argument("--waves", action="store_true", help="write a VCD waveform (DIR/sim/run/dump.vcd)")
    _add_dse(sub)
    _add_partition(sub)
    m.add_argument("--partition", default=None, metavar="PLAN",
                   help="run a plan of 'partition' (DIR/partition.json): host segments in PyTorch, "
                        "accelerator segments in Verilator")
    return parser


PARTITION_EPILOG = """Places every layer of the model on the accelerator or on the host so that the end-to-end
latency (layers one after the other, plus every tensor that crosses the link) is least, and
writes DIR/partition.json (per layer: op, device, predicted time on each device, the boundary
transfers; totals of the plan, all-host and all-accelerator), DIR/partition.md and the plot
DIR/partition.png. Ops the accelerator lacks are placed on the host (gen and sim refuse them).

Costs: accelerator = perf-model cycles at the placed Fmax (DIR/synth/report.json of 'synth'
for the same config) or else the config's clock; host cpu = each layer timed in PyTorch here;
gpu:NAME = a roofline of a data-sheet preset (t4, a100, orin-nano); SPEC.json = your own
{"name", "peak_tops": {"fp32": T, "fp16": T, "int8": T}, "bandwidth_gbs", "launch_us",
"precision"}; link = bytes / bandwidth + latency (pcie3x4, axi).

Then 'sim MODEL --partition DIR/partition.json --out DIR' runs the plan: host segments in
PyTorch, accelerator segments in Verilator (each bit-exact with its integer reference), the
end-to-end output against float PyTorch; DIR/partition_sim/result.json.

examples:
  python -m pycde_accel partition examples/partition/host_op.py --host gpu:t4 --link axi --out out/part-t4
"""


def _add_partition(sub) -> None:
    from . import partition
    p = sub.add_parser("partition", help="place each layer on the accelerator or the host (costs, "
                                         "transfers); ops the accelerator lacks go to the host",
                       epilog=PARTITION_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_common(p)
    _add_hw(p)
    p.add_argument("--host", default="cpu", metavar="HOST",
                   help="cpu (timed here), gpu:NAME (" + ", ".join(partition.GPUS) + ") or SPEC.json")
    p.add_argument("--link", default=partition.DEFAULT_LINK, choices=sorted(partition.LINKS),
                   help=f"host-accelerator link (default {partition.DEFAULT_LINK})")


DSE_EPILOG = """Sweeps array shape (cols a multiple of the AXI beat), AXI width, scratchpad depths and max_k
(with the narrowest accumulator that proves it), keeps the configs that fit the target's
DSP/BRAM/LUT budget (fpga.fit) and that the back end can compile the model for, ranks them by
latency: the cycles pycde_accel.perfmodel predicts over the Fmax that fpga.fit's model (fitted
to placed designs) predicts (in parallel on the local cores), simulates the best --confirm N
in Verilator (and places them with --synth: their real Fmax and latency beside) and prints
the best --top N with GMAC/s and the fraction of the device's peak (DSP count x Fmax), the
Pareto front of latency against utilization, and every reason each refused config is refused.
Writes DIR/dse.json.

--ray [ADDRESS] runs the candidates (prediction, Verilator, synthesis) as Ray tasks on the
cluster at ADDRESS, or on a local Ray instance of --jobs CPUs (pip install -e '.[ray]');
the ranking is the local pool's.

examples:
  python -m pycde_accel dse lenet5 --rows 2,4 --cols 4,8 --top 5 --confirm 1
  python -m pycde_accel dse resblock --target ecp5-25f --rows 2,4 --cols 4,8 --axi 32
"""


def _int_list(text: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not vals:
        raise argparse.ArgumentTypeError("expected at least one value")
    return vals


def _add_dse(sub) -> None:
    from . import dse
    d = sub.add_parser("dse", help="design-space exploration: fastest configs within a target's budget",
                       epilog=DSE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_model(d)
    d.add_argument("--target", default="ecp5-85f", metavar="NAME", help="FPGA target (default ecp5-85f)")
    d.add_argument("--out", default="build/dse", help="output folder (default: build/dse)")
    d.add_argument("--top", type=int, default=10, metavar="N", help="rows of the ranking printed (default 10)")
    d.add_argument("--confirm", type=int, default=2, metavar="N",
                   help="simulate the best N in Verilator (default 2; 0: prediction only)")
    d.add_argument("--synth", action="store_true", help="also synthesize the confirmed candidates")
    d.add_argument("--jobs", type=int, default=None, metavar="J", help="worker processes (default: all cores)")
    d.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run the candidates as Ray tasks: on the cluster at ADDRESS, or on a local "
                        "Ray instance (--jobs CPUs) without one; needs pip install -e '.[ray]'")
    d.add_argument("--rows", type=_int_list, default=dse.DEFAULT_ROWS, metavar="LIST",
                   help=f"array rows to try (default {','.join(map(str, dse.DEFAULT_ROWS))})")
    d.add_argument("--cols", type=_int_list, default=dse.DEFAULT_COLS, metavar="LIST",
                   help=f"array cols to try (default {','.join(map(str, dse.DEFAULT_COLS))})")
    d.add_argument("--axi", type=_int_list, default=dse.DEFAULT_AXI, metavar="LIST",
                   help=f"AXI data widths (default {','.join(map(str, dse.DEFAULT_AXI))})")
    d.add_argument("--spad", type=_int_list, default=dse.DEFAULT_SPAD, metavar="LIST",
                   help=f"A/B scratchpad depths (default {','.join(map(str, dse.DEFAULT_SPAD))})")
    d.add_argument("--spad-c", type=_int_list, default=dse.DEFAULT_SPAD_C, metavar="LIST",
                   help=f"spad_c_depth values (default {','.join(map(str, dse.DEFAULT_SPAD_C))})")
    d.add_argument("--spad-b", type=_int_list, default=None, metavar="LIST",
                   help="B scratchpad depths of their own (default: the same as --spad)")
    d.add_argument("--max-k", type=_int_list, default=dse.DEFAULT_MAX_K, metavar="LIST",
                   help="max_k values, each with the narrowest accumulator that proves it "
                        f"(default {','.join(map(str, dse.DEFAULT_MAX_K))})")
    d.add_argument("--seed", type=int, default=0, help="seed for calibration and test inputs (default 0)")
    d.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")


def config_from_args(args: argparse.Namespace) -> AccelConfig:
    cfg = AccelConfig()
    if getattr(args, "array", None):
        rows, cols = parse_array(args.array)
        cfg = cfg.replace(rows=rows, cols=cols)
        # A C-tile row must be whole AXI beats: a narrow array gets the widest bus that fits
        # (4 columns -> 32 bit); fewer than 4 columns cannot be served (validate says why).
        while cfg.axi_data_width > 32 and (cols * cfg.data_width) % cfg.axi_data_width:
            cfg = cfg.replace(axi_data_width=cfg.axi_data_width // 2)
    from .fpga import fit, get_device
    if getattr(args, "target", None):
        cfg = cfg.replace(target=get_device(args.target).name)
    cfg = fit.fit_store_lanes(cfg, get_device(cfg.target))   # as many lanes as the DSPs allow
    if getattr(args, "schedule", None) and args.command != "ir":
        cfg = cfg.replace(schedule=args.schedule)
    if getattr(args, "memory", None):
        cfg = cfg.replace(memory=args.memory)
    return cfg.validate()


def _check_out(args: argparse.Namespace) -> Path:
    """Refuse a dangerous or unwritable ``--out`` before any work (outdir.check_out: the empty
    string, the current folder or one holding it, home, root, the repository, the model
    file's folder, a folder of the user's own files); creates nothing."""
    from .outdir import check_out
    check_out(args.out, model=getattr(args, "model", None))
    return Path(args.out)


def _retarget(err: UserError, stage: Path, out: Path) -> UserError:
    """``err`` with the staging folder's path in its message replaced by the output's."""
    return UserError(str(err).replace(str(stage), str(out)), err.exit_code)


#: what gen and sim add to the refusal of a model with ops the accelerator lacks
PARTITION_HINT = ("; 'python -m pycde_accel partition MODEL --host cpu --out DIR' can place "
                  "such ops on the host (and 'sim MODEL --partition DIR/partition.json' runs the plan)")


def _hint_partition(fn):
    """``fn(args)`` with PARTITION_HINT added to the refusal of unsupported ops."""
    def run(args):
        from .frontend.capture import UnsupportedModel
        try:
            return fn(args)
        except UnsupportedModel as e:
            raise UserError(f"{e}{PARTITION_HINT}", e.exit_code) from None
    return run


def _cmd_gen(args: argparse.Namespace) -> int:
    from . import flow
    cfg = config_from_args(args)
    out = _check_out(args)
    flow.gen(args.model, out, cfg, seed=args.seed, progress=_progress)
    print(flow.summary(out))
    return 0


def _model_first(args: argparse.Namespace, cfg: AccelConfig):
    """Frontend and back end of the command's model, before anything is created: a model (or
    a model/config pair) that cannot be built is refused here. Returns (fe, compiled)."""
    from . import frontend
    from .backend import compile_program
    if not 0.0 <= getattr(args, "axi_pause", 0.0) < 1.0:
        raise UserError(f"--axi-pause must be in [0, 1), got {args.axi_pause}")
    _progress(f"frontend: export and quantize {args.model or 'the default model'}")
    fe = frontend.run(args.model, seed=args.seed, eval_batches=1)
    _progress(f"back end: commands for the {cfg.array} array")
    return fe, compile_program(fe, cfg)


def _simulate_into(args: argparse.Namespace, cfg: AccelConfig, folder: Path, fe, compiled):
    """The whole accelerator in Verilator into ``folder/sim`` (``sim/result.json``); returns
    (SimResult or None, the UserError of a failed simulation or None). A failed simulation
    keeps its logs: the caller still moves the output into place, then raises."""
    from .simulate import simulate
    try:
        r = simulate(fe, cfg, folder / "sim", axi_pause=args.axi_pause, seed=args.seed,
                     waves=args.waves, progress=_progress, compiled=compiled,
                     per_layer_starts=getattr(args, "per_layer_starts", False))
    except UserError as e:
        return None, e
    (folder / "sim" / "result.json").write_text(json.dumps(r.to_dict(), indent=2) + "\n")
    return r, None


def _cmd_partition(args: argparse.Namespace) -> int:
    from . import partition
    from .outdir import staged_output
    cfg = config_from_args(args)
    out = _check_out(args)
    partition.host_spec(args.host)                 # a bad --host is refused before any work
    plan = partition.make_plan(args.model, cfg, args.host, args.link, seed=args.seed,
                               fmax_dir=out, progress=_progress)
    with staged_output(out, model=args.model, update=True, drop=partition.FILES) as stage:
        written = [out / p.relative_to(stage) for p in partition.write(plan, stage)]
    for line in partition.report_lines(plan):
        print(line)
    for path in written:
        print(f"wrote {path}")
    return 0


def _cmd_sim_partition(args: argparse.Namespace, cfg: AccelConfig, out: Path) -> int:
    from . import partition
    from .outdir import staged_output
    plan = partition.read_plan(args.partition)
    if not (args.array or args.target or args.schedule or args.memory) \
            and isinstance(plan.get("config"), dict):
        cfg = AccelConfig.from_dict(plan["config"]).validate()     # the config it was planned for
    with staged_output(out, model=args.model, update=True, drop=("partition_sim",)) as stage:
        res = partition.run_plan(args.model, cfg, plan, stage / "partition_sim", seed=args.seed,
                                 progress=_progress)
        (stage / "partition_sim" / "result.json").write_text(json.dumps(res, indent=1) + "\n")
    for line in partition.run_lines(res):
        print(line)
    return 0 if res["bit_exact"] else 1


def _cmd_sim(args: argparse.Namespace) -> int:
    from .outdir import staged_output
    from .simulate import report_lines
    cfg = config_from_args(args)
    out = _check_out(args)
    if args.partition:
        return _cmd_sim_partition(args, cfg, out)
    fe, compiled = _model_first(args, cfg)
    # the earlier output's other files (gen's, synth's) stay; sim/ is this run's
    with staged_output(out, model=args.model, update=True, drop=("sim",)) as stage:
        r, failed = _simulate_into(args, cfg, stage, fe, compiled)
    if failed:
        raise _retarget(failed, stage, out)
    print(f"{r.model} on the {cfg.array} accelerator ({cfg.axi_data_width}-bit AXI), Verilator:")
    for line in report_lines(r):
        print(line)
    return 0 if r.bit_exact else 1


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return None


def _held_model(out: Path) -> str | None:
    """The spec of the model whose design or simulation ``out`` holds (design.json, else
    sim/result.json), as a spec this process can load; None when ``out`` holds none. A model
    file that is not where the spec says is a UserError (the spec keeps the file name only)."""
    from .frontend import models
    from .frontend.loader import split_spec
    design = _read_json(out / "design.json") or {}
    spec = (design.get("model") or {}).get("spec") if isinstance(design.get("model"), dict) else None
    if not spec:
        spec = (_read_json(out / "sim" / "result.json") or {}).get("model")
    if not isinstance(spec, str) or not spec:
        return None
    from .frontend.loader import is_callable_spec
    if spec in models.BUILTINS or is_callable_spec(spec) or Path(split_spec(spec)[0]).is_file():
        return spec
    raise UserError(f"--out {out} holds a design of the model {spec!r}, which is not a built-in "
                    f"and not a file here: name its model file (report path/to/"
                    f"{split_spec(spec)[0]} --out {out})")


def _hw(config) -> dict | None:
    """A config dict without ``memory`` (the memory model changes no hardware: a synthesis
    report holds for either)."""
    if not isinstance(config, dict):
        return None
    return {k: v for k, v in config.items() if k != "memory"}


def _cmd_report(args: argparse.Namespace) -> int:
    from . import report
    from .outdir import staged_output
    cfg = config_from_args(args)
    out = _check_out(args)
    if args.model is None:
        # no MODEL: the model of the design --out holds (else the built-in default)
        args.model = _held_model(out)
    synth = _read_json(out / "synth" / "report.json")
    if synth and not args.target and isinstance(synth.get("config"), dict) \
            and _hw(synth["config"]) == _hw(cfg.replace(target=synth["config"].get("target")).to_dict()):
        cfg = cfg.replace(target=synth["config"]["target"])      # the target 'synth' ran for
    if synth and _hw(synth.get("config")) != _hw(cfg.to_dict()):
        synth = None                                              # another config: estimate
    fe, compiled = _model_first(args, cfg)
    sim = None
    prev = _read_json(out / "sim" / "result.json")
    if prev and not args.waves and not args.axi_pause and prev.get("model") == fe.model.spec \
            and prev.get("config") == cfg.to_dict():
        sim = prev
        _progress(f"reusing the simulation in {out / 'sim' / 'result.json'}")
    drop = ("report.json", "report.md", "report.html", report.CHART_CYCLES, report.CHART_ROOFLINE)
    failed = None
    # the earlier output (gen's, synth's, a reused sim/) is carried into the new one
    with staged_output(out, model=args.model, update=True,
                       drop=drop + (() if sim is not None else ("sim",))) as stage:
        if sim is None:
            r, failed = _simulate_into(args, cfg, stage, fe, compiled)
            sim = r.to_dict() if r is not None else None
        if sim is not None:
            predicted = None
            if not all(l.get("predicted_cycles") is not None for l in sim["layers"]):
                predicted = report.predicted_cycles(compiled, cfg)
            rep = report.build(sim, cfg, predicted=predicted, synth=synth, compiled=compiled)
            written = [out / p.relative_to(stage) for p in rep.write(stage)]
    if failed:
        raise _retarget(failed, stage, out)
    for path in written:
        print(f"wrote {path}")
    print(f"{sim['model']} on {cfg.array}: {sim['total_cycles']} cycles, bit-exact: "
          f"{'yes' if sim['bit_exact'] else 'NO'}")
    return 0 if sim["bit_exact"] else 1


def _cmd_synth(args: argparse.Namespace) -> int:
    from .fpga import project
    cfg = config_from_args(args)
    out = _check_out(args)
    result = project.synth_model(args.model, out, cfg, seed=args.seed, progress=_progress,
                                 place=not args.no_place)
    if result.report is not None:
        print(project.summary(result.report))
    for path in result.written:
        print(f"wrote {path}")
    return 0


def _cmd_ir(args: argparse.Namespace) -> int:
    from .lowering import inspect_ir
    from .outdir import staged_output
    args.schedule = args.schedule or AccelConfig().schedule    # the route gen takes
    if args.list or not args.stage:
        print(inspect_ir.list_stages(args.schedule, kernel=args.kernel is not None))
        return 0
    out = _check_out(args)
    # the stages already built in --out are reused (and kept), new ones added
    with staged_output(out, model=args.model, update=True) as stage:
        text = inspect_ir.stage_text(stage, args.stage, model=args.model, kernel=args.kernel,
                                     schedule=args.schedule, seed=args.seed)
    sys.stdout.write(text)
    return 0


def _cmd_dse(args: argparse.Namespace) -> int:
    from . import dse
    from .fpga import get_device
    from .outdir import staged_output
    device = get_device(args.target)
    out = _check_out(args)
    if args.top < 1 or args.confirm < 0 or (args.jobs is not None and args.jobs < 1):
        raise UserError("dse: --top and --jobs must be >= 1, --confirm >= 0")
    for name in ("rows", "cols", "spad", "spad_c", "axi", "max_k", "spad_b"):
        bad = [v for v in (getattr(args, name) or ()) if v < 1]
        if bad:
            raise UserError(f"dse: --{name.replace('_', '-')} {bad[0]}: every value must be >= 1")
    configs = dse.space(rows=args.rows, cols=args.cols, axi=args.axi, spad=args.spad,
                        spad_c=args.spad_c, max_k=args.max_k, spad_b=args.spad_b,
                        target=device.name)
    with staged_output(out, model=args.model) as stage:
        res = dse.run_dse(args.model, device.name, stage, configs=configs,
                          confirm_n=args.confirm, synth=args.synth, seed=args.seed,
                          jobs=args.jobs, progress=_progress, ray=args.ray)
        text = json.dumps(res.to_dict(), indent=1) + "\n"
        (stage / "dse.json").write_text(text.replace(str(stage), str(out)))
    for line in dse.table_lines(res, args.top):
        print(line)
    print(f"wrote {out / 'dse.json'}")
    bad = [c for c in res.ranked if c.bit_exact is False or c.confirm_error]
    for c in bad:
        if c.confirm_error:
            print(f"error: {c.confirm_error}", file=sys.stderr)
    return 1 if bad else 0


def _progress(msg: str) -> None:
    """Progress for long steps: on stderr, only when it is a terminal."""
    if sys.stderr.isatty():
        print(f"[pycde-accel] {msg}", file=sys.stderr, flush=True)


COMMANDS = {"gen": _hint_partition(_cmd_gen), "sim": _hint_partition(_cmd_sim), "synth": _cmd_synth, "ir": _cmd_ir,
            "report": _cmd_report, "dse": _cmd_dse, "partition": _cmd_partition}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from . import proc
    try:
        # children end with the command: an interrupt ends them all, then the staged output
        # is removed on the way out
        with proc.guard():
            if getattr(args, "seed", 0) < 0:
                raise UserError(f"--seed must be >= 0, got {args.seed}")
            from .frontend.loader import callable_spec
            # a callable MODEL carries its input shape in its spec (what design.json records)
            args.model = callable_spec(args.model, args.input_shape, args.input_dtype)
            return COMMANDS[args.command](args)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # an internal error: one line unless --debug
        if getattr(args, "debug", False):
            traceback.print_exc()
        else:
            print(f"internal error: {type(e).__name__}: {e} (rerun with --debug for the traceback)",
                  file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
