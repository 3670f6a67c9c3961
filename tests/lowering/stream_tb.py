"""cocotb test for a ``<kernel>_stream`` module: random-gated streams in and out (sim.stream).

Reads STREAM_TB_CONFIG (JSON: kernel ports, inputs, scalars, n, p_valid, p_ready, seed, and
optionally runs: then every input holds runs * n elements and every scalar is a list of one
value per run, all sent as fast as the module takes them); writes STREAM_TB_RESULT (JSON:
outputs, done pulses, cycles).
"""

from __future__ import annotations

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from pycde_accel.sim.stream import RandomGate, StreamDriver, StreamSink

PERIOD = 10


@cocotb.test()
async def stream_run(dut):
    cfg = json.load(open(os.environ["STREAM_TB_CONFIG"]))
    cocotb.start_soon(Clock(dut.clk, PERIOD, unit="ns").start())
    dut.rst.value = 1
    drivers = []
    runs = cfg.get("runs", 1)
    for i, nm in enumerate(list(cfg["inputs"]) + list(cfg["scalars"]) + ["start"]):
        fields = {} if nm == "start" else {"d": getattr(dut, nm)}
        gate = RandomGate(cfg["p_valid"], cfg["seed"] + i) if nm in cfg["inputs"] else None
        drv = StreamDriver(dut.clk, fields, getattr(dut, f"{nm}_valid"),
                           getattr(dut, f"{nm}_ready"), PERIOD, gate)
        width = len(getattr(dut, nm)) if nm != "start" else 0
        if nm in cfg["inputs"]:
            beats = [{"d": v & ((1 << width) - 1)} for v in cfg["inputs"][nm]]
        elif nm in cfg["scalars"]:
            vals = cfg["scalars"][nm]
            beats = [{"d": v & ((1 << width) - 1)}
                     for v in (vals if isinstance(vals, list) else [vals])]
        else:
            beats = [{}] * runs
        drivers.append((drv, beats))
    sink = StreamSink(dut.clk, {"y": dut.y}, dut.y_valid, dut.y_ready, PERIOD,
                      RandomGate(cfg["p_ready"], cfg["seed"] + 99))
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    done_edges = []

    async def watch_done():
        cycle = 0
        while True:
            await ReadOnly()
            if int(dut.done.value):
                done_edges.append(cycle)
            await RisingEdge(dut.clk)
            cycle += 1

    cocotb.start_soon(watch_done())
    for drv, beats in drivers:
        cocotb.start_soon(drv.send(beats))
    got = await sink.receive(cfg["n"] * runs)
    for _ in range(2):
        await RisingEdge(dut.clk)
    yw = len(dut.y)             # two's complement of the kernel's output width
    out = [b.fields["y"] - (1 << yw) if b.fields["y"] >= 1 << (yw - 1) else b.fields["y"]
           for b in got]
    json.dump({"out": out, "done": len(done_edges), "edges": [b.edge for b in got]},
              open(os.environ["STREAM_TB_RESULT"], "w"))
