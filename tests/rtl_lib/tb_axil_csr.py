"""cocotb testbench for the AXI4-Lite CSR block (``rtl_lib.axil_csr``).

The register map comes as JSON (``CsrMap.to_dict()``, path in ``TB_CSR_MAP``); seeds and pause
probabilities in ``TB_CSR_SPEC`` (JSON). The bench keeps a Python model of every register and
drives cocotbext-axi's ``AxiLiteMaster`` with random pause generators on all five channels;
the fabric side (``ro`` inputs, ``w1c`` set inputs, ``pulse`` outputs) is driven and watched
directly. Tests:

* ``reset_values``: every register reads back its reset value (ro: the driven input).
* ``random_traffic``: random reads/writes (full words and partial byte writes, mapped,
  read-only and unmapped addresses), several in flight at once, with pauses; every response
  code and read value is checked against the model; pulse outputs are counted.
* ``w1c_and_pulse``: set bits from the fabric, clear them by writing 1; pulses last one cycle.
* ``independent_aw_w``: raw pins: W offered many cycles before AW (and the reverse), B held
  off by ``bready`` low; the write happens once, ``bvalid`` stays up until taken.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from pycde_accel.sim import tb

PERIOD_NS = 10
OKAY, SLVERR, DECERR = 0, 2, 3


def _pause(seed: int, p_stall: float):
    rng = random.Random(seed)
    while True:
        yield rng.random() < p_stall


class Model:
    def __init__(self, cmap: dict):
        self.dw = cmap["data_width"]
        self.nb = self.dw // 8
        self.regs = {r["offset"]: r for r in cmap["regs"]}
        self.val = {}
        for r in cmap["regs"]:
            if r["access"] in ("rw", "w1c"):
                self.val[r["name"]] = r["reset"]

    def write(self, addr: int, data: bytes, ro_inputs: dict) -> tuple[int, dict]:
        """Apply a (single-word) write; return (expected resp, pulses {name: value})."""
        word = addr - addr % self.nb
        r = self.regs.get(word)
        if r is None:
            return DECERR, {}
        mask = 0
        val = 0
        for i, b in enumerate(data):
            lane = addr % self.nb + i
            mask |= 0xFF << (8 * lane)
            val |= b << (8 * lane)
        wmask = (1 << r["width"]) - 1
        mask &= wmask
        val &= mask
        name = r["name"]
        if r["access"] == "ro":
            return SLVERR, {}
        if r["access"] == "rw":
            self.val[name] = (self.val[name] & ~mask) | val
        elif r["access"] == "w1c":
            self.val[name] &= ~val
        else:
            return OKAY, {name: val}
        return OKAY, {}

    def read(self, addr: int, ro_inputs: dict) -> tuple[int, int]:
        word = addr - addr % self.nb
        r = self.regs.get(word)
        if r is None:
            return DECERR, 0
        if r["access"] == "ro":
            return OKAY, ro_inputs[r["name"]]
        if r["access"] == "pulse":
            return OKAY, 0
        return OKAY, self.val[r["name"]]


async def setup(dut, spec=None):
    spec = spec or {}
    cmap = json.loads(Path(os.environ["TB_CSR_MAP"]).read_text())
    ro = {}
    rng = random.Random(spec.get("seed", 1))
    for r in cmap["regs"]:
        if r["access"] == "ro":
            ro[r["name"]] = rng.getrandbits(r["width"])
            getattr(dut, r["name"]).value = ro[r["name"]]
        if r["access"] == "w1c":
            getattr(dut, f"{r['name']}_set").value = 0
    await tb.start(dut, idle=[f"s_axil_{s}" for s in (
        "awvalid", "wvalid", "arvalid", "bready", "rready", "awprot", "arprot")])
    return cmap, ro


def make_master(dut, seed: int = 0, p_stall: float = 0.0) -> AxiLiteMaster:
    m = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    if p_stall > 0:
        chans = [m.write_if.aw_channel, m.write_if.w_channel, m.write_if.b_channel,
                 m.read_if.ar_channel, m.read_if.r_channel]
        for i, ch in enumerate(chans):
            ch.set_pause_generator(_pause(seed * 10 + i, p_stall))
    return m


class PulseCounter:
    """Records every (cycle, value) where a pulse output is non-zero."""

    def __init__(self, dut, names):
        self.dut, self.names = dut, names
        self.seen = {n: [] for n in names}
        cocotb.start_soon(self._watch())

    async def _watch(self):
        cycle = 0
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            cycle += 1
            for n in self.names:
                v = int(getattr(self.dut, n).value)
                if v:
                    self.seen[n].append((cycle, v))


@cocotb.test()
async def reset_values(dut):
    cmap, ro = await setup(dut)
    model = Model(cmap)
    m = make_master(dut)
    for r in cmap["regs"]:
        got = await m.read(r["offset"], model.nb)
        want_resp, want = model.read(r["offset"], ro)
        assert int(got.resp) == want_resp, (r["name"], got.resp)
        assert int.from_bytes(got.data, "little") == want, (r["name"], got.data.hex(), want)


@cocotb.test()
async def random_traffic(dut):
    spec = json.loads(os.environ.get("TB_CSR_SPEC", "{}") or "{}")
    seed, p_stall, n_ops = spec.get("seed", 1), spec.get("p_stall", 0.3), spec.get("ops", 300)
    cmap, ro = await setup(dut, spec)
    model = Model(cmap)
    m = make_master(dut, seed, p_stall)
    pulse_names = [r["name"] for r in cmap["regs"] if r["access"] == "pulse"]
    pulses = PulseCounter(dut, pulse_names)
    want_pulses = {n: [] for n in pulse_names}
    rng = random.Random(seed)
    offsets = [r["offset"] for r in cmap["regs"]]
    space = 1 << cmap["addr_width"]
    nb = model.nb
    for batch in range(n_ops // 6):
        # a batch of writes in flight, then a batch of reads in flight: the master keeps
        # the order within each direction, and writes and reads do not overlap in a batch.
        writes = []
        for _ in range(3):
            if rng.random() < 0.8:
                addr = rng.choice(offsets)
            else:
                addr = rng.randrange(0, space // nb) * nb
            lane = rng.randrange(nb) if rng.random() < 0.3 else 0
            length = rng.randint(1, nb - lane) if lane or rng.random() < 0.3 else nb
            data = bytes(rng.getrandbits(8) for _ in range(length))
            writes.append((addr + lane, data, m.init_write(addr + lane, data)))
        for addr, data, ev in writes:
            await ev.wait()
            resp, pulsed = model.write(addr, data, ro)
            assert int(ev.data.resp) == resp, (hex(addr), data.hex(), ev.data.resp, resp)
            for n, v in pulsed.items():
                if v:
                    want_pulses[n].append(v)
        reads = []
        for _ in range(3):
            addr = rng.choice(offsets) if rng.random() < 0.85 else rng.randrange(space // nb) * nb
            reads.append((addr, m.init_read(addr, nb)))
        for addr, ev in reads:
            await ev.wait()
            resp, want = model.read(addr, ro)
            assert int(ev.data.resp) == resp, (hex(addr), ev.data.resp, resp)
            assert int.from_bytes(ev.data.data, "little") == want, (hex(addr), ev.data.data.hex())
    for _ in range(4):
        await RisingEdge(dut.clk)
    for n in pulse_names:
        assert [v for _, v in pulses.seen[n]] == want_pulses[n], (n, pulses.seen[n], want_pulses[n])
        cycles = [c for c, _ in pulses.seen[n]]
        assert all(b - a > 1 for a, b in zip(cycles, cycles[1:])) or len(cycles) < 2


@cocotb.test()
async def w1c_and_pulse(dut):
    cmap, ro = await setup(dut)
    model = Model(cmap)
    m = make_master(dut)
    for r in cmap["regs"]:
        if r["access"] != "w1c":
            continue
        name, off, width = r["name"], r["offset"], r["width"]
        full = (1 << width) - 1
        set_port = getattr(dut, f"{name}_set")
        for bit in range(width):  # one-cycle set of one bit
            set_port.value = 1 << bit
            await RisingEdge(dut.clk)
            set_port.value = 0
            await RisingEdge(dut.clk)
            got = int.from_bytes((await m.read(off, model.nb)).data, "little")
            assert got >> bit & 1, (name, bit, got)
            assert int(getattr(dut, name).value) >> bit & 1
        assert int.from_bytes((await m.read(off, model.nb)).data, "little") == full
        # writing 0 clears nothing; writing 1 to bit 0 clears only bit 0
        await m.write(off, bytes(model.nb))
        assert int.from_bytes((await m.read(off, model.nb)).data, "little") == full
        await m.write(off, (1).to_bytes(model.nb, "little"))
        assert int.from_bytes((await m.read(off, model.nb)).data, "little") == full & ~1
        await m.write(off, full.to_bytes(model.nb, "little"))
        assert int.from_bytes((await m.read(off, model.nb)).data, "little") == 0
        # set held high while the host clears: set wins
        set_port.value = full
        await m.write(off, full.to_bytes(model.nb, "little"))
        set_port.value = 0
        assert int.from_bytes((await m.read(off, model.nb)).data, "little") == full
        await m.write(off, full.to_bytes(model.nb, "little"))
    for r in cmap["regs"]:
        if r["access"] != "pulse":
            continue
        pc = PulseCounter(dut, [r["name"]])
        for v in (1, (1 << r["width"]) - 1):
            await m.write(r["offset"], v.to_bytes(model.nb, "little"))
        await m.write(r["offset"], bytes(model.nb))  # a write of 0 pulses nothing
        for _ in range(3):
            await RisingEdge(dut.clk)
        assert [v for _, v in pc.seen[r["name"]]] == [1, (1 << r["width"]) - 1], pc.seen


async def _raw_write(dut, addr, data, strb, w_first: bool, gap: int, b_hold: int) -> int:
    async def offer(valid, sets, ready):
        for k, v in sets.items():
            getattr(dut, k).value = v
        valid.value = 1
        while True:
            await ReadOnly()
            taken = int(ready.value) == 1
            await RisingEdge(dut.clk)
            if taken:
                break
        valid.value = 0

    aw = lambda: offer(dut.s_axil_awvalid, {"s_axil_awaddr": addr}, dut.s_axil_awready)
    w = lambda: offer(dut.s_axil_wvalid, {"s_axil_wdata": data, "s_axil_wstrb": strb},
                      dut.s_axil_wready)
    first, second = (w, aw) if w_first else (aw, w)
    dut.s_axil_bready.value = 0
    await first()
    for _ in range(gap):  # the first half waits, nothing is written, no B
        await ReadOnly()
        assert int(dut.s_axil_bvalid.value) == 0
        await RisingEdge(dut.clk)
    await second()
    for _ in range(1 + b_hold):  # the write is performed on the edge after both are held
        await RisingEdge(dut.clk)
    await ReadOnly()
    assert int(dut.s_axil_bvalid.value) == 1, "B should be waiting"
    resp = int(dut.s_axil_bresp.value)
    await RisingEdge(dut.clk)
    dut.s_axil_bready.value = 1
    await RisingEdge(dut.clk)
    dut.s_axil_bready.value = 0
    await ReadOnly()
    assert int(dut.s_axil_bvalid.value) == 0, "B must drop after one handshake"
    await RisingEdge(dut.clk)
    return resp


@cocotb.test()
async def independent_aw_w(dut):
    cmap, ro = await setup(dut)
    model = Model(cmap)
    rw = [r for r in cmap["regs"] if r["access"] == "rw"]
    full = (1 << model.nb) - 1
    for i, (w_first, gap, hold) in enumerate([(True, 7, 3), (False, 5, 0), (True, 0, 6),
                                              (False, 0, 1)]):
        r = rw[i % len(rw)]
        val = (0x5A5A5A5A + i * 0x01010101) & ((1 << model.dw) - 1)
        strb = full if i % 2 else 0b0101 & full
        resp = await _raw_write(dut, r["offset"], val, strb, w_first, gap, hold)
        assert resp == OKAY
        mask = sum(0xFF << (8 * j) for j in range(model.nb) if strb >> j & 1)
        mask &= (1 << r["width"]) - 1
        model.val[r["name"]] = (model.val[r["name"]] & ~mask) | (val & mask)
        await ReadOnly()
        assert int(getattr(dut, r["name"]).value) == model.val[r["name"]], r["name"]
        await RisingEdge(dut.clk)
    used = {r["offset"] for r in cmap["regs"]}
    hole = max(a for a in range(0, 1 << cmap["addr_width"], model.nb) if a not in used)
    assert await _raw_write(dut, hole, 1, full, True, 2, 2) == DECERR
    ro = [r for r in cmap["regs"] if r["access"] == "ro"]
    if ro:
        assert await _raw_write(dut, ro[0]["offset"], 1, full, False, 1, 0) == SLVERR
