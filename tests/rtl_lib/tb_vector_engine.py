"""cocotb testbench for the vector engine (``rtl_lib.vector_engine``).

Spec (JSON in ``TB_VEC_SPEC``): ``{"steps": [...], "seed", "p_s", "p_x", "p_wc", "p_wd",
"max_cycles"}``. Steps run in program order, as the accelerator's dispatcher would:

* ``{"op": "load_x", "index": i, "beats": [int, ...]}``: waits until the engine is idle (the
  spec's rule for a LOAD to X), then writes beat j to X[i + j] on ``x_wr_*`` (valid gated by
  ``p_x``, honouring ``x_wr_ready``);
* ``{"op": "vec", "n", "x_off", "dst", "ma", "mb", "shift", "max", "relu", "to_x", "s": [int,
  ...]}`` (and ``lut_set``, ``lut``, ``mul``, default 0): offers the command on ``v_*`` until taken. The S beats of every VEC are queued on
  the S stream from the start (valid gated by ``p_s``); the engine must take each only while
  its command runs.

The write DMA side is two random-ready sinks (``p_wc`` on ``wc_ready``, ``p_wd`` on
``wd_ready``). The bench fails if ``max_cycles`` pass first. Writes ``TB_VEC_OUT`` (JSON):
``wc`` (each write command taken: addr, beats, rows, stride, edge), ``wd`` (each data beat
taken: value, edge), ``vec`` (per VEC: the edge it was taken and the first edge after it where
``busy`` was low again).
"""

from __future__ import annotations

import json
import os

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge, with_timeout

from pycde_accel.sim import tb
from pycde_accel.sim.stream import RandomGate, StreamDriver, StreamSink, edge_index

PERIOD_NS = tb.PERIOD_NS
V_FIELDS = ("n", "x_off", "dst", "ma", "mb", "shift", "max", "relu", "to_x", "lut_set", "lut", "mul",
            "rowred", "n_nz", "n_one")


def decoded(st: dict) -> dict:
    """A VEC step with the bits the sender decodes from n (as the accelerator's dispatch does)."""
    return {**st, "n_nz": int(st["n"] != 0), "n_one": int(st["n"] == 1)}


@cocotb.test()
async def run(dut):
    spec = json.loads(os.environ["TB_VEC_SPEC"])
    seed = spec.get("seed", 0)
    fields = [f for f in V_FIELDS if hasattr(dut, f"v_{f}")]   # v_rowred: with the unit only
    inputs = ["x_wr_valid", "x_wr_index", "x_wr_data", "s_data", "s_valid", "v_valid",
              "wc_ready", "wd_ready"] + [f"v_{f}" for f in fields]
    await tb.start(dut, idle=inputs)
    steps = spec["steps"]
    vecs = [s for s in steps if s["op"] == "vec"]
    s_beats = [{"d": b} for s in vecs for b in s["s"]]
    dram = [s for s in vecs if not s["to_x"] and not s.get("lut_set")]
    n_wd = sum(s["n"] for s in dram)

    s_drv = StreamDriver(dut.clk, {"d": dut.s_data}, dut.s_valid, dut.s_ready, PERIOD_NS,
                         RandomGate(spec.get("p_s", 1.0), seed + 1))
    wc_sink = StreamSink(dut.clk, {"addr": dut.wc_addr, "beats": dut.wc_beats,
                                   "rows": dut.wc_rows, "stride": dut.wc_stride},
                         dut.wc_valid, dut.wc_ready, PERIOD_NS,
                         RandomGate(spec.get("p_wc", 1.0), seed + 2))
    wd_sink = StreamSink(dut.clk, {"d": dut.wd_data}, dut.wd_valid, dut.wd_ready, PERIOD_NS,
                         RandomGate(spec.get("p_wd", 1.0), seed + 3))
    x_gate = RandomGate(spec.get("p_x", 1.0), seed + 4)
    timing = []

    async def busy_low_after(edge0):
        while True:
            await ReadOnly()
            low = int(dut.busy.value) == 0
            await RisingEdge(dut.clk)
            e = edge_index(PERIOD_NS)
            if low and e > edge0 + 1:
                return e - 1

    async def sequencer():
        for st in steps:
            if st["op"] == "load_x":
                while True:  # a LOAD to X waits until the engine is idle
                    await ReadOnly()
                    idle = int(dut.busy.value) == 0
                    await RisingEdge(dut.clk)
                    if idle:
                        break
                for j, beat in enumerate(st["beats"]):
                    while True:
                        on = x_gate.next()
                        dut.x_wr_valid.value = int(on)
                        dut.x_wr_index.value = (st["index"] + j) % (1 << len(dut.x_wr_index))
                        dut.x_wr_data.value = beat
                        await ReadOnly()
                        moved = on and int(dut.x_wr_ready.value) == 1
                        await RisingEdge(dut.clk)
                        if moved:
                            break
                dut.x_wr_valid.value = 0
            else:
                st = decoded(st)
                for f in fields:
                    getattr(dut, f"v_{f}").value = st.get(f, 0) & ((1 << len(getattr(dut, f"v_{f}"))) - 1)
                dut.v_valid.value = 1
                while True:
                    await ReadOnly()
                    taken = int(dut.v_ready.value) == 1
                    await RisingEdge(dut.clk)
                    if taken:
                        break
                dut.v_valid.value = 0
                e = edge_index(PERIOD_NS)
                timing.append([e, await busy_low_after(e)])

    cocotb.start_soon(s_drv.send(s_beats))
    wc_task = cocotb.start_soon(wc_sink.receive(len(dram)))
    wd_task = cocotb.start_soon(wd_sink.receive(n_wd))

    async def everything():
        await sequencer()
        await wc_task
        await wd_task
        for _ in range(5):
            await RisingEdge(dut.clk)

    await with_timeout(everything(), spec.get("max_cycles", 200000) * PERIOD_NS, "ns")
    assert s_drv.idle(), "S beats left over: the engine did not take every beat"
    assert int(dut.busy.value) == 0
    out = {"wc": [[b.fields[k] for k in ("addr", "beats", "rows", "stride")] + [b.edge]
                  for b in wc_sink.received],
           "wd": [[b.fields["d"], b.edge] for b in wd_sink.received],
           "vec": timing}
    with open(os.environ["TB_VEC_OUT"], "w") as fh:
        json.dump(out, fh)
