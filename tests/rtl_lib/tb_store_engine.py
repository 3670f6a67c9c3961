"""cocotb testbench for the store engine (``rtl_lib.store_engine``).

Spec (JSON in ``TB_STORE_SPEC``): ``rows``, ``cols``, ``acc_width``, ``phases``, ``seed``,
``p_c`` / ``p_st`` / ``p_wc`` / ``p_wd`` (probability per cycle of valid on the C and command
streams, of ready on the DMA command and data streams). Each phase is ``{"params": [[index,
word], ...], "cmds": [{"addr", "rows", "stride", "p_index", "relu", "per_tensor"}, ...],
"tiles": [[[acc] * cols] * rows per cmd]}``. The bench runs the phases in order; before a
phase it waits until the engine is idle (``busy`` low, all earlier data received) and writes
its parameter words (the rule: a LOAD to P waits until the store engine is idle), then drives
its commands and C tiles concurrently under the random gating, while the DMA command and data
sinks run for the whole test.

It checks the protocol itself: ``wc_valid``/``wd_valid`` held with unchanged payload until
taken, ``busy`` high whenever an accepted command still has data beats to send, ``busy`` low at
the end, and no extra beat after the last. It writes ``TB_STORE_OUT`` (JSON): the received
``wc`` commands and ``wd`` beats, and the edges of the first C beat and the last data beat.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from pycde_accel.sim import tb
from pycde_accel.sim.stream import RandomGate, StreamDriver, StreamSink, _read, edge_index
from pycde_accel.sim.watchdog import Watchdog

PERIOD_NS = tb.PERIOD_NS
INPUTS = ["c_data", "c_last", "c_valid", "p_wr_valid", "p_wr_index", "p_wr_data", "st_addr",
          "st_rows", "st_row_mask", "st_stride", "st_p_index", "st_relu", "st_per_tensor", "st_valid",
          "wc_ready", "wd_ready"]


@cocotb.test()
async def store(dut):
    spec = json.loads(os.environ["TB_STORE_SPEC"])
    R, C, ACC = spec["rows"], spec["cols"], spec["acc_width"]
    W = len(dut.wd_data)
    bpr = C // (W // 8)
    seed = spec["seed"]
    await tb.start(dut, idle=INPUTS)

    c_drv = StreamDriver(dut.clk, {"data": dut.c_data, "last": dut.c_last}, dut.c_valid,
                         dut.c_ready, PERIOD_NS, RandomGate(spec["p_c"], seed + 1))
    st_drv = StreamDriver(dut.clk, {"addr": dut.st_addr, "rows": dut.st_rows,
                                    "row_mask": dut.st_row_mask,
                                    "stride": dut.st_stride, "p_index": dut.st_p_index,
                                    "relu": dut.st_relu, "per_tensor": dut.st_per_tensor},
                          dut.st_valid, dut.st_ready, PERIOD_NS, RandomGate(spec["p_st"], seed + 2))
    p_drv = StreamDriver(dut.clk, {"index": dut.p_wr_index, "data": dut.p_wr_data},
                         dut.p_wr_valid, dut.p_wr_ready, PERIOD_NS, RandomGate(0.7, seed + 3))
    wc_sink = StreamSink(dut.clk, {"addr": dut.wc_addr, "beats": dut.wc_beats,
                                   "rows": dut.wc_rows, "stride": dut.wc_stride},
                         dut.wc_valid, dut.wc_ready, PERIOD_NS, RandomGate(spec["p_wc"], seed + 4))
    wd_sink = StreamSink(dut.clk, {"data": dut.wd_data}, dut.wd_valid, dut.wd_ready, PERIOD_NS,
                         RandomGate(spec["p_wd"], seed + 5))
    wdog = Watchdog(dut.clk, {"c": (dut.c_valid, dut.c_ready), "st": (dut.st_valid, dut.st_ready),
                              "wc": (dut.wc_valid, dut.wc_ready), "wd": (dut.wd_valid, dut.wd_ready),
                              "p": (dut.p_wr_valid, dut.p_wr_ready)},
                    stall_cycles=None, idle_cycles=2000).start()

    cmds_all = [c for ph in spec["phases"] for c in ph["cmds"]]
    n_wd = sum(c["rows"] * bpr for c in cmds_all)
    errors: list[str] = []
    counts = {"accepted_beats": 0, "taken": 0, "first_c": None}

    async def checker():
        """Protocol rules, sampled on every edge."""
        prev = {}
        while True:
            await ReadOnly()
            now = {s: (_read(getattr(dut, f"{s}_valid")), _read(getattr(dut, f"{s}_ready")),
                       tuple(_read(getattr(dut, f)) for f in fields))
                   for s, fields in (("wc", ("wc_addr", "wc_rows", "wc_stride", "wc_beats")),
                                     ("wd", ("wd_data",)))}
            for s, (v, r, d) in now.items():
                if s in prev:
                    pv, pr, pd = prev[s]
                    if pv and not pr and (not v or d != pd):
                        errors.append(f"{s}: valid beat withdrawn or changed before it was taken")
            prev = now
            if counts["accepted_beats"] > counts["taken"] and not _read(dut.busy):
                errors.append(f"busy low with {counts['accepted_beats'] - counts['taken']} "
                              f"data beats of accepted commands unsent")
            if _read(dut.st_valid) and _read(dut.st_ready):
                counts["accepted_beats"] += _read(dut.st_rows) * bpr
            if now["wd"][0] and now["wd"][1]:
                counts["taken"] += 1
            if counts["first_c"] is None and _read(dut.c_valid) and _read(dut.c_ready):
                counts["first_c"] = edge_index(PERIOD_NS)
            await RisingEdge(dut.clk)

    cocotb.start_soon(checker())
    wc_task = cocotb.start_soon(wc_sink.receive(len(cmds_all)))
    wd_task = cocotb.start_soon(wd_sink.receive(n_wd))

    done_beats = 0
    for ph in spec["phases"]:
        # the engine must be idle before its parameters change
        while len(wd_sink.received) < done_beats or _read(dut.busy):
            await RisingEdge(dut.clk)
        await p_drv.send([{"index": i, "data": d} for i, d in ph["params"]])
        beats = []
        for tile in ph["tiles"]:
            for r, row in enumerate(tile):
                data = 0
                for j, a in enumerate(row):
                    data |= (a & ((1 << ACC) - 1)) << (j * ACC)
                beats.append({"data": data, "last": int(r == R - 1)})
        # the sender decodes each command's row mask (store_engine.row_mask_value)
        t_st = cocotb.start_soon(st_drv.send([dict(c, row_mask=(1 << min(c["rows"], R)) - 1)
                                              for c in ph["cmds"]]))
        t_c = cocotb.start_soon(c_drv.send(beats))
        await t_st
        await t_c
        done_beats += sum(c["rows"] * bpr for c in ph["cmds"])
    wc = await wc_task
    wd = await wd_task
    wdog.stop()
    for _ in range(20):  # nothing more comes out, and the engine goes idle
        await ReadOnly()
        if _read(dut.wd_valid) or _read(dut.wc_valid):
            errors.append("an extra beat after the last expected one")
            break
        await RisingEdge(dut.clk)
    # busy also covers a last tile's dropped rows, which still run through the (pipelined)
    # kernel after the last data beat: it must drop within a tile and the kernel's latency
    for _ in range(R * C + 64):
        await ReadOnly()
        if not _read(dut.busy):
            break
        await RisingEdge(dut.clk)
    else:
        errors.append("busy still high after all data was sent")
    out = {"wc": [b.fields for b in wc], "wd": [b.fields["data"] for b in wd],
           "wd_edges": [b.edge for b in wd], "first_c": counts["first_c"], "errors": errors}
    Path(os.environ["TB_STORE_OUT"]).write_text(json.dumps(out))
    assert not errors, errors[:5]
