"""cocotb testbench for :mod:`pycde_accel.sim.watchdog` on a one-stage pipeline that can freeze.

The design (``tests/sim/test_watchdog.py``): ``in_*`` -> one register stage -> ``out_*``;
``freeze`` high forces ``in_ready`` low (the stage stops taking beats). Tests:

* ``healthy``: 400 beats under random valid/ready (p = 0.5): the watchdog must not trip.
* ``stall_guarded``: freeze after some beats: ``watch()`` raises StallError naming ``in``.
* ``idle_guarded``: the producer stops after 30 beats: ``watch()`` raises StallError saying no
  beat moved, the last beat was on ``out`` and ``in`` waits for valid.
* ``unguarded_stall``: the watchdog runs in the background and the test waits forever for a
  beat that never comes: the watchdog must end the test (it FAILS, by design, naming ``in``).
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import Event, RisingEdge

from pycde_accel.sim import tb
from pycde_accel.sim.stream import RandomGate, StreamDriver, StreamSink
from pycde_accel.sim.watchdog import StallError, Watchdog

PERIOD_NS = 10


async def _setup(dut):
    await tb.start(dut, idle=("freeze", "in_valid", "out_ready"), reset_cycles=2)
    streams = {"in": (dut.in_valid, dut.in_ready), "out": (dut.out_valid, dut.out_ready)}
    drv = StreamDriver(dut.clk, {"data": dut.in_data}, dut.in_valid, dut.in_ready, PERIOD_NS,
                       RandomGate(0.5, 1))
    sink = StreamSink(dut.clk, {"data": dut.out_data}, dut.out_valid, dut.out_ready, PERIOD_NS,
                      RandomGate(0.5, 2))
    return streams, drv, sink


async def _traffic(drv, sink, n):
    task = cocotb.start_soon(drv.send([{"data": i & 0xFF} for i in range(n)]))
    got = await sink.receive(n)
    await task
    assert [b.fields["data"] for b in got] == [i & 0xFF for i in range(n)]


@cocotb.test()
async def healthy(dut):
    streams, drv, sink = await _setup(dut)
    wd = Watchdog(dut.clk, streams, stall_cycles=40, idle_cycles=40)
    await wd.watch(_traffic(drv, sink, 400))
    assert wd.tripped is None and wd.beats == {"in": 400, "out": 400}, wd.beats


async def _freeze_after(dut, cycles):
    for _ in range(cycles):
        await RisingEdge(dut.clk)
    dut.freeze.value = 1


@cocotb.test()
async def stall_guarded(dut):
    streams, drv, sink = await _setup(dut)
    wd = Watchdog(dut.clk, streams, stall_cycles=50, idle_cycles=None)
    cocotb.start_soon(_freeze_after(dut, 60))
    try:
        await wd.watch(_traffic(drv, sink, 400))
    except StallError as e:
        msg = str(e)
    else:
        raise AssertionError("the watchdog did not trip")
    assert msg.startswith("watchdog: stream 'in' stalled: valid high, ready low for 50 cycles"), msg
    assert "out: valid=0 ready=1 (waiting for valid" in msg, msg


@cocotb.test()
async def idle_guarded(dut):
    streams, drv, sink = await _setup(dut)
    wd = Watchdog(dut.clk, streams, stall_cycles=1000, idle_cycles=30)

    async def stops_early():
        await drv.send([{"data": i} for i in range(30)])
        await Event().wait()  # the producer never sends again

    sink_task = cocotb.start_soon(sink.receive(1000))
    try:
        await wd.watch(stops_early())
    except StallError as e:
        msg = str(e)
    else:
        raise AssertionError("the watchdog did not trip")
    sink_task.cancel()
    assert "no beat moved on any stream for 30 cycles" in msg, msg
    assert "last beat on stream 'out'" in msg, msg
    assert "in: valid=0 ready=1 (waiting for valid, 30 beats)" in msg, msg


@cocotb.test()
async def unguarded_stall(dut):
    """Expected to FAIL: the watchdog ends a test that would otherwise wait forever."""
    streams, drv, sink = await _setup(dut)
    Watchdog(dut.clk, streams, stall_cycles=25, idle_cycles=None, name="guard").start()
    dut.freeze.value = 1
    cocotb.start_soon(drv.send([{"data": 1}]))
    await sink.receive(1)  # never arrives
