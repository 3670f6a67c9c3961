"""cocotb testbench for a kernel lowered by the static route (``pipeline.scheduled`` -> hw).

Driven by :func:`kernel_sim.simulate_static` through ``KERNEL_TB_CONFIG``
(JSON: ``ports`` = {input name: port}, ``scalars`` = {name: port}, the input arrays and scalar
values, ``n``, back-pressure probability, seed); writes ``KERNEL_TB_RESULT`` (JSON: outputs in
order, the cycle of every output beat).

Protocol: the inputs of one element go in together (``in_valid``/``in_ready``), scalars are held
for the run; results come out in order on ``out0`` (``out0_valid``/``out0_ready``). The source
offers an element with probability 1-p each cycle and the sink is ready with probability 1-p.
"""

from __future__ import annotations

import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge


@cocotb.test()
async def run_pipeline(dut):
    cfg = json.load(open(os.environ["KERNEL_TB_CONFIG"]))
    n, p_bp = cfg["n"], cfg["backpressure"]
    rng = random.Random(cfg["seed"])
    cocotb.start_soon(Clock(dut.clock, 10, unit="ns").start())
    sig = lambda name: getattr(dut, name)  # noqa: E731
    mask = lambda name, v: v & ((1 << len(sig(name))) - 1)  # noqa: E731
    dut.reset.value = 1
    dut.in_valid.value = 0
    dut.out0_ready.value = 0
    for nm, port in cfg["scalars"].items():
        sig(port).value = mask(port, cfg["scalar_values"][nm])
    for port in cfg["ports"].values():
        sig(port).value = 0
    for _ in range(4):
        await RisingEdge(dut.clock)
    dut.reset.value = 0
    sent, out, out_cycles, cycle = 0, [], [], 0
    offer = False
    while cycle < cfg["max_cycles"] and len(out) < n:
        await FallingEdge(dut.clock)
        if not offer:  # once offered, an element stays offered until taken
            offer = sent < n and rng.random() >= p_bp
        dut.in_valid.value = int(offer)
        for nm, port in cfg["ports"].items():
            sig(port).value = mask(port, cfg["inputs"][nm][sent]) if sent < n else 0
        dut.out0_ready.value = int(rng.random() >= p_bp)
        await ReadOnly()
        if offer and int(dut.in_ready.value):
            sent += 1
            offer = False
        if int(dut.out0_valid.value) and int(dut.out0_ready.value):
            v = dut.out0.value
            out.append(v.to_signed() if hasattr(v, "to_signed") else v.signed_integer)
            out_cycles.append(cycle)
        cycle += 1
    json.dump({"out": out, "out_cycles": out_cycles, "cycles": cycle},
              open(os.environ["KERNEL_TB_RESULT"], "w"))
