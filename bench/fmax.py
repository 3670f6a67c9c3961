"""Fmax and resources of the 8x8 int8 systolic array (and the whole accelerator) on ECP5-85F.

    python bench/fmax.py [--work DIR] [--seed N]

Synthesizes with Yosys (synth_ecp5) and places with nextpnr-ecp5 out of context, fixed seed,
placing towards the target clock. The accelerator is ``assemble.emit_accelerator`` for the
8x8 config (the whole top: DMA, fetch/dispatch, router, matmul unit, store and vector engines
with their CIRCT-lowered kernels, CSRs). Prints what it measured against the targets (array >=
150 MHz, accelerator >= 100 MHz, exactly 1 DSP per PE), where the array's critical path runs
and whether it stays inside one PE, the accelerator's resources and its critical path (with the
top-level blocks it crosses), and ends with one JSON line:
``array_fmax_mhz``, ``accel_fmax_mhz``, ``dsp_per_pe``, ``array_lut``, ``array_ff``
(null where a design could not be measured, with the reason printed above it).

Takes about 12 minutes on one core (array ~4, accelerator ~8). The work folders (logs, netlists, report.json/md) are kept
under --work (default: a temporary folder, removed at the end).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError
from pycde_accel.fpga import synthesize

TARGET = "ecp5-85f"
ARRAY_MHZ = 150.0
ACCEL_MHZ = 100.0
ROWS = COLS = 8


def log(msg: str) -> None:
    print(msg, flush=True)


def pe_of(cell: str) -> str | None:
    """The PE instance a flattened cell name belongs to (``pe_r1_c2.acc_...`` -> ``pe_r1_c2``)."""
    m = re.match(r"^(.*?\bpe[_\w]*?r\d+_c\d+)[./]", cell)
    return m.group(1) if m else None


def locality(cp) -> str:
    """Whether a critical path stays inside one PE, judged by the cells after its start.

    The start register is left out: after flattening, Yosys names a register after one of the
    nets it drives, so a PE's forwarding register (``a_r`` driving ``a_out``) may carry the
    neighbour's port name (``pe_r3_c6.a_in``) while it sits in ``pe_r3_c5``.
    """
    rest = cp.cells[1:]
    pes = sorted({p for p in (pe_of(c) for c in rest) if p})
    outside = [c for c in rest if not pe_of(c)]
    if len(pes) == 1 and not outside:
        return (f"local to {pes[0]} (from {cp.start_cell} to {cp.end_cell}; the start register's "
                f"name is the net it drives)")
    shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more" if len(outside) > 3 else "")
    return (f"NOT local to one PE: from {cp.start_cell} to {cp.end_cell} through "
            f"{', '.join(pes) or 'no PE'}" + (f"; cells outside the PEs: {shown}" if outside else ""))


def measure_array(work: Path, seed: int) -> dict:
    try:
        from pycde_accel.rtl_lib.emit import emit_core
    except ImportError as e:
        log(f"array: not measured: pycde_accel.rtl_lib.emit.emit_core is not available ({e})")
        return {}
    cfg = AccelConfig(rows=ROWS, cols=COLS)
    log(f"array: emitting the {cfg.array} int{cfg.data_width} systolic core")
    emitted = emit_core(cfg, work / "array_sv")
    rep = synthesize(emitted.files, emitted.top, TARGET, work / "array", seed=seed,
                     freq_mhz=ARRAY_MHZ, progress=lambda m: log(f"array: {m}"))
    pes = ROWS * COLS
    out = {"fmax": rep.fmax_mhz, "dsp_per_pe": rep.dsp / pes, "lut": rep.lut, "ff": rep.ff}
    log(f"array: {emitted.top} on {rep.target}: LUT4 {rep.lut}, FF {rep.ff}, carry {rep.carry} "
        f"(CCU2C), DSP {rep.dsp} MULT18X18D for {pes} PEs, BRAM {rep.bram}")
    cp = rep.critical_path
    if cp is not None:
        log(f"array: critical path {cp.delay_ns:.3f} ns (logic {cp.logic_ns:.3f}, routing "
            f"{cp.routing_ns:.3f}): {locality(cp)}")
        for st in cp.steps:
            log(f"array:   {st.type:<9} {st.delay_ns:6.3f} ns  {st.src} -> {st.dst}"
                + (f"  [net {st.net}]" if st.net else ""))
        dsp_logic = [st for st in cp.steps if st.type == "logic" and "MULT18X18D" in st.src]
        if dsp_logic:
            log(f"array: the path goes through a MULT18X18D combinationally "
                f"({dsp_logic[0].delay_ns:.3f} ns from {dsp_logic[0].src.rsplit('/', 1)[1]} to "
                f"{dsp_logic[0].dst.rsplit('/', 1)[1]}): its input/output registers are not used "
                f"(synth_ecp5 does not pack fabric registers into MULT18X18D)")
    log(f"array: report in {work / 'array' / 'report.md'}")
    return out


def measure_accel(work: Path, seed: int) -> dict:
    from pycde_accel.assemble import KERNEL_ROUTE, emit_accelerator

    log("accelerator: emitting the whole accelerator (post-op kernels lowered by the "
        f"{KERNEL_ROUTE} route)")
    emitted = emit_accelerator(AccelConfig(rows=ROWS, cols=COLS), work / "accel_sv",
                               kernel_dir=work / "accel_kernels")
    rep = synthesize(emitted.files, emitted.top, TARGET, work / "accel", seed=seed,
                     freq_mhz=ACCEL_MHZ, progress=lambda m: log(f"accelerator: {m}"))
    log(f"accelerator: {emitted.top} on {rep.target}: LUT4 {rep.lut}, FF {rep.ff}, carry "
        f"{rep.carry} (CCU2C), DSP {rep.dsp} MULT18X18D, BRAM {rep.bram} DP16KD, "
        f"Fmax {rep.fmax_mhz} MHz")
    cp = rep.critical_path
    if cp is not None:
        blocks = []
        for c in cp.cells:
            b = c.split(".")[0] if "." in c else "(top)"
            if not blocks or blocks[-1] != b:
                blocks.append(b)
        log(f"accelerator: critical path {cp.delay_ns:.3f} ns (logic {cp.logic_ns:.3f}, routing "
            f"{cp.routing_ns:.3f}) from {cp.start_cell} to {cp.end_cell}, through "
            f"{' -> '.join(blocks)}")
        for st in cp.steps:
            if st.delay_ns >= 0.05:
                log(f"accelerator:   {st.type:<9} {st.delay_ns:6.3f} ns  {st.src} -> {st.dst}")
    log(f"accelerator: report in {work / 'accel' / 'report.md'}")
    return {"fmax": rep.fmax_mhz}


def verdict(name: str, value, target: str, ok: bool | None) -> str:
    state = "not measured" if ok is None else ("meets" if ok else "MISSES")
    return f"  {name:<16} {('-' if value is None else value)!s:>10}   target {target:<10} {state}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=None, help="keep the work folders here (default: temporary)")
    ap.add_argument("--seed", type=int, default=1, help="nextpnr seed (default 1)")
    args = ap.parse_args(argv)
    tmp = None
    if args.work:
        work = Path(args.work)
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="pycde_accel_fmax_")
        work = Path(tmp.name)
    try:
        arr = measure_array(work, args.seed)
        acc = measure_accel(work, args.seed)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        if tmp is not None:
            tmp.cleanup()
    fig = {
        "array_fmax_mhz": arr.get("fmax"),
        "accel_fmax_mhz": acc.get("fmax"),
        "dsp_per_pe": arr.get("dsp_per_pe"),
        "array_lut": arr.get("lut"),
        "array_ff": arr.get("ff"),
    }
    log(f"measured on {TARGET}, seed {args.seed}, out of context:")
    a, c, d = fig["array_fmax_mhz"], fig["accel_fmax_mhz"], fig["dsp_per_pe"]
    log(verdict("array Fmax MHz", a, f">= {ARRAY_MHZ:g}", None if a is None else a >= ARRAY_MHZ))
    log(verdict("accel Fmax MHz", c, f">= {ACCEL_MHZ:g}", None if c is None else c >= ACCEL_MHZ))
    log(verdict("DSP per PE", d, "== 1", None if d is None else d == 1))
    print(json.dumps(fig, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
