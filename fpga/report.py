"""The synthesis report: one dataclass, written as ``report.json`` and ``report.md``.

``report.json`` is deterministic: sorted keys, floats rounded (MHz to 0.01, ns to 0.001), file
names relative to the work folder, no absolute paths, no timestamps, tool versions from package
metadata (no build paths). The same inputs, seed and tool versions give the same bytes.

Resource classes (from Yosys's cell counts after ``synth_*``):
  lut    plain LUT4 cells (``LUT4`` / ``SB_LUT4``); carry-chain cells are counted apart
  ff     flip-flops (``TRELLIS_FF`` / ``SB_DFF*``)
  dsp    hard multipliers (``MULT18X18D`` / ``SB_MAC16``)
  bram   block RAMs (``DP16KD``, ``PDPW16KD`` / ``SB_RAM40_4K*``)
  carry  carry cells (``CCU2C``: 2 bits and 2 LUT4 slots each / ``SB_CARRY``: 1 bit, shares
         its logic cell's LUT)
The nextpnr ``utilization`` (bel type -> used/available, after packing) is kept as is: on ECP5,
``TRELLIS_COMB`` counts LUT4 slots including the ones carry cells occupy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .nextpnr import CriticalPath

REPORT_JSON = "report.json"
REPORT_MD = "report.md"


@dataclass(frozen=True)
class SynthReport:
    target: str
    part: str
    family: str
    top: str
    files: tuple[str, ...]
    seed: int
    freq_mhz: float                          # the constraint nextpnr placed towards
    lut: int
    ff: int
    dsp: int
    bram: int
    carry: int
    cells: dict[str, int]                     # Yosys cell type -> count
    port_bits: int
    available: dict[str, int]                 # the device's lut, ff, dsp, bram (preset)
    placed: bool                              # False: synthesis only (see ``note``)
    clocks: dict[str, dict[str, float]] = field(default_factory=dict)   # clock -> achieved/constraint
    utilization: dict[str, dict[str, int]] = field(default_factory=dict)
    critical_paths: tuple[CriticalPath, ...] = ()
    extra: dict[str, int] = field(default_factory=dict)   # lutram, spram ...
    note: str = ""
    tools: dict[str, str] = field(default_factory=dict)
    config: dict | None = None

    # ---- derived ---------------------------------------------------------------------------
    @property
    def fmax_mhz(self) -> float | None:
        """The lowest achieved Fmax over all clocks (None when not placed or no clock)."""
        vals = [c["achieved_mhz"] for c in self.clocks.values()]
        return min(vals) if vals else None

    @property
    def critical_path(self) -> CriticalPath | None:
        return self.critical_paths[0] if self.critical_paths else None

    # ---- output ----------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "target": self.target, "part": self.part, "family": self.family, "top": self.top,
            "files": list(self.files), "seed": self.seed, "freq_mhz": round(self.freq_mhz, 2),
            "resources": {"lut": self.lut, "ff": self.ff, "dsp": self.dsp, "bram": self.bram,
                          "carry": self.carry, **self.extra},
            "available": dict(sorted(self.available.items())),
            "cells": dict(sorted(self.cells.items())), "port_bits": self.port_bits,
            "placed": self.placed, "note": self.note,
            "fmax_mhz": self.fmax_mhz, "clocks": self.clocks,
            "utilization": self.utilization,
            "critical_paths": [p.to_dict() for p in self.critical_paths],
            "tools": dict(sorted(self.tools.items())), "config": self.config,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_markdown(self) -> str:
        L = [f"# Synthesis report: `{self.top}` on {self.target} ({self.part})", ""]
        L.append(f"Yosys + nextpnr, seed {self.seed}, placed towards {self.freq_mhz:g} MHz"
                 + ("" if self.family != "ecp5" else ", out of context") + ".")
        if self.note:
            L += ["", f"**Note:** {self.note}"]
        L += ["", "## Resources", "", "| resource | used | device has |", "|---|---:|---:|"]
        for name, val in (("LUT4", self.lut), ("FF", self.ff), ("DSP", self.dsp),
                          ("BRAM", self.bram), ("carry cells", self.carry),
                          *((k, v) for k, v in sorted(self.extra.items()))):
            key = {"LUT4": "lut", "FF": "ff", "DSP": "dsp", "BRAM": "bram"}.get(name)
            avail = self.available.get(key) if key else None
            L.append(f"| {name} | {val} | {avail if avail is not None else ''} |")
        if self.utilization:
            L += ["", "After packing (nextpnr): " + ", ".join(
                f"{k} {v['used']}/{v['available']}" for k, v in self.utilization.items())]
        L += ["", "Cells after synthesis: " + ", ".join(f"{k} {v}" for k, v in sorted(self.cells.items()))]
        L += ["", "## Timing", ""]
        if not self.placed:
            L.append("Not placed and routed, so no Fmax.")
        elif not self.clocks:
            L.append("No clock found in the design.")
        else:
            L += ["| clock | Fmax (MHz) | constraint (MHz) |", "|---|---:|---:|"]
            for clk, v in self.clocks.items():
                L.append(f"| `{clk}` | {v['achieved_mhz']:.2f} | {v['constraint_mhz']:.2f} |")
        for p in self.critical_paths:
            L += ["", f"### Critical path {p.src_clock} -> {p.dst_clock}: {p.delay_ns:.3f} ns "
                  f"(logic {p.logic_ns:.3f}, routing {p.routing_ns:.3f})", "",
                  f"From `{p.start_cell}` to `{p.end_cell}`.", "",
                  "| step | from | to | net | ns |", "|---|---|---|---|---:|"]
            for s in p.steps:
                L.append(f"| {s.type} | `{s.src}` | `{s.dst}` | {('`' + s.net + '`') if s.net else ''} "
                         f"| {s.delay_ns:.3f} |")
        L += ["", "## Tools", ""] + [f"- {v}" for _, v in sorted(self.tools.items())]
        return "\n".join(L) + "\n"

    def write(self, folder: Path) -> tuple[Path, Path]:
        """Write ``report.json`` and ``report.md`` into ``folder``; return their paths."""
        j, m = folder / REPORT_JSON, folder / REPORT_MD
        j.write_text(self.to_json())
        m.write_text(self.to_markdown())
        return j, m
