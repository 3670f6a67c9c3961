"""The compiler driver: model spec + config -> output folder (DESIGN.md "Output directory").

Each step is a function of the previous step's result; ``gen`` strings them together and writes
everything through :func:`pycde_accel.outdir.staged_output`, so a failure leaves no output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from .config import AccelConfig
from .outdir import staged_output

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def gen(model: str | None, out: Path, config: AccelConfig, *, seed: int = 0,
        progress: Progress = _quiet) -> Path:
    """Generate the accelerator for ``model`` into ``out``; return ``out``."""
    from . import frontend

    config.validate()
    with staged_output(out) as stage:
        progress(f"frontend: export, quantize and check {model or 'the default model'}")
        fe = frontend.run(model, seed=seed)
        front = frontend.write(fe, stage)
        from .backend import compile_program
        progress(f"back end: tiling the layers onto the {config.array} array, DRAM image")
        compiled = compile_program(fe, config)
        (stage / "dram.bin").write_bytes(compiled.image)
        from .rtl_lib import emit
        from .rtl_lib.axil_csr import default_csr_map
        progress(f"emitting the accelerator ({config.array} array, post-op kernels through CIRCT)")
        emitted = emit.emit_accelerator(config, stage / "sv", kernel_dir=stage / "ir" / "kernels")
        csr = default_csr_map(config.axi_addr_width, config.axil_data_width)
        design = {"config": config.to_dict(), "top": emitted.top, **front,
                  "csr_map": csr.to_dict(), "program": compiled.to_json()}
        (stage / "design.json").write_text(json.dumps(design, indent=2, sort_keys=True) + "\n")
    return out


def summary(out: Path) -> str:
    """A few lines that say what ``gen`` wrote into ``out``: model, accuracy, program, SV."""
    design = json.loads((out / "design.json").read_text())
    lines = [f"wrote {out}/"]
    model = design.get("model", {})
    acc = design.get("accuracy", {})
    if model:
        lines.append(f"  model     {model.get('name', model.get('spec', '?'))}: "
                     f"int8 vs float top-1 agreement {acc.get('top1_agreement', float('nan')):.3f}, "
                     f"max abs error {acc.get('max_abs_error', float('nan')):.4g}")
    totals = design.get("program", {}).get("totals", {})
    if totals:
        lines.append("  program   " + ", ".join(f"{k} {v}" for k, v in sorted(totals.items())
                                               if isinstance(v, (int, float))))
    sv = sorted((out / "sv").glob("*.sv"))
    lines.append(f"  sv/       {len(sv)} files, top {design.get('top', '?')} "
                 f"({design['config']['rows']}x{design['config']['cols']} array), filelist.f")
    lines.append("  also      design.json, " + ", ".join(
        p.name for p in sorted(out.iterdir()) if p.name not in ("design.json", "sv")))
    return "\n".join(lines)
