"""Command line: ``python -m pycde_accel {gen,sim,synth,ir,report} [MODEL] [--out DIR] ...``.

MODEL is ``path/to/file.py[:function]`` (the function, default ``build``, returns
``(torch.nn.Module, tuple_of_example_tensors)``) or a built-in name; no MODEL means the built-in
default. Errors the user can fix are one line on stderr and a non-zero exit; ``--debug`` shows
the traceback of anything else.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from .config import AccelConfig, parse_array
from .errors import UserError

EPILOG = """examples:
  python -m pycde_accel gen                      # default model, SV into build/
  python -m pycde_accel gen mlp --array 8x8 --out out/mlp
  python -m pycde_accel gen my_model.py:build --out out/mine
"""


SIM_EPILOG = """Runs every layer of the model on the whole accelerator in Verilator (cocotb, cocotbext-axi
AXI RAM and AXI-Lite master, the host driver of pycde_accel.host), reads the output back from
the simulated DRAM and compares it with the frontend's integer reference. Exit status 0 only
when it is bit-exact. Prints per layer the cycles, PE utilization and DMA bytes, and the
agreement with float PyTorch. Writes DIR/sim/ (SV, Verilator build, plan, result.json).

examples:
  python -m pycde_accel sim                          # default model, 8x8 array
  python -m pycde_accel sim lenet5 --array 4x8 --out out/lenet
  python -m pycde_accel sim mlp --axi-pause 0.3      # random AXI back-pressure
"""


SYNTH_EPILOG = """Open-flow targets write DIR/synth/report.json and report.md (with the Yosys and nextpnr
logs beside them; nextpnr runs out of context with seed 1, towards the config's clock);
Vivado/Quartus targets write project scripts into DIR/vivado/ or DIR/quartus/.

examples:
  python -m pycde_accel synth --target ecp5-85f --out out/default
  python -m pycde_accel synth --array 2x2 --target ecp5-25f --out out/small
  python -m pycde_accel synth --target xc7a100t     # Vivado Tcl + XDC, no Vivado needed
"""


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", nargs="?", default=None,
                   help="path/to/file.py[:function] or a built-in name (default: the built-in default model)")
    p.add_argument("--out", default="build", help="output folder (default: build/)")
    p.add_argument("--array", default=None, metavar="RxC", help="systolic array rows x cols, e.g. 8x8")
    p.add_argument("--seed", type=int, default=0, help="seed for calibration and test inputs (default 0)")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pycde_accel",
        description="Compile a PyTorch model into an int8 systolic FPGA accelerator (SystemVerilog via CIRCT).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    g = sub.add_parser("gen", help="generate SV, IR and design.json for a model",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_common(g)
    m = sub.add_parser("sim", help="run the model on the accelerator in Verilator; exit 0 only if bit-exact",
                       epilog=SIM_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_common(m)
    m.add_argument("--axi-pause", type=float, default=0.0, metavar="P",
                   help="probability that each AXI channel of the memory pauses in a cycle (default 0)")
    m.add_argument("--waves", action="store_true", help="write a VCD waveform (DIR/sim/run/dump.vcd)")
    s = sub.add_parser("synth", help="generate, then synthesize with Yosys + nextpnr (or write vendor scripts)",
                       epilog=SYNTH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_common(s)
    s.add_argument("--target", default=None, metavar="NAME",
                   help="FPGA target (default: the config's, ecp5-85f); an unknown name lists the known ones")
    i = sub.add_parser("ir", help="list the lowering stages, or print one stage's IR (built on demand)")
    _add_common(i)
    i.add_argument("--list", action="store_true", help="list the stages of the route")
    i.add_argument("--stage", default=None, metavar="NAME", help="print this stage's IR, e.g. 06_hw or hw")
    i.add_argument("--schedule", default="dynamic", choices=("dynamic", "static", "calyx"),
                   help="dynamic (handshake, default), static (pipeline dialect), or calyx "
                        "(the calyx route, which stops inside this CIRCT)")
    i.add_argument("--kernel", default=None, metavar="NAME",
                   help="a post-op kernel (requantize, residual_add, maxpool, clamp ...) instead of the model")
    return parser


def config_from_args(args: argparse.Namespace) -> AccelConfig:
    cfg = AccelConfig()
    if getattr(args, "array", None):
        rows, cols = parse_array(args.array)
        cfg = cfg.replace(rows=rows, cols=cols)
        # A C-tile row must be whole AXI beats: a narrow array gets the widest bus that fits
        # (4 columns -> 32 bit); fewer than 4 columns cannot be served (validate says why).
        while cfg.axi_data_width > 32 and (cols * cfg.data_width) % cfg.axi_data_width:
            cfg = cfg.replace(axi_data_width=cfg.axi_data_width // 2)
    return cfg.validate()


def _cmd_gen(args: argparse.Namespace) -> int:
    from . import flow
    out = flow.gen(args.model, Path(args.out), config_from_args(args), seed=args.seed,
                   progress=_progress)
    print(flow.summary(out))
    return 0


def _cmd_sim(args: argparse.Namespace) -> int:
    from . import frontend
    from .errors import UserError as _UE
    from .simulate import report_lines, simulate
    cfg = config_from_args(args)
    if not 0.0 <= args.axi_pause < 1.0:
        raise _UE(f"--axi-pause must be in [0, 1), got {args.axi_pause}")
    _progress(f"frontend: export and quantize {args.model or 'the default model'}")
    fe = frontend.run(args.model, seed=args.seed, eval_batches=1)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _UE(f"cannot write the output folder {out}: {e.strerror}") from None
    r = simulate(fe, cfg, out / "sim", axi_pause=args.axi_pause, seed=args.seed, waves=args.waves,
                 progress=_progress)
    (out / "sim" / "result.json").write_text(__import__("json").dumps(r.to_dict(), indent=2) + "\n")
    print(f"{r.model} on the {cfg.array} accelerator ({cfg.axi_data_width}-bit AXI), Verilator:")
    for line in report_lines(r):
        print(line)
    return 0 if r.bit_exact else 1


def _cmd_synth(args: argparse.Namespace) -> int:
    from .fpga import get_device, project
    cfg = config_from_args(args)
    if args.target:
        cfg = cfg.replace(target=get_device(args.target).name)
    result = project.synth_model(args.model, Path(args.out), cfg, seed=args.seed, progress=_progress)
    if result.report is not None:
        print(project.summary(result.report))
    for path in result.written:
        print(f"wrote {path}")
    return 0


def _cmd_ir(args: argparse.Namespace) -> int:
    from .lowering import inspect_ir
    if args.list or not args.stage:
        print(inspect_ir.list_stages(args.schedule, kernel=args.kernel is not None))
        return 0
    sys.stdout.write(inspect_ir.stage_text(Path(args.out), args.stage, model=args.model,
                                           kernel=args.kernel, schedule=args.schedule,
                                           seed=args.seed))
    return 0


def _progress(msg: str) -> None:
    """Progress for long steps: on stderr, only when it is a terminal."""
    if sys.stderr.isatty():
        print(f"[pycde-accel] {msg}", file=sys.stderr, flush=True)


COMMANDS = {"gen": _cmd_gen, "sim": _cmd_sim, "synth": _cmd_synth, "ir": _cmd_ir}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
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
