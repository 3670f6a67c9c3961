"""Fmax and resources on ECP5-85F: the 8x8 int8 array, the default accelerator, the largest one.

    python bench/fmax.py [--work DIR] [--seeds N] [--seed S] [--jobs J] [--skip-array]
                         [--skip-large]

Synthesizes each design once with Yosys (synth_ecp5) and places it with nextpnr-ecp5 out of
context for ``--seeds`` seeds (default 3: S, S+1, ...; ``--seed`` S defaults to 1), towards the
target clock; a design's Fmax is the **minimum** over its seeds (each seed's figure is printed).
The accelerators are ``assemble.emit_accelerator`` (the whole top: DMA, fetch/dispatch, router,
matmul unit, store and vector engines with their CIRCT-lowered kernels, CSRs): the default
config (8x8, 64-bit AXI) and the largest array that fits the device's multipliers next to the
kernels' own (the default's MULT18X18D count minus its PEs; ``cols`` a multiple of the AXI beat,
as the contract requires; the most PEs, then the squarer shape; A/B scratchpads
``LARGE_SPAD`` deep), checked against the placed DSP count. Prints what it measured against the targets (array >= 150 MHz, default accelerator
>= 150 MHz, large accelerator >= 140 MHz with >= 128 PEs, exactly 1 DSP per PE), where the
array's critical path runs and whether it stays inside one PE, each accelerator's resources and
the critical path of its slowest seed (with the top-level blocks it crosses), each seed's worst
register pairs (its ``paths.txt``: ``fpga.sta`` on nextpnr's routed delays), and ends with
one JSON line: ``array_fmax_mhz``, ``accel_fmax_mhz``, ``large_fmax_mhz``, ``large_array``
("RxC"), ``large_pes``, ``large_dsp``, ``seeds``, ``accel_fmax_by_seed``,
``large_fmax_by_seed``, ``dsp_per_pe``, ``array_lut``, ``array_ff`` (null where a design could
not be measured, with the reason printed above it).

One placement of the default accelerator takes about 20 minutes on an idle core (Yosys about 3
more, once per design), the large one about 1.5 times that, the array about 4: about two
hours for three seeds one at a time (placements already in the synthesis cache are reused).
``--jobs`` J (default: the cores) places up to J seeds of a design at a time, from Yosys's one
netlist; each nextpnr run takes one core and up to 2 GB. A seed whose
nextpnr run stalls is routed again with router2 (``fpga.nextpnr``); one that stalls there too
is printed as not measured (null in ``*_by_seed``) and left out of the minimum. The work
folders (logs, netlists, report.json/md, one per design and seed) are kept under --work
(default: a temporary folder, removed at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError
from pycde_accel.fpga import nextpnr, synthesize
from pycde_accel.fpga.devices import DEVICES
from pycde_accel.fpga.tools import ToolStalled

TARGET = "ecp5-85f"
ARRAY_MHZ = 150.0
ACCEL_MHZ = 150.0
LARGE_MHZ = 140.0
LARGE_PES = 128
#: the large accelerator's A/B scratchpad depth: a larger array streams larger tiles, and
#: block RAM is plentiful (the 16x8 with 2048-deep scratchpads uses 70 of the 85F's 208
#: DP16KD); the config ``bench/vs_cpu.py --array 16x8 --spad 2048`` measures against the CPU
LARGE_SPAD = 2048
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


def place_seeds(files, top, work: Path, seeds: list[int], freq: float, tag: str,
                jobs: int = 1):
    """Yosys once, nextpnr once per seed (the first seed's run in ``work``, the others in
    ``work-seedN`` from the same netlist; with ``jobs`` > 1, up to ``jobs`` seeds at a time,
    the others starting as soon as Yosys's netlist is there): ``(report of the first seed,
    {seed: Fmax}, critical path of the slowest seed)``."""
    device = DEVICES[TARGET]
    rest = seeds[1:]

    def place(sd: int, netlist: Path):
        w = work.parent / f"{work.name}-seed{sd}"
        w.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(netlist, w / nextpnr.NETLIST)
        log(f"{tag}: nextpnr-ecp5: place and route, seed {sd}, towards {freq:g} MHz")
        try:
            return nextpnr.run_nextpnr(device, w, sd, freq,
                                       lambda m: log(f"{tag}: seed {sd}: {m}"))
        except ToolStalled as e:
            log(f"{tag}: seed {sd}: not measured: {e}")
            return None

    workers = min(jobs, len(seeds)) - 1          # the first seed runs in this thread
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        started = {}

        def start(netlist: Path) -> None:
            if workers > 0:
                started.update({sd: pool.submit(place, sd, netlist) for sd in rest})

        rep = synthesize(files, top, TARGET, work, seed=seeds[0], freq_mhz=freq,
                         progress=lambda m: log(f"{tag}: {m}"), on_netlist=start)
        results = {sd: started[sd].result() if sd in started else place(sd, work / nextpnr.NETLIST)
                   for sd in rest}
    by_seed = {seeds[0]: rep.fmax_mhz}
    worst = rep.critical_path
    for sd, pnr in results.items():
        if pnr is None:
            by_seed[sd] = None
            continue
        fmax = min((c["achieved_mhz"] for c in pnr.clocks.values()), default=None)
        log(f"{tag}: seed {sd}: Fmax {fmax} MHz"
            + (f" (nextpnr's {pnr.router})" if pnr.router != nextpnr.ROUTERS[0] else ""))
        by_seed[sd] = fmax
        known = [v for v in by_seed.values() if v is not None]
        if fmax is not None and fmax <= min(known) and pnr.critical_paths:
            worst = pnr.critical_paths[0]
    return rep, by_seed, worst


def min_fmax(by_seed: dict):
    vals = [v for v in by_seed.values() if v is not None]
    return min(vals) if vals else None


def measure_array(work: Path, seeds: list[int], jobs: int = 1) -> dict:
    try:
        from pycde_accel.rtl_lib.emit import emit_core
    except ImportError as e:
        log(f"array: not measured: pycde_accel.rtl_lib.emit.emit_core is not available ({e})")
        return {}
    cfg = AccelConfig(rows=ROWS, cols=COLS)
    log(f"array: emitting the {cfg.array} int{cfg.data_width} systolic core")
    emitted = emit_core(cfg, work / "array_sv")
    rep, by_seed, cp = place_seeds(emitted.files, emitted.top, work / "array", seeds, ARRAY_MHZ,
                                   "array", jobs)
    pes = ROWS * COLS
    out = {"fmax": min_fmax(by_seed), "by_seed": by_seed, "dsp_per_pe": rep.dsp / pes,
           "lut": rep.lut, "ff": rep.ff}
    log(f"array: {emitted.top} on {rep.target}: LUT4 {rep.lut}, FF {rep.ff}, carry {rep.carry} "
        f"(CCU2C), DSP {rep.dsp} MULT18X18D for {pes} PEs, BRAM {rep.bram}, Fmax by seed "
        f"{by_seed}")
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


def measure_accel(cfg: AccelConfig, work: Path, seeds: list[int], freq: float,
                  tag: str, jobs: int = 1) -> dict:
    from pycde_accel.assemble import KERNEL_ROUTE, emit_accelerator

    log(f"{tag}: emitting the whole {cfg.array} accelerator ({cfg.axi_data_width}-bit AXI; "
        f"post-op kernels lowered by the {KERNEL_ROUTE} route)")
    emitted = emit_accelerator(cfg, work / f"{tag}_sv", kernel_dir=work / f"{tag}_kernels")
    rep, by_seed, cp = place_seeds(emitted.files, emitted.top, work / tag, seeds, freq, tag,
                                   jobs)
    log(f"{tag}: {emitted.top} on {rep.target}: LUT4 {rep.lut}, FF {rep.ff}, carry "
        f"{rep.carry} (CCU2C), DSP {rep.dsp} MULT18X18D, BRAM {rep.bram} DP16KD, "
        f"Fmax by seed {by_seed}")
    if cp is not None:
        blocks = []
        for c in cp.cells:
            b = c.split(".")[0] if "." in c else "(top)"
            if not blocks or blocks[-1] != b:
                blocks.append(b)
        log(f"{tag}: critical path of the slowest seed {cp.delay_ns:.3f} ns (logic "
            f"{cp.logic_ns:.3f}, routing {cp.routing_ns:.3f}) from {cp.start_cell} to "
            f"{cp.end_cell}, through {' -> '.join(blocks)}")
        for st in cp.steps:
            if st.delay_ns >= 0.05:
                log(f"{tag}:   {st.type:<9} {st.delay_ns:6.3f} ns  {st.src} -> {st.dst}")
    log_near_critical(tag, work, seeds)
    log(f"{tag}: report in {work / tag / 'report.md'}")
    return {"fmax": min_fmax(by_seed), "by_seed": by_seed, "dsp": rep.dsp}


def log_near_critical(tag: str, work: Path, seeds: list[int], top: int = 8) -> None:
    """Each seed's worst register pairs from its ``paths.txt`` (``fpga.sta``: every path over
    the clock, not only nextpnr's critical one), so one run names what to fix next."""
    from pycde_accel.fpga import nextpnr

    for i, sd in enumerate(seeds):
        w = work / tag if i == 0 else work / f"{tag}-seed{sd}"    # as place_seeds names them
        f = w / nextpnr.PATHS
        if not f.is_file():
            continue
        rows = [ln.strip() for ln in f.read_text().splitlines() if re.match(r"\s*\d+\. ", ln)]
        log(f"{tag}: seed {sd}: the {min(top, len(rows))} worst register pairs ({f}):")
        for ln in rows[:top]:
            log(f"{tag}:   {ln}")


