"""Yosys synthesis for the open-flow devices: a generated script, run, and its cell statistics.

Contract: ``run_yosys(files, top, device, work)`` reads every file (names relative to ``work``)
with ``read_verilog -sv`` in the given order, runs the device's ``synth_*`` command for ``top``
and writes ``work/synth.ys`` (the script, rerunnable by hand), ``work/yosys.log`` (the complete
log; ``yosys.stdout.log`` has what the process printed, which YoWASP cuts after ABC),
``work/netlist.json`` (for nextpnr) and ``work/stat.json`` (``stat -json``). It returns the
:class:`YosysStats` parsed from ``stat.json``. ``classify`` maps cell types to resource classes
(LUT, FF, DSP, BRAM, carry ...) per family.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pycde_accel.errors import UserError

from .devices import Device
from .tools import run_tool

NETLIST = "netlist.json"
STAT = "stat.json"
SCRIPT = "synth.ys"
LOG = "yosys.log"                 # written by Yosys itself: complete
STDOUT_LOG = "yosys.stdout.log"   # what the process printed: stops after the first ABC run

#: family -> resource class -> cell types (a trailing ``*`` matches a prefix).
CELL_CLASSES: dict[str, dict[str, tuple[str, ...]]] = {
    "ecp5": {
        "lut": ("LUT4",),
        "ff": ("TRELLIS_FF",),
        "dsp": ("MULT18X18D",),
        "bram": ("DP16KD", "PDPW16KD"),
        "carry": ("CCU2C",),
        "lutram": ("TRELLIS_DPR16X4",),
    },
    "ice40": {
        "lut": ("SB_LUT4",),
        "ff": ("SB_DFF*",),
        "dsp": ("SB_MAC16",),
        "bram": ("SB_RAM40_4K*",),
        "carry": ("SB_CARRY",),
        "spram": ("SB_SPRAM256KA",),
    },
}


@dataclass(frozen=True)
class YosysStats:
    cells: dict[str, int]   # cell type -> count, whole flattened design
    port_bits: int          # bits on the top module's ports


#: Every memory is marked ``no_rw_check`` before synthesis: a read of a word in the cycle it
#: is written is don't-care (``rtl_lib.common.dual_port_mem``'s contract; the engines never
#: do it). Without it Yosys emulates read-first behaviour around each block RAM (an address
#: compare, a copy of the write data and a mux after the RAM's 5.6 ns clock-to-out), which
#: put a LUT level on every block-RAM read path of the accelerator.
MEMORY_ATTRS = "setattr -set no_rw_check 1 m:*"


def script(files: list[str], top: str, device: Device) -> str:
    """The Yosys script: one ``read_verilog -sv`` per file, :data:`MEMORY_ATTRS`, synthesis,
    JSON netlist and stat."""
    cmds = [f"read_verilog -sv {f}" for f in files]
    cmds.append(MEMORY_ATTRS)
    cmds.append(f"{device.yosys_synth} -top {top} -json {NETLIST}")
    cmds.append(f"tee -q -o {STAT} stat -json")
    return "\n".join(cmds) + "\n"


#: log-line markers of the long Yosys steps -> progress messages
PHASES = {
    "Executing SYNTH_": "elaborating and optimizing",
    "Executing ABC9 pass": "mapping logic to LUTs (abc9)",
}


def run_yosys(files: list[str], top: str, device: Device, work: Path,
              progress: Callable[[str], None] | None = None) -> YosysStats:
    for f in files:
        if any(c.isspace() for c in f) or f.startswith("-"):
            raise UserError(f"yosys: cannot pass the file name {f!r} (spaces or leading '-')")
    (work / SCRIPT).write_text(script(files, top, device))
    run_tool("yosys", ["-l", LOG, SCRIPT], work, STDOUT_LOG, PHASES, progress, tool_log=LOG)
    return parse_stat(work / STAT)


def parse_stat(path: Path) -> YosysStats:
    """Parse Yosys ``stat -json`` output: the ``design`` totals (or the only module's)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"yosys: no readable statistics in {path.name} ({e})") from e
    block = data.get("design")
    if block is None:
        modules = list(data.get("modules", {}).values())
        if len(modules) != 1:
            raise UserError(f"yosys: {path.name} has no design totals")
        block = modules[0]
    # ``$scopeinfo`` cells only record the flattened hierarchy; they are no hardware.
    cells = {str(k): int(v) for k, v in block.get("num_cells_by_type", {}).items()
             if not str(k).startswith("$scopeinfo")}
    return YosysStats(cells=dict(sorted(cells.items())), port_bits=int(block.get("num_port_bits", 0)))


def _matches(cell: str, pattern: str) -> bool:
    return cell.startswith(pattern[:-1]) if pattern.endswith("*") else cell == pattern


def classify(cells: dict[str, int], family: str) -> dict[str, int]:
    """Sum cell counts into resource classes (every class of the family, 0 when absent)."""
    classes = CELL_CLASSES[family]
    out = {}
    for cls, patterns in classes.items():
        out[cls] = sum(n for cell, n in cells.items() if any(_matches(cell, p) for p in patterns))
    return out
