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
    return cfg.validate()


def _cmd_gen(args: argparse.Namespace) -> int:
    from . import flow
    out = flow.gen(args.model, Path(args.out), config_from_args(args), seed=args.seed,
                   progress=_progress)
    print(flow.summary(out))
    return 0


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


COMMANDS = {"gen": _cmd_gen, "synth": _cmd_synth, "ir": _cmd_ir}


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
