"""``python -m pycde_accel ir``: list the lowering stages, or print one stage's IR, built on demand.

The IR comes from one of two sources:

* a model (``MODEL``, default the built-in default): the frontend writes ``ir/00_linalg.mlir``
  (the quantized model, ``@forward``) and the chosen route continues from it. The whole model
  goes through the torch-mlir stages; its matmuls belong to the systolic core, and this CIRCT
  does not take a whole model through handshake (it reports the stage and pass that stop it).
* a post-op kernel (``--kernel NAME``, see ``kernels.KERNELS``): the kernel's linalg, through
  every stage down to SV.

Stages are named ``NN_<name>`` (``06_hw``) or just ``<name>`` (``hw``). Results go to
``OUT/ir`` (and ``OUT/sv``); a stage already on disk and newer than its input is not rebuilt.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from . import kernels
from .pipeline import ROUTES, SCHEDULES, lower, stage_files

STAGE0 = "00_linalg"


def route_for(schedule: str) -> str:
    if schedule not in SCHEDULES:
        raise UserError(f"--schedule: expected one of {', '.join(SCHEDULES)}, got {schedule!r}")
    return SCHEDULES[schedule]


def list_stages(schedule: str = "dynamic") -> str:
    route = route_for(schedule)
    lines = [f"{STAGE0:22s} torch  linalg on tensors (frontend: the quantized model; or a kernel)"]
    for tag, st in zip(stage_files(route), ROUTES[route]):
        lines.append(f"{tag:22s} {st.mlir:6s} {st.doc}")
    return "\n".join(lines)


def resolve(stage: str, schedule: str) -> str:
    tags = [STAGE0] + stage_files(route_for(schedule))
    for t in tags:
        if stage in (t, t.split("_", 1)[1]):
            return t
    raise UserError(f"--stage {stage}: no such stage in the {schedule} route; "
                    f"one of {', '.join(tags)}")


def stage_text(out: Path, stage: str, *, model: str | None = None, kernel: str | None = None,
               schedule: str = "dynamic", seed: int = 0, n: int = 64) -> str:
    """Build ``OUT/ir`` up to ``stage`` (as far as needed) and return that stage's text."""
    tag = resolve(stage, schedule)
    route = route_for(schedule)
    ir_dir = Path(out) / "ir"
    ir_dir.mkdir(parents=True, exist_ok=True)
    src = ir_dir / f"{STAGE0}.mlir"
    if kernel is not None:
        if kernel not in kernels.KERNELS:
            raise UserError(f"--kernel {kernel}: unknown; one of {', '.join(kernels.KERNELS)}")
        k = kernels.KERNELS[kernel](n)
        text, name = k.linalg(), k.name
        if not src.exists() or src.read_text() != text:
            src.write_text(text)
    else:
        name = "forward"
        if not src.exists() or "func.func @forward" not in src.read_text():
            from .. import frontend
            frontend.write(frontend.run(model, seed=seed), Path(out))
    want = ir_dir / f"{tag}.mlir"
    if tag != STAGE0 and not (want.exists() and want.stat().st_mtime >= src.stat().st_mtime):
        lower(src, ir_dir, route=route, name=name, sv_dir=Path(out) / "sv",
              until=tag.split("_", 1)[1])
    return want.read_text()
