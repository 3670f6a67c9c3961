"""``python -m pycde_accel ir``: list the lowering stages, or print one stage's IR, built on demand.

The IR comes from one of two sources:

* a model (``MODEL``, default the built-in default): the frontend writes ``ir/00_linalg.mlir``
  (the whole quantized model, ``@forward``); the model route (``pipeline.MODEL_ROUTES``) then
  extracts the model's post-op kernels into ``01_postops`` (its matmuls belong to the systolic
  core, not to CIRCT) and takes them down to SV (``sv/<model>.sv``), one module per kernel.
* a post-op kernel (``--kernel NAME``, see ``kernels.KERNELS``): the kernel's linalg, through
  every stage of the kernel route down to SV.

Stages are named ``NN_<name>`` (``06_hw``) or just ``<name>`` (``hw``). Results go to
``OUT/ir`` (and ``OUT/sv``); a stage already on disk, newer than its input and built from the
same source (``ir/.source`` names the model and seed, or the kernel) is not rebuilt.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from . import kernels
from .pipeline import MODEL_SCHEDULES, ROUTES, SCHEDULES, lower, stage_files

STAGE0 = "00_linalg"


def route_for(schedule: str, model: bool = False) -> str:
    """The route of ``schedule`` for a model (``model=True``) or a kernel."""
    table = MODEL_SCHEDULES if model else SCHEDULES
    if schedule not in table:
        raise UserError(f"--schedule: expected one of {', '.join(table)}, got {schedule!r}")
    return table[schedule]


def list_stages(schedule: str = "dynamic", *, kernel: bool = False) -> str:
    """The stages of a model's route (default) or of a kernel's (``kernel=True``)."""
    route = route_for(schedule, model=not kernel)
    what = "a post-op kernel" if kernel else "the frontend's whole quantized model"
    lines = [f"{STAGE0:22s} torch  linalg on tensors ({what})"]
    for tag, st in zip(stage_files(route), ROUTES[route]):
        lines.append(f"{tag:22s} {st.mlir:6s} {st.doc}")
    return "\n".join(lines)


def resolve(stage: str, schedule: str, *, kernel: bool = False) -> str:
    tags = [STAGE0] + stage_files(route_for(schedule, model=not kernel))
    for t in tags:
        if stage in (t, t.split("_", 1)[1]):
            return t
    raise UserError(f"--stage {stage}: no such stage in the {schedule} route; "
                    f"one of {', '.join(tags)}")


def stage_text(out: Path, stage: str, *, model: str | None = None, kernel: str | None = None,
               schedule: str = "dynamic", seed: int = 0, n: int = 64) -> str:
    """Build ``OUT/ir`` up to ``stage`` (as far as needed) and return that stage's text."""
    is_kernel = kernel is not None
    tag = resolve(stage, schedule, kernel=is_kernel)
    route = route_for(schedule, model=not is_kernel)
    ir_dir = Path(out) / "ir"
    ir_dir.mkdir(parents=True, exist_ok=True)
    src = ir_dir / f"{STAGE0}.mlir"
    stamp = ir_dir / ".source"
    want = ir_dir / f"{tag}.mlir"
    if is_kernel:
        if kernel not in kernels.KERNELS:
            raise UserError(f"--kernel {kernel}: unknown; one of {', '.join(kernels.KERNELS)}")
        source = f"kernel {kernel} n={n}\n"
    else:
        source = f"model {model or '<default>'} seed={seed}\n"
    fresh = (stamp.exists() and stamp.read_text() == source and src.exists() and want.exists()
             and want.stat().st_mtime >= src.stat().st_mtime)
    if fresh:
        return want.read_text()
    if is_kernel:
        k = kernels.KERNELS[kernel](n)
        src.write_text(k.linalg())
        qm, name = None, k.name
    else:
        from .. import frontend
        result = frontend.run(model, seed=seed)
        frontend.write(result, Path(out))
        qm, name = result.quantized, _sv_name(result.model.name)
    stamp.write_text(source)
    if tag != STAGE0:
        lower(src, ir_dir, route=route, name=name, sv_dir=Path(out) / "sv",
              until=tag.split("_", 1)[1], model=qm)
    return want.read_text()


def _sv_name(name: str) -> str:
    import re
    return re.sub(r"[^A-Za-z0-9_]", "_", name) or "model"
