"""Run one stage's pass pipeline in its own process: ``python -m pycde_accel.lowering.worker``.

A C++ abort inside a pass takes down only this process. The parent (:mod:`.pipeline`) reads
the markers this worker prints on stderr to name the pass that failed:

    @@pass <pass>        before each top-level pass
    @@error <message>    a pass (or the parse) failed with a diagnostic; exit status 3

Usage (this is also the reproduction command saved next to a failed stage):

    python -m pycde_accel.lowering.worker --mlir circt --pipeline 'P1,P2' IN.mlir OUT.mlir
        [--generic-out OUT.generic.mlir] [--sv OUT.sv]

The pipeline is a comma-separated list of top-level passes, as in ``builtin.module(...)``.
Names in :data:`pycde_accel.lowering.passes.REGISTRY` are the project's own passes (Python);
``export-verilog`` writes SystemVerilog to ``--sv``; all others go to MLIR's PassManager.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def split_pipeline(pipeline: str) -> list[str]:
    """Split at top-level commas (not inside ``{}`` or ``()``)."""
    out, depth, cur = [], 0, []
    for ch in pipeline:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return [p for p in out if p]


def _marker(kind: str, text: str) -> None:
    text = " ".join(str(text).split())
    sys.stderr.write(f"@@{kind} {text}\n")
    sys.stderr.flush()


def run(mlir: str, pipeline: str, src: Path, dst: Path, generic_out: Path | None,
        sv: Path | None) -> int:
    from . import bridge
    from .passes import REGISTRY

    ir, pm, _ = bridge.bindings(mlir)
    ctx = bridge.context(mlir)
    _marker("pass", "<parse>")
    try:
        module = ir.Module.parse(src.read_text(), ctx)
    except Exception as e:  # noqa: BLE001
        _marker("error", e)
        return 3
    for p in split_pipeline(pipeline):
        _marker("pass", p)
        try:
            if p == "export-verilog":
                import pycde.circt as circt
                if sv is None:
                    raise ValueError("export-verilog needs --sv")
                with open(sv, "w") as f:
                    circt.export_verilog(module, f)
            elif p.split("{")[0] in REGISTRY:
                REGISTRY[p.split("{")[0]].run(module, p)
                module.operation.verify()
            else:
                pm.PassManager.parse(f"builtin.module({p})", ctx).run(module.operation)
        except Exception as e:  # noqa: BLE001
            _marker("error", e)
            return 3
    dst.write_text(str(module))
    if generic_out is not None:
        generic_out.write_text(bridge.generic(module))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pycde_accel.lowering.worker")
    ap.add_argument("--mlir", choices=("torch", "circt"), required=True)
    ap.add_argument("--pipeline", required=True)
    ap.add_argument("--generic-out", type=Path, default=None)
    ap.add_argument("--sv", type=Path, default=None)
    ap.add_argument("input", type=Path)
    ap.add_argument("output", type=Path)
    a = ap.parse_args(argv)
    return run(a.mlir, a.pipeline, a.input, a.output, a.generic_out, a.sv)


if __name__ == "__main__":
    raise SystemExit(main())
