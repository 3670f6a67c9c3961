"""cocotb testbench for the skid buffer (``rtl_lib.skid_buffer``) and for any block with its
ports (``in_data``/``in_valid``/``in_ready``, ``out_data``/``out_valid``/``out_ready``).

Spec (JSON in ``TB_SKID_SPEC``): ``{"width", "beats", "seed", "p_in", "p_out"}``, and
``"depth"`` for a block of another capacity than the skid buffer's ``DEPTH`` (a ``Queue``).

* ``stream``: ``beats`` random words through the block, ``in_valid`` on with probability
  ``p_in`` and ``out_ready`` with ``p_out`` per cycle (seeded). Checks: every word comes out
  once, in order; beat i leaves at least ``LATENCY`` edges after it came in; with
  ``p_in = p_out = 1`` the words go in on consecutive edges and each leaves exactly
  ``LATENCY`` edges after it came in (one beat per cycle, the first on the edge after the first
  one went in).
* ``registered``: every cycle, ``in_valid``/``in_data``/``out_ready`` are driven twice with
  random values (after the edge, then again mid-cycle); ``in_ready``, ``out_valid`` and
  ``out_data`` must not change between the two (they are registers). ``out_ready`` is then
  held low: exactly ``depth`` words are taken and ``in_ready`` stays low; they come out in
  order once ``out_ready`` rises.
"""

from __future__ import annotations

import json
import os
import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from pycde_accel.rtl_lib.skid_buffer import DEPTH, LATENCY
from pycde_accel.sim import tb
from pycde_accel.sim.stream import RandomGate, StreamDriver, StreamSink

IDLE = ["in_valid", "in_data", "out_ready"]


#: a run longer than this fails instead of hanging (a block that loses or never offers a beat
#: leaves the sink waiting): the longest case, 300 beats at p = 0.3, takes about 15 us
WATCHDOG_US = 2000


def _spec():
    return json.loads(os.environ["TB_SKID_SPEC"])


@cocotb.test(timeout_time=WATCHDOG_US, timeout_unit="us")
async def stream(dut):
    spec = _spec()
    await tb.start(dut, idle=IDLE)
    rng = random.Random(spec["seed"])
    words = [rng.getrandbits(spec["width"]) for _ in range(spec["beats"])]
    period = tb.PERIOD_NS
    drv = StreamDriver(dut.clk, {"data": dut.in_data}, dut.in_valid, dut.in_ready, period,
                       RandomGate(spec["p_in"], spec["seed"] + 1))
    sink = StreamSink(dut.clk, {"data": dut.out_data}, dut.out_valid, dut.out_ready, period,
                      RandomGate(spec["p_out"], spec["seed"] + 2))
    send = cocotb.start_soon(drv.send([{"data": w} for w in words]))
    got = await sink.receive(len(words))
    await send
    out = [b.fields["data"] for b in got]
    assert out == words, "words lost, repeated or out of order"
    lat = [o.edge - i.edge for i, o in zip(drv.sent, got)]
    assert min(lat) >= LATENCY, lat
    if spec["p_in"] >= 1.0 and spec["p_out"] >= 1.0:
        edges = [b.edge for b in drv.sent]
        assert edges == list(range(edges[0], edges[0] + len(words))), "input not at full rate"
        assert set(lat) == {LATENCY}, lat
    dut._log.info(f"{len(words)} beats, in edges {drv.sent[0].edge}..{drv.sent[-1].edge}, "
                  f"out {got[0].edge}..{got[-1].edge}, latency {min(lat)}..{max(lat)}")


def _outs(dut):
    return (int(dut.in_ready.value), int(dut.out_valid.value), int(dut.out_data.value))


@cocotb.test(timeout_time=WATCHDOG_US, timeout_unit="us")
async def registered(dut):
    spec = _spec()
    await tb.start(dut, idle=IDLE)
    rng = random.Random(spec["seed"])
    w = spec["width"]
    depth = spec.get("depth", DEPTH)   # another block's capacity (a queue's)
    expect, got = [], []
    for _ in range(400):
        await Timer(1, "ns")
        dut.in_valid.value, dut.out_ready.value = rng.getrandbits(1), rng.getrandbits(1)
        dut.in_data.value = rng.getrandbits(w)
        await Timer(1, "ns")
        before = _outs(dut)
        iv, od = rng.getrandbits(1), rng.getrandbits(1)
        dut.in_valid.value, dut.out_ready.value = iv, od
        data = rng.getrandbits(w)
        dut.in_data.value = data
        await ReadOnly()
        after = _outs(dut)
        assert after == before, f"outputs moved with the inputs in one cycle: {before} {after}"
        if iv and after[0]:
            expect.append(data)
        if od and after[1]:
            got.append(after[2])
        await RisingEdge(dut.clk)
    assert got == expect[:len(got)] and len(expect) - len(got) <= depth
    # drain, then hold out_ready low: exactly depth words are taken
    await Timer(1, "ns")
    dut.in_valid.value, dut.out_ready.value = 0, 1
    for _ in range(depth + 2):
        await ReadOnly()
        if int(dut.out_valid.value):
            got.append(int(dut.out_data.value))
        await RisingEdge(dut.clk)
    assert got == expect
    await Timer(1, "ns")
    dut.out_ready.value = 0
    words = [rng.getrandbits(w) for _ in range(depth + 3)]
    taken = 0
    for _ in range(depth + 8):
        dut.in_valid.value, dut.in_data.value = 1, words[min(taken, len(words) - 1)]
        await ReadOnly()
        ok = int(dut.in_ready.value)
        await RisingEdge(dut.clk)
        await Timer(1, "ns")
        taken += ok
    assert taken == depth, f"{taken} words taken into a buffer of {depth} held full"
    dut.in_valid.value, dut.out_ready.value = 0, 1
    out = []
    for _ in range(depth + 2):
        await ReadOnly()
        if int(dut.out_valid.value):
            out.append(int(dut.out_data.value))
        await RisingEdge(dut.clk)
    assert out == words[:depth], (out, words[:depth])
