"""Host runtime: runs a compiled model's layers on the accelerator through its CSRs.

The compiler (:mod:`pycde_accel.backend`) lays weights, parameters, commands and activation
buffers out in one DRAM image and gives each layer's command range. The host:

1. loads the image into the accelerator's memory and writes the input tensor(s) into their
   buffers (``Compiled.pack_input``);
2. per run (:meth:`Driver.run_group`; by default one run holds the whole model, the layers'
   command lists back to back with a FENCE between consecutive layers, at most
   ``STAMP_DEPTH + 1`` layers a run): writes ``cmd_base`` and ``cmd_count``, writes
   ``ctrl.start``, waits for the ``irq`` (``events.done``), reads ``status``, the performance
   counters and the FENCEs' stamps (the per-layer figures), clears the events;
   :meth:`Driver.run_layer` runs one layer per start (``--per-layer-starts``);
3. reads the output tensor(s) back (``Compiled.unpack_output``).

The transport is an object with three coroutines, so the same driver runs against the Verilator
model under cocotb (``sim/tb_accel.py``: cocotbext-axi ``AxiLiteMaster`` + the ``irq`` pin) or
anything else that can reach the CSRs:

* ``await io.write_csr(offset, value)``
* ``await io.read_csr(offset) -> int``
* ``await io.wait_irq()`` (returns when ``irq`` is high; may raise on a timeout)
* optionally ``io.now() -> int``: the clock cycle (the driver then records
  :attr:`Driver.host_cycles`, first start to last ``irq``)

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
        self.first_start: int | None = None
        self.last_done: int | None = None

    async def check_hw(self) -> None:
        """Refuse to run a program compiled for another array or bus width (``hw_info``)."""
        info = await self.io.read_csr(self.off["hw_info"])
        got = contract.decode_hw_info(info)
        for want, have, what in zip(self.expect, got, ("rows", "cols", "AXI bytes")):
            if want is not None and want != have:
                raise AcceleratorError(f"the program was compiled for {what}={want}, the "
                                       f"hardware has {what}={have}")

    async def _start(self, cmd_addr: int, cmd_count: int) -> tuple[int, int, dict[str, int]]:
        """One start of ``cmd_count`` commands from ``cmd_addr``: write them and ``ctrl.start``,
        wait for the irq, read ``events``, ``status`` and the counters (the events are left
        set: the caller clears them once it has read what else it needs)."""
        io, off = self.io, self.off
        await io.write_csr(off["cmd_base"], cmd_addr)
        await io.write_csr(off["cmd_count"], cmd_count)
        self._mark_start()
        await io.write_csr(off["ctrl"], contract.CTRL_START)
        await io.wait_irq()
        self._mark_done()
        events = await io.read_csr(off["events"])
        status = await io.read_csr(off["status"])
        return events, status, {n: await io.read_csr(off[n]) for n in PERF}

    async def run_layer(self, name: str, cmd_addr: int, cmd_count: int) -> LayerRun:
        io, off = self.io, self.off
        events, status, vals = await self._start(cmd_addr, cmd_count)
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

    async def run_group(self, cmd_addr: int, cmd_count: int, layers: list[dict]) -> list[LayerRun]:
        """One start for several layers: ``cmd_count`` commands from ``cmd_addr`` hold
        ``layers`` (dicts with ``name`` and ``cmd_count``, their own commands) in order with a
        FENCE between consecutive ones. After ``done`` the host reads the counters, then
        ``stamp_count`` and, for each FENCE, ``stamp_sel = k`` and the ``stamp_*`` registers;
        layer k's figures are the differences between stamps k - 1 and k (the run's start and
        end for the first and the last); its ``cmds`` count the FENCE in front of it. One
        layer: :meth:`run_layer`'s sequence (no stamps read)."""
        if len(layers) == 1:
            l = layers[0]
            return [await self.run_layer(l["name"], cmd_addr, cmd_count)]
        if len(layers) - 1 > contract.STAMP_DEPTH:
            raise AcceleratorError(f"a run of {len(layers)} layers has more FENCEs than the "
                                   f"{contract.STAMP_DEPTH} stamps")
        io, off = self.io, self.off
        names = ", ".join(str(l["name"]) for l in (layers[0], layers[-1]))
        events, status, total = await self._start(cmd_addr, cmd_count)
        n_stamps = await io.read_csr(off["stamp_count"])
        stamps = []
        for k in range(min(n_stamps, contract.STAMP_DEPTH)):
            await io.write_csr(off["stamp_sel"], k)
            stamps.append({n: await io.read_csr(off[s]) for n, s in
                           zip(PERF, contract.STAMP_REGS)})
        await io.write_csr(off["events"], events)
        err = contract.STATUS_ERR_CODE.get(status)
        if err or events & contract.EVENTS_ERROR:
            raise AcceleratorError(f"layers {names}: the accelerator reported "
                                   f"{describe_error(err)}")
        if total[contract.PERF_CMDS] != cmd_count:
            raise AcceleratorError(f"layers {names}: {total[contract.PERF_CMDS]} of {cmd_count} "
                                   f"commands ran")
        if n_stamps != len(layers) - 1:
            raise AcceleratorError(f"layers {names}: {n_stamps} FENCEs stamped, "
                                   f"{len(layers) - 1} expected")
        marks = [{n: 0 for n in PERF}] + stamps + [total]
        runs = []
        for k, l in enumerate(layers):
            vals = {n: marks[k + 1][n] - marks[k][n] for n in PERF}
            want = l["cmd_count"] + (1 if k else 0)
            if vals[contract.PERF_CMDS] != want:
                raise AcceleratorError(f"layer {l['name']}: {vals[contract.PERF_CMDS]} of "
                                       f"{want} commands ran")
            runs.append(LayerRun(l["name"], want, err_code=err,
                                 **{n.removeprefix("perf_"): vals[n] for n in PERF}))
        return runs

    def _mark_start(self) -> None:
        now = getattr(self.io, "now", None)
        if now is not None:
            t = now()
            if self.first_start is None:
                self.first_start = t

    def _mark_done(self) -> None:
        now = getattr(self.io, "now", None)
        if now is not None:
            self.last_done = now()

    @property
    def host_cycles(self) -> int | None:
        """Cycles from the first ``ctrl.start`` write to the last ``irq`` seen (the CSR
        traffic between runs included), when the transport has a clock (``io.now()``)."""
        if self.first_start is None or self.last_done is None:
            return None
        return self.last_done - self.first_start

    async def run(self, layers: Iterable[dict], groups: list[dict] | None = None) -> list[LayerRun]:
        """Run ``layers`` (dicts with ``name``, ``cmd_addr``, ``cmd_count``) in order: one start
        per entry of ``groups`` (``CompiledProgram.run_groups()``: ``cmd_addr``, ``cmd_count``,
        ``layers`` indices), or one start per layer without ``groups``."""
        await self.check_hw()
        layers = list(layers)
        if groups is None:
            return [await self.run_layer(l["name"], l["cmd_addr"], l["cmd_count"])
                    for l in layers]
        out = []
        for g in groups:
            out += await self.run_group(g["cmd_addr"], g["cmd_count"],
                                        [layers[i] for i in g["layers"]])
        return out
