"""The compiler driver: model spec + config -> output folder (docs/architecture.md, "Conventions").

Each step is a function of the previous step's result; ``gen`` strings them together and writes
everything through :func:`pycde_accel.outdir.staged_output`, so a failure leaves no output
(and only a folder this tool wrote is ever replaced).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from .config import AccelConfig
from .outdir import MARKER, check_out, staged_output

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def frontend_result(model, seed: int = 0, *, eval_batches: int | None = None):
    """``model`` as a frontend result: a spec (``file.py[:function]``, built-in name, None for
    the default), a :class:`~pycde_accel.frontend.loader.LoadedModel` (an in-memory module), or
    an existing :class:`~pycde_accel.frontend.FrontendResult` (returned as is)."""
    from . import frontend
    if isinstance(model, frontend.FrontendResult):
        return model
    kw = {} if eval_batches is None else {"eval_batches": eval_batches}
    return frontend.run(model, seed=seed, **kw)


def model_label(model) -> str:
    from . import frontend
    if isinstance(model, frontend.FrontendResult):
        return model.model.spec
    if isinstance(model, frontend.LoadedModel):
        return model.spec
    return model or "the default model"


def gen(model, out: Path, config: AccelConfig, *, seed: int = 0,
        progress: Progress = _quiet, compiled=None) -> Path:
    """Generate the accelerator for ``model`` (see :func:`frontend_result`) into ``out``;
    return ``out``. Writes design.json, dram.bin, weights.npz, ir/, sv/ and host/
    (:mod:`pycde_accel.hostgen`). The model is loaded and checked before anything is created;
    ``out`` appears whole or not at all (:func:`pycde_accel.outdir.staged_output`).
    ``compiled``: the back end's program for ``model`` and ``config`` when the caller has it
    (the API's :class:`~pycde_accel.api.Design`), so that it is not compiled again."""
    config.validate()
    spec = model if isinstance(model, str) else None
    check_out(out, model=spec)
    progress(f"frontend: export, quantize and check {model_label(model)}")
    fe = frontend_result(model, seed)
    with staged_output(out, model=spec) as stage:
        write_gen(fe, stage, config, progress=progress, compiled=compiled)
    return out


def write_gen(fe, folder: Path, config: AccelConfig, *, progress: Progress = _quiet,
              compiled=None) -> dict:
    """``gen``'s files for frontend result ``fe`` into ``folder`` (a staging folder); return
    design.json's content. ``compiled``: ``backend.compile_program(fe, config)`` if the
    caller has it already."""
    from . import frontend, hostgen
    from .backend import compile_program

    if compiled is None:
        # first: the back end's refusals need only shapes; the torch-mlir import and CIRCT below
        # are the expensive steps
        progress(f"back end: tiling the layers onto the {config.array} array, DRAM image")
        compiled = compile_program(fe, config)
    front = frontend.write(fe, folder)
    (folder / "dram.bin").write_bytes(compiled.image)
    from . import assemble as emit
    from .rtl_lib.axil_csr import default_csr_map
    progress(f"emitting the accelerator ({config.array} array, post-op kernels through CIRCT, "
             f"{config.schedule} schedule)")
    emitted = emit.emit_accelerator(config, folder / "sv", kernel_dir=folder / "ir" / "kernels",
                                    rowred=compiled.uses_rowred)
    csr = default_csr_map(config.axi_addr_width, config.axil_data_width)
    hostgen.write(folder / "host", config, compiled, fe.quantized.scales, csr, fe.model.spec)
    from .perfmodel.demand import summary as memory_summary
    design = {"config": config.to_dict(), "top": emitted.top, **front,
              "csr_map": csr.to_dict(), "program": compiled.to_json(),
              "memory": memory_summary(compiled, config)}
    (folder / "design.json").write_text(json.dumps(design, indent=2, sort_keys=True) + "\n")
    return design


def summary(out: Path) -> str:
    """A few lines that say what ``gen`` wrote into ``out``: model, accuracy, program, SV."""
    design = json.loads((out / "design.json").read_text())
    lines = [f"wrote {out}/"]
    model = design.get("model", {})
    acc = design.get("accuracy", {})
    if model:
        # top-1 only means something for a classifier's (N, classes) output
        outs = design.get("graph", {}).get("outputs", [])
        classifier = bool(outs) and all(len(o.get("shape", ())) == 2 and o["shape"][1] > 1
                                        for o in outs)
        top1 = (f"int8 vs float top-1 agreement {acc.get('top1_agreement', float('nan')):.3f}, "
                if classifier else "int8 vs float ")
        lines.append(f"  model     {model.get('name', model.get('spec', '?'))}: {top1}"
                     f"max abs error {acc.get('max_abs_error', float('nan')):.4g}")
    totals = design.get("program", {}).get("totals", {})
    if totals:
        lines.append("  program   " + ", ".join(f"{k} {v}" for k, v in sorted(totals.items())
                                               if isinstance(v, (int, float))))
    sv = sorted((out / "sv").glob("*.sv"))
    lines.append(f"  sv/       {len(sv)} files, top {design.get('top', '?')} "
                 f"({design['config']['rows']}x{design['config']['cols']} array), filelist.f")
    lines.append("  also      design.json, " + ", ".join(
        p.name for p in sorted(out.iterdir()) if p.name not in ("design.json", "sv", MARKER)))
    return "\n".join(lines)
