"""Host runtime: runs a compiled model's layers on the accelerator through its CSRs.

The compiler (:mod:`pycde_accel.backend`) lays weights, parameters, commands and activation
buffers out in one DRAM image and gives each layer's command range. The host:

1. loads the image into the accelerator's memory and writes the input tensor(s) into their
   buffers (``Compiled.pack_input``);
2. per layer: writes ``cmd_base`` and ``cmd_count``, writes ``ctrl.start``, waits for the
   ``irq`` (``events.done``), reads ``status`` and the performance counters, clears the events;
3. reads the output tensor(s) back (``Compiled.unpack_output``).

The transport is an object with three coroutines, so the same driver runs against the Verilator
model under cocotb (``sim/tb_accel.py``: cocotbext-axi ``AxiLiteMaster`` + the ``irq`` pin) or
anything else that can reach the CSRs:

* ``await io.write_csr(offset, value)``
* ``await io.read_csr(offset) -> int``
* ``await io.wait_irq()`` (returns when ``irq`` is high; may raise on a timeout)

Register offsets come from the same :class:`~pycde_accel.rtl_lib.axil_csr.CsrMap` that generated
the RTL (``design.json`` carries it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable

PERF = ("perf_cycles", "perf_core_busy", "perf_stall", "perf_dma_rd_bytes", "perf_dma_wr_bytes",
        "perf_cmds")


class AcceleratorError(RuntimeError):
    """The accelerator reported an error (status.err_code) or a layer did not finish."""


@dataclass
class LayerRun:
    """What one layer's run measured (the CSR performance counters after ``done``)."""

    name: str
    cmd_count: int
    cycles: int
    core_busy: int
    stall: int
    dma_rd_bytes: int
    dma_wr_bytes: int
    cmds: int
    err_code: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


ERR_BITS = {1: "AXI read error response", 2: "AXI write error response",
            4: "systolic core: a_last/b_last mismatch", 16: "unknown command opcode"}


def describe_error(code: int) -> str:
    return ", ".join(msg for bit, msg in ERR_BITS.items() if code & bit) or f"code {code:#x}"


class Driver:
    """The layer-by-layer driver over a CSR transport ``io`` (see the module docstring)."""

    def __init__(self, io, csr_map, *, rows: int | None = None, cols: int | None = None,
                 axi_bytes: int | None = None):
        self.io = io
        self.off = {r.name: r.offset for r in csr_map.regs}
        self.expect = (rows, cols, axi_bytes)

    async def check_hw(self) -> None:
        """Refuse to run a program compiled for another array or bus width (``hw_info``)."""
        info = await self.io.read_csr(self.off["hw_info"])
        got = (info & 0xFF, info >> 8 & 0xFF, info >> 16 & 0xFF)
        for want, have, what in zip(self.expect, got, ("rows", "cols", "AXI bytes")):
            if want is not None and want != have:
                raise AcceleratorError(f"the program was compiled for {what}={want}, the "
                                       f"hardware has {what}={have}")

    async def run_layer(self, name: str, cmd_addr: int, cmd_count: int) -> LayerRun:
        io, off = self.io, self.off
        await io.write_csr(off["cmd_base"], cmd_addr)
        await io.write_csr(off["cmd_count"], cmd_count)
        await io.write_csr(off["ctrl"], 1)
        await io.wait_irq()
        events = await io.read_csr(off["events"])
        status = await io.read_csr(off["status"])
        vals = {n: await io.read_csr(off[n]) for n in PERF}
        await io.write_csr(off["events"], events)
        err = status >> 8 & 0xFF
        run = LayerRun(name, cmd_count, vals["perf_cycles"], vals["perf_core_busy"],
                       vals["perf_stall"], vals["perf_dma_rd_bytes"], vals["perf_dma_wr_bytes"],
                       vals["perf_cmds"], err)
        if err or events & 2:
            raise AcceleratorError(f"layer {name}: the accelerator reported "
                                   f"{describe_error(err)}")
        if run.cmds != cmd_count:
            raise AcceleratorError(f"layer {name}: {run.cmds} of {cmd_count} commands ran")
        return run

    async def run(self, layers: Iterable[dict]) -> list[LayerRun]:
        """Run ``layers`` (dicts with ``name``, ``cmd_addr``, ``cmd_count``) in order."""
        await self.check_hw()
        return [await self.run_layer(l["name"], l["cmd_addr"], l["cmd_count"]) for l in layers]
