"""cocotb side of tests/sim/test_runner.py: StreamDriver/StreamSink through a 2-entry FIFO."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import cocotb
from cocotb.triggers import RisingEdge

from pycde_accel.sim import tb
from pycde_accel.sim.stream import RandomGate, StreamDriver, StreamMonitor, StreamSink

PERIOD = 10


async def _reset(dut):
    await tb.start(dut, reset_cycles=2, period_ns=PERIOD)


@cocotb.test()
async def passes_all_beats(dut):
    p_in = float(os.environ["SELFTEST_P_IN"])
    p_out = float(os.environ["SELFTEST_P_OUT"])
    n = int(cocotb.plusargs["beats"])
    await _reset(dut)
    rng = random.Random(1)
    beats = [{"data": rng.randrange(256)} for _ in range(n)]
    drv = StreamDriver(dut.clk, {"data": dut.in_data}, dut.in_valid, dut.in_ready, PERIOD,
                       RandomGate(p_in, seed=2))
    sink = StreamSink(dut.clk, {"data": dut.out_data}, dut.out_valid, dut.out_ready, PERIOD,
                      RandomGate(p_out, seed=3))
    mon_in = StreamMonitor(dut.clk, {"data": dut.in_data}, dut.in_valid, dut.in_ready, PERIOD)
    mon_out = StreamMonitor(dut.clk, {"data": dut.out_data}, dut.out_valid, dut.out_ready,
                            PERIOD)
    watchers = [cocotb.start_soon(m.run()) for m in (mon_in, mon_out)]
    task = cocotb.start_soon(drv.send(beats))
    got = await sink.receive(n)
    await task
    await RisingEdge(dut.clk)  # let the monitors see the edge the last beat moved on
    for w in watchers:
        w.cancel()
    assert [b.fields for b in got] == beats
    assert [(b.fields, b.edge) for b in mon_in.beats] == [(b.fields, b.edge) for b in drv.sent]
    assert [(b.fields, b.edge) for b in mon_out.beats] == [(b.fields, b.edge) for b in got]
    edges_in = [b.edge for b in drv.sent]
    edges_out = [b.edge for b in got]
    assert edges_in == sorted(set(edges_in)) and edges_out == sorted(set(edges_out))
    assert all(o > i for i, o in zip(edges_in, edges_out))  # a beat leaves after it entered
    Path(os.environ["SELFTEST_OUT"]).write_text(json.dumps(
        {"first_in": edges_in[0], "last_out": edges_out[-1], "n": n}))


@cocotb.test()
async def fails_on_purpose(dut):
    await _reset(dut)
    assert int(dut.out_valid.value) == 1, "deliberate failure: the FIFO is empty"


@cocotb.test()
async def short_with_waves(dut):
    await _reset(dut)
    for _ in range(5):
        await RisingEdge(dut.clk)
