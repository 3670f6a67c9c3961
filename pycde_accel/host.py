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

Register offsets come from the same :class:`~pycde_accel.contract.CsrMap` that generated the
RTL (``design.json`` carries it); the counters, error bits and field positions are the
contract's (:mod:`pycde_accel.contract`, docs/accelerator-contract.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable

from . import contract
from .contract import describe_error

PERF = contract.PERF_COUNTERS


class AcceleratorError(RuntimeError):
    """The accelerator reported an error (status.err_code) or a layer did not finish."""


@dataclass
class LayerRun:
    """What one layer's run measured (the CSR performance counters after ``done``: one field
    per :data:`~pycde_accel.contract.PERF_COUNTERS` entry, named without ``perf_``)."""

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
        got = contract.decode_hw_info(info)
        for want, have, what in zip(self.expect, got, ("rows", "cols", "AXI bytes")):
            if want is not None and want != have:
                raise AcceleratorError(f"the program was compiled for {what}={want}, the "
                                       f"hardware has {what}={have}")

    async def run_layer(self, name: str, cmd_addr: int, cmd_count: int) -> LayerRun:
        io, off = self.io, self.off
        await io.write_csr(off["cmd_base"], cmd_addr)
        await io.write_csr(off["cmd_count"], cmd_count)
        await io.write_csr(off["ctrl"], contract.CTRL_START)
        await io.wait_irq()
        events = await io.read_csr(off["events"])
        status = await io.read_csr(off["status"])
        vals = {n: await io.read_csr(off[n]) for n in PERF}
        await io.write_csr(off["events"], events)
        err = contract.STATUS_ERR_CODE.get(status)
        run = LayerRun(name, cmd_count, err_code=err,
                       **{n.removeprefix("perf_"): vals[n] for n in PERF})
        if err or events & contract.EVENTS_ERROR:
            raise AcceleratorError(f"layer {name}: the accelerator reported "
                                   f"{describe_error(err)}")
        if run.cmds != cmd_count:
            raise AcceleratorError(f"layer {name}: {run.cmds} of {cmd_count} commands ran")
        return run

    async def run(self, layers: Iterable[dict]) -> list[LayerRun]:
        """Run ``layers`` (dicts with ``name``, ``cmd_addr``, ``cmd_count``) in order."""
        await self.check_hw()
        return [await self.run_layer(l["name"], l["cmd_addr"], l["cmd_count"]) for l in layers]
