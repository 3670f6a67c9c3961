"""cocotb testbench for a lowered kernel: memory models on its ports, random back-pressure.

Driven by :func:`kernel_sim.simulate` through the environment variable
``KERNEL_TB_CONFIG`` (a JSON file: the kernel's ``ports()``, the input arrays, scalars, memory
latency, back-pressure probability, seed); writes ``KERNEL_TB_RESULT`` (JSON: output memory,
cycle of every store, done cycle).

Memory model: each load port accepts an address when its random ``addr_ready`` is high and
returns the word ``latency`` cycles later (many requests may be in flight, answered in order;
the data is held until the kernel takes it). The store port takes {address, data} when its
random ready is high and answers with a done token ``latency`` cycles later. The run is over
when all ``n`` stores arrived and their done tokens were taken (completion is counted here:
with the optimized route ``out0`` means "all issued", rewrite 1 of docs/toolchain.md).
"""

from __future__ import annotations

import json
import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge


def _sig(dut, name):
    return getattr(dut, name)


@cocotb.test()
async def run_kernel(dut):
    cfg = json.load(open(os.environ["KERNEL_TB_CONFIG"]))
    ports, n, lat = cfg["ports"], cfg["ports"]["n"], cfg["latency"]
    p_bp = cfg["backpressure"]
    rng = random.Random(cfg["seed"])
    cocotb.start_soon(Clock(dut.clock, 10, unit="ns").start())

    loads = {nm: (pre, cfg["inputs"][nm]) for nm, pre in ports["loads"].items()}
    st = ports["store"]
    # reset
    dut.reset.value = 1
    for pre, _ in loads.values():
        _sig(dut, f"{pre}_addr_ready").value = 0
        _sig(dut, f"{pre}_data_valid").value = 0
        _sig(dut, f"{pre}_data").value = 0
    for nm, port in ports["scalars"].items():
        _sig(dut, f"{port}_valid").value = 0
        _sig(dut, port).value = cfg["scalars"][nm] & ((1 << len(_sig(dut, port))) - 1)
    _sig(dut, f"{ports['start']}_valid").value = 0
    _sig(dut, f"{st}_ready").value = 0
    _sig(dut, f"{st}_done_valid").value = 0
    _sig(dut, f"{ports['done']}_ready").value = 0
    for _ in range(4):
        await RisingEdge(dut.clock)
    dut.reset.value = 0

    pending_scalars = set(ports["scalars"].values()) | {ports["start"]}
    inflight = {nm: deque() for nm in loads}   # (ready_cycle, word)
    done_q = deque()
    out = [None] * n
    store_cycles, done_cycle, acked = [], None, 0
    cycle, limit = 0, cfg["max_cycles"]
    while cycle < limit:
        await FallingEdge(dut.clock)
        # drive this cycle's inputs from the state
        for port in ports["scalars"].values():
            _sig(dut, f"{port}_valid").value = int(port in pending_scalars)
        _sig(dut, f"{ports['start']}_valid").value = int(ports["start"] in pending_scalars)
        for nm, (pre, _) in loads.items():
            _sig(dut, f"{pre}_addr_ready").value = int(rng.random() >= p_bp)
            q = inflight[nm]
            if q and q[0][0] <= cycle:
                _sig(dut, f"{pre}_data").value = q[0][1]
                _sig(dut, f"{pre}_data_valid").value = 1
            else:
                _sig(dut, f"{pre}_data_valid").value = 0
        _sig(dut, f"{st}_ready").value = int(rng.random() >= p_bp)
        _sig(dut, f"{st}_done_valid").value = int(bool(done_q) and done_q[0] <= cycle)
        _sig(dut, f"{ports['done']}_ready").value = 1
        await ReadOnly()
        # sample the handshakes that happen at the next rising edge
        for port in list(pending_scalars):
            if int(_sig(dut, f"{port}_ready").value):
                pending_scalars.discard(port)
        for nm, (pre, data) in loads.items():
            if int(_sig(dut, f"{pre}_addr_valid").value) and int(_sig(dut, f"{pre}_addr_ready").value):
                addr = int(_sig(dut, f"{pre}_addr").value)
                width = len(_sig(dut, f"{pre}_data"))
                inflight[nm].append((cycle + lat, data[addr] & ((1 << width) - 1)))
            if int(_sig(dut, f"{pre}_data_valid").value) and int(_sig(dut, f"{pre}_data_ready").value):
                inflight[nm].popleft()
        if int(_sig(dut, f"{st}_valid").value) and int(_sig(dut, f"{st}_ready").value):
            addr = int(_sig(dut, f"{st}_address").value)
            v = _sig(dut, f"{st}_data").value
            out[addr] = v.to_signed() if hasattr(v, "to_signed") else v.signed_integer
            store_cycles.append(cycle)
            done_q.append(cycle + lat)
        if int(_sig(dut, f"{st}_done_valid").value) and int(_sig(dut, f"{st}_done_ready").value):
            done_q.popleft()
            acked += 1
        if done_cycle is None and int(_sig(dut, f"{ports['done']}_valid").value):
            done_cycle = cycle
        cycle += 1
        if acked == n and not done_q:
            break
    json.dump({"out": out, "store_cycles": store_cycles, "done_cycle": done_cycle,
               "cycles": cycle, "acked": acked}, open(os.environ["KERNEL_TB_RESULT"], "w"))
