"""cocotb testbench for the AXI4 DMA (``rtl_lib.axi_dma``, top ``axi_dma_*``) against AxiRam.

The spec (JSON, path in ``TB_DMA_SPEC``) holds ``data_width``, ``max_burst``,
``max_outstanding`` and a list of runs. A run: ``{"name", "seed", "reads": [cmd...],
"writes": [cmd...], "ram_stall": p, "out_p": p, "in_p": p, "cmd_p": p}`` where a command is
``{"addr", "beats", "rows", "stride"}``. Reads and writes of one run go on at the same time
(the spec keeps their regions apart). ``ram_stall`` is the probability that each of AxiRam's
five channels pauses in a cycle; ``out_p``/``in_p``/``cmd_p`` the probability that the read
data sink is ready / the write data source is valid / a command is offered.

Checked for every run: read data equals the memory rows in order with ``out_last`` and
``out_row_last`` on the right beats; after the writes, the whole memory equals the model
(nothing written outside the rows); one ``done`` per command; every AR/AW burst is INCR,
full-width, at most ``max_burst`` beats, inside one 4 KiB page, and the bursts of a command
cover its rows exactly, in order; in-flight bursts never exceed ``max_outstanding``; the byte
counters moved by exactly the bytes transferred. A :class:`~pycde_accel.sim.watchdog.Watchdog` on every stream and AXI channel ends
a deadlocked run with the channel's name. Results (JSON, ``TB_DMA_OUT``) per run: beats,
cycles from the first command taken to the last read beat, ``beats_per_cycle`` of the reads
from the first read beat to the last, burst counts.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiBus, AxiRam

from pycde_accel.sim import tb
from pycde_accel.sim.stream import RandomGate, StreamDriver, StreamSink
from pycde_accel.sim.watchdog import Watchdog

PERIOD_NS = 10
MEM_SIZE = 1 << 20


def _pause(seed: int, p_stall: float):
    rng = random.Random(seed)
    while True:
        yield rng.random() < p_stall


def _u(h) -> int:
    return int(h.value)


class BusMonitor:
    """Watches the AXI port every cycle: bursts, outstanding counts, done pulses."""

    def __init__(self, dut, nb: int, max_burst: int, max_outstanding: int):
        self.dut, self.nb = dut, nb
        self.max_burst, self.max_out = max_burst, max_outstanding
        self.ar, self.aw = [], []
        self.rd_done = self.wr_done = 0
        self.rd_inflight = self.wr_inflight = 0
        self.max_rd_inflight = self.max_wr_inflight = 0
        self.errors: list[str] = []
        cocotb.start_soon(self._watch())

    def _check_burst(self, kind, addr, ln, size, burst):
        beats = ln + 1
        if size != (self.nb - 1).bit_length():
            self.errors.append(f"{kind} size {size}")
        if burst != 1:
            self.errors.append(f"{kind} burst type {burst}")
        if beats > self.max_burst:
            self.errors.append(f"{kind} {beats} beats > max_burst {self.max_burst}")
        if (addr & 0xFFF) + beats * self.nb > 0x1000:
            self.errors.append(f"{kind} at {addr:#x} x{beats} crosses 4 KiB")
        if addr % self.nb:
            self.errors.append(f"{kind} at {addr:#x} unaligned")

    async def _watch(self):
        d = self.dut
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            if _u(d.rst):
                continue
            if _u(d.m_axi_arvalid) and _u(d.m_axi_arready):
                a = (_u(d.m_axi_araddr), _u(d.m_axi_arlen))
                self._check_burst("AR", *a, _u(d.m_axi_arsize), _u(d.m_axi_arburst))
                self.ar.append(a)
                self.rd_inflight += 1
            if _u(d.m_axi_rvalid) and _u(d.m_axi_rready) and _u(d.m_axi_rlast):
                self.rd_inflight -= 1
            if _u(d.m_axi_awvalid) and _u(d.m_axi_awready):
                a = (_u(d.m_axi_awaddr), _u(d.m_axi_awlen))
                self._check_burst("AW", *a, _u(d.m_axi_awsize), _u(d.m_axi_awburst))
                self.aw.append(a)
                self.wr_inflight += 1
            if _u(d.m_axi_bvalid) and _u(d.m_axi_bready):
                self.wr_inflight -= 1
            self.max_rd_inflight = max(self.max_rd_inflight, self.rd_inflight)
            self.max_wr_inflight = max(self.max_wr_inflight, self.wr_inflight)
            if self.rd_inflight > self.max_out or self.wr_inflight > self.max_out:
                self.errors.append(f"in flight {self.rd_inflight}/{self.wr_inflight} "
                                   f"> {self.max_out}")
            self.rd_done += _u(d.rd_done)
            self.wr_done += _u(d.wr_done)


def _expected_bursts(cmds, nb, max_burst):
    """Concatenated (addr, beats) of every row of every command, as beats in order."""
    out = []
    for c in cmds:
        for r in range(c["rows"]):
            a = c["addr"] + r * c["stride"]
            out.extend(a + i * nb for i in range(c["beats"]))
    return out


def _burst_beats(bursts, nb):
    out = []
    for addr, ln in bursts:
        out.extend(addr + i * nb for i in range(ln + 1))
    return out


@cocotb.test()
async def dma_runs(dut):
    spec = json.loads(Path(os.environ["TB_DMA_SPEC"]).read_text())
    dw = spec["data_width"]
    nb = dw // 8
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=MEM_SIZE)
    await tb.start(dut, idle=("rd_cmd_valid", "wr_cmd_valid", "wr_in_valid", "rd_out_ready"))
    mon = BusMonitor(dut, nb, spec["max_burst"], spec["max_outstanding"])
    # a deadlock ends the test with the name of the stream that stopped, instead of hanging
    streams = {n: (getattr(dut, f"{n}_valid"), getattr(dut, f"{n}_ready"))
               for n in ("rd_cmd", "wr_cmd", "rd_out", "wr_in")}
    streams.update({f"m_axi_{c}": (getattr(dut, f"m_axi_{c}valid"), getattr(dut, f"m_axi_{c}ready"))
                    for c in ("ar", "r", "aw", "w", "b")})
    dog = Watchdog(dut.clk, streams, stall_cycles=5000, idle_cycles=5000, name="dma watchdog")
    dog.start()
    rng0 = random.Random(12345)
    image = bytearray(rng0.randbytes(MEM_SIZE))
    ram.write(0, bytes(image))
    results = []
    for run in spec["runs"]:
        seed = run.get("seed", 0)
        rng = random.Random(seed)
        stall = run.get("ram_stall", 0.0)
        chans = [ram.read_if.ar_channel, ram.read_if.r_channel, ram.write_if.aw_channel,
                 ram.write_if.w_channel, ram.write_if.b_channel]
        for i, ch in enumerate(chans):
            if stall > 0:
                ch.set_pause_generator(_pause(seed * 7 + i, stall))
            else:
                # (cocotbext-axi 0.1.28 kills the generator but keeps its last value: a channel
                # that was paused in that cycle would stay paused for the whole run)
                ch.clear_pause_generator()
                ch.pause = False
        reads, writes = run.get("reads", []), run.get("writes", [])
        n_ar, n_aw = len(mon.ar), len(mon.aw)
        done0 = (mon.rd_done, mon.wr_done)
        rd_bytes0, wr_bytes0 = _u(dut.rd_bytes_read), _u(dut.wr_bytes_written)

        # expected read data: rows of the image before this run's writes (regions are apart)
        want_rd = []
        for c in reads:
            for r in range(c["rows"]):
                for i in range(c["beats"]):
                    a = c["addr"] + r * c["stride"] + i * nb
                    want_rd.append({"data": int.from_bytes(image[a:a + nb], "little"),
                                    "last": int(r == c["rows"] - 1 and i == c["beats"] - 1),
                                    "row_last": int(i == c["beats"] - 1)})
        wr_beats = []
        for c in writes:
            for r in range(c["rows"]):
                for i in range(c["beats"]):
                    a = c["addr"] + r * c["stride"] + i * nb
                    word = rng.getrandbits(dw)
                    image[a:a + nb] = word.to_bytes(nb, "little")
                    wr_beats.append({"data": word})

        def cmd_beats(cmds):
            return [{"addr": c["addr"], "beats": c["beats"], "rows": c["rows"],
                     "stride": c["stride"]} for c in cmds]

        fields = lambda pre: {k: getattr(dut, f"{pre}_cmd_{k}")
                              for k in ("addr", "beats", "rows", "stride")}
        cmd_p = run.get("cmd_p", 1.0)
        rd_cmd = StreamDriver(dut.clk, fields("rd"), dut.rd_cmd_valid, dut.rd_cmd_ready,
                              PERIOD_NS, RandomGate(cmd_p, seed + 1))
        wr_cmd = StreamDriver(dut.clk, fields("wr"), dut.wr_cmd_valid, dut.wr_cmd_ready,
                              PERIOD_NS, RandomGate(cmd_p, seed + 2))
        wr_in = StreamDriver(dut.clk, {"data": dut.wr_in_data}, dut.wr_in_valid,
                             dut.wr_in_ready, PERIOD_NS, RandomGate(run.get("in_p", 1.0), seed + 3))
        rd_out = StreamSink(dut.clk, {"data": dut.rd_out_data, "last": dut.rd_out_last,
                                      "row_last": dut.rd_out_row_last},
                            dut.rd_out_valid, dut.rd_out_ready, PERIOD_NS,
                            RandomGate(run.get("out_p", 1.0), seed + 4))
        tasks = [cocotb.start_soon(rd_cmd.send(cmd_beats(reads))),
                 cocotb.start_soon(wr_cmd.send(cmd_beats(writes))),
                 cocotb.start_soon(wr_in.send(wr_beats))]
        got = await rd_out.receive(len(want_rd))
        for t in tasks:
            await t
        for _ in range(100000):
            if mon.wr_done - done0[1] >= len(writes):
                break
            await RisingEdge(dut.clk)
        for _ in range(5):
            await RisingEdge(dut.clk)
        await ReadOnly()
        name = run["name"]
        assert not mon.errors, f"{name}: {mon.errors[:5]}"
        for i, (g, w) in enumerate(zip(got, want_rd)):
            assert g.fields == w, f"{name}: read beat {i}: got {g.fields} want {w}"
        assert mon.rd_done - done0[0] == len(reads), f"{name}: read done pulses"
        assert mon.wr_done - done0[1] == len(writes), f"{name}: write done pulses"
        assert _burst_beats(mon.ar[n_ar:], nb) == _expected_bursts(reads, nb, 0), \
            f"{name}: read bursts do not cover the rows"
        assert _burst_beats(mon.aw[n_aw:], nb) == _expected_bursts(writes, nb, 0), \
            f"{name}: write bursts do not cover the rows"
        mem = ram.read(0, MEM_SIZE)
        if mem != bytes(image):
            bad = next(i for i in range(MEM_SIZE) if mem[i] != image[i])
            raise AssertionError(f"{name}: memory differs first at {bad:#x}")
        n_rd, n_wr = len(want_rd), len(wr_beats)
        assert (_u(dut.rd_bytes_read) - rd_bytes0) % (1 << 32) == n_rd * nb, f"{name}: rd bytes"
        assert (_u(dut.wr_bytes_written) - wr_bytes0) % (1 << 32) == n_wr * nb, f"{name}: wr bytes"
        assert _u(dut.rd_err) == 0 and _u(dut.wr_err) == 0
        assert _u(dut.rd_busy) == 0 and _u(dut.wr_busy) == 0, f"{name}: still busy"
        res = {"name": name, "read_beats": n_rd, "write_beats": n_wr,
               "ar_bursts": len(mon.ar) - n_ar, "aw_bursts": len(mon.aw) - n_aw,
               "max_rd_inflight": mon.max_rd_inflight}
        if got:
            first_cmd = rd_cmd.sent[0].edge
            span = got[-1].edge - got[0].edge + 1
            res.update({"read_cycles_from_cmd": got[-1].edge - first_cmd + 1,
                        "read_span_cycles": span, "beats_per_cycle": n_rd / span})
        if wr_in.sent:
            wspan = wr_in.sent[-1].edge - wr_in.sent[0].edge + 1
            res.update({"write_span_cycles": wspan, "write_beats_per_cycle": n_wr / wspan})
        results.append(res)
        await RisingEdge(dut.clk)
    dog.stop()
    Path(os.environ["TB_DMA_OUT"]).write_text(json.dumps(results, indent=1))