def largest_array(kernel_dsp: int, device_dsp: int, beat: int) -> tuple[int, int] | None:
    """The array shape with the most PEs whose multipliers (one per PE) fit next to the kernels'
    ``kernel_dsp``: cols a multiple of the AXI beat (``beat`` bytes), rows and cols at most
    the contract's limit; among equals the squarer one."""
    from pycde_accel.contract import MAX_ARRAY_DIM

    room = device_dsp - kernel_dsp
    best = None
    for cols in range(beat, MAX_ARRAY_DIM + 1, beat):
        rows = min(room // cols, MAX_ARRAY_DIM)
        if rows < 1:
            continue
        key = (rows * cols, -abs(rows - cols))
        if best is None or key > best[0]:
            best = (key, (rows, cols))
    return best[1] if best else None


def verdict(name: str, value, target: str, ok: bool | None) -> str:
    state = "not measured" if ok is None else ("meets" if ok else "MISSES")
    return f"  {name:<16} {('-' if value is None else value)!s:>10}   target {target:<10} {state}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=None, help="keep the work folders here (default: temporary)")
    ap.add_argument("--seeds", type=int, default=3,
                    help="nextpnr seeds per design; the figure is their minimum (default 3)")
    ap.add_argument("--seed", type=int, default=1, help="the first seed (default 1)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="seeds placed at a time (default: the cores, %(default)s here; each "
                         "nextpnr run takes one core and up to 2 GB)")
    ap.add_argument("--skip-array", action="store_true", help="do not place the array alone")
    ap.add_argument("--skip-large", action="store_true",
                    help="do not place the largest accelerator")
    args = ap.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1:
        print("error: --seeds and --jobs must be at least 1", file=sys.stderr)
        return 2
    seeds = list(range(args.seed, args.seed + args.seeds))
    tmp = None
    if args.work:
        work = Path(args.work)
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="pycde_accel_fmax_")
        work = Path(tmp.name)
    base = AccelConfig(rows=ROWS, cols=COLS)
    large_shape = None
    try:
        arr = {} if args.skip_array else measure_array(work, seeds, args.jobs)
        acc = measure_accel(base, work, seeds, ACCEL_MHZ, "accel", args.jobs)
        lrg = {}
        if not args.skip_large:
            device_dsp = DEVICES[TARGET].dsp
            kernel_dsp = acc["dsp"] - ROWS * COLS
            large_shape = largest_array(kernel_dsp, device_dsp, base.axi_data_width // 8)
            log(f"large: the kernels use {kernel_dsp} MULT18X18D next to the 8x8 array's "
                f"{ROWS * COLS}; {device_dsp} on the device leave room for "
                f"{device_dsp - kernel_dsp} PEs: the largest array is "
                f"{large_shape[0]}x{large_shape[1]}")
            lcfg = AccelConfig(rows=large_shape[0], cols=large_shape[1],
                               spad_a_depth=LARGE_SPAD, spad_b_depth=LARGE_SPAD)
            lrg = measure_accel(lcfg, work, seeds, LARGE_MHZ, "large", args.jobs)
            if lrg.get("dsp") is not None and lrg["dsp"] > device_dsp:
                log(f"large: MISSES the device: {lrg['dsp']} MULT18X18D > {device_dsp}")
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        if tmp is not None:
            tmp.cleanup()
    fig = {
        "array_fmax_mhz": arr.get("fmax"),
        "accel_fmax_mhz": acc.get("fmax"),
        "accel_fmax_by_seed": {str(k): v for k, v in acc.get("by_seed", {}).items()},
        "large_fmax_mhz": lrg.get("fmax"),
        "large_fmax_by_seed": {str(k): v for k, v in lrg.get("by_seed", {}).items()},
        "large_array": f"{large_shape[0]}x{large_shape[1]}" if large_shape else None,
        "large_pes": large_shape[0] * large_shape[1] if large_shape else None,
        "large_dsp": lrg.get("dsp"),
        "seeds": seeds,
        "dsp_per_pe": arr.get("dsp_per_pe"),
        "array_lut": arr.get("lut"),
        "array_ff": arr.get("ff"),
    }
    log(f"measured on {TARGET}, seeds {seeds} (the minimum over them), out of context:")
    a, c, d = fig["array_fmax_mhz"], fig["accel_fmax_mhz"], fig["dsp_per_pe"]
    lg, lp = fig["large_fmax_mhz"], fig["large_pes"]
    log(verdict("array Fmax MHz", a, f">= {ARRAY_MHZ:g}", None if a is None else a >= ARRAY_MHZ))
    log(verdict("accel Fmax MHz", c, f">= {ACCEL_MHZ:g}", None if c is None else c >= ACCEL_MHZ))
    log(verdict(f"large PEs", lp, f">= {LARGE_PES}", None if lp is None else lp >= LARGE_PES))
    log(verdict(f"large Fmax MHz", lg, f">= {LARGE_MHZ:g}", None if lg is None else lg >= LARGE_MHZ))
    log(verdict("DSP per PE", d, "== 1", None if d is None else d == 1))
    print(json.dumps(fig, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
