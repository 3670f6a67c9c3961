"""cocotb testbench for the double-buffered scratchpad and the width adapter (``rtl_lib.scratchpad``).

Spec (JSON in the environment variable ``TB_SPAD_SPEC``): ``{"width", "depth", "tiles",
"seed", "p_wr", "p_rd", "hold"}`` for ``pingpong``; ``{"in_width", "out_width", "beats",
"seed", "p_in", "p_out"}`` for ``adapter``.

* ``pingpong``: a producer fills tiles (random sizes, addresses in random order, random gaps,
  junk writes offered while it owns no bank) and commits each with a tag; a consumer waits for
  a full bank, checks the tag, reads the tile in random order with random gaps, checks every
  word, and releases the bank after ``hold`` random cycles. The bench also checks that the
  producer filled while the consumer held a bank (the point of double buffering) and that the
  producer was held off when both banks were full. Writes ``TB_SPAD_OUT`` (JSON) with counts.
* ``adapter``: random beats with random ``last`` through the adapter under random valid/ready;
  the output equals the reference re-cut of the input. ``whole`` (spec): ``last`` only on the
  last input beat of an output beat (the ``whole=True`` adapter's contract).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from pycde_accel.sim import tb
from pycde_accel.sim.stream import RandomGate, StreamDriver, StreamSink

PERIOD_NS = 10


def _spec() -> dict:
    return json.loads(os.environ["TB_SPAD_SPEC"])


async def _reset(dut, inputs):
    await tb.start(dut, idle=inputs)


@cocotb.test()
async def pingpong(dut):
    spec = _spec()
    width, depth, n_tiles = spec["width"], spec["depth"], spec["tiles"]
    rng = random.Random(spec["seed"])
    await _reset(dut, ["wr_valid", "wr_addr", "wr_data", "commit_valid", "commit_tag",
                       "rd_valid", "rd_addr", "rd_release"])
    tiles = []
    for t in range(n_tiles):
        n = rng.choice([1, 2, depth, rng.randint(1, depth)])
        tiles.append({a: rng.getrandbits(width) for a in range(n)})
    tag_mask = (1 << len(dut.commit_tag)) - 1
    stats = {"overlap_writes": 0, "blocked_cycles": 0, "tiles_read": 0, "junk_offered": 0}
    cycle = [0]

    async def clock_counter():
        while True:
            await RisingEdge(dut.clk)
            cycle[0] += 1

    async def producer():
        prng = random.Random(spec["seed"] + 1)
        for t, tile in enumerate(tiles):
            order = list(tile)
            prng.shuffle(order)
            while True:
                await RisingEdge(dut.clk)
                await Timer(1, "ns")  # ready depends on registers only: stable now
                ready = int(dut.wr_ready.value)
                dut.commit_valid.value = 0
                dut.wr_valid.value = 0
                if not ready:
                    stats["blocked_cycles"] += 1
                    if prng.random() < 0.5:  # a junk write: must be ignored
                        dut.wr_valid.value = 1
                        dut.wr_addr.value = prng.randrange(depth)
                        dut.wr_data.value = prng.getrandbits(width)
                        stats["junk_offered"] += 1
                    continue
                if prng.random() >= spec["p_wr"]:
                    continue
                if order:
                    a = order.pop()
                    dut.wr_valid.value = 1
                    dut.wr_addr.value = a
                    dut.wr_data.value = tile[a]
                    if int(dut.rd_avail.value):
                        stats["overlap_writes"] += 1
                    if not order and prng.random() < 0.5:  # commit with the last write
                        dut.commit_valid.value = 1
                        dut.commit_tag.value = t & tag_mask
                        break
                else:
                    dut.commit_valid.value = 1
                    dut.commit_tag.value = t & tag_mask
                    break
        await RisingEdge(dut.clk)
        dut.commit_valid.value = 0
        dut.wr_valid.value = 0

    async def consumer():
        crng = random.Random(spec["seed"] + 2)
        for t, tile in enumerate(tiles):
            while True:
                await RisingEdge(dut.clk)
                await Timer(1, "ns")
                dut.rd_release.value = 0
                dut.rd_valid.value = 0
                if int(dut.rd_avail.value):
                    break
            assert int(dut.rd_tag.value) == t & tag_mask, f"tile {t}: tag {int(dut.rd_tag.value)}"
            order = list(tile)
            crng.shuffle(order)
            while order:
                if crng.random() < spec["p_rd"]:
                    a = order.pop()
                    dut.rd_valid.value = 1
                    dut.rd_addr.value = a
                else:
                    a = None
                    dut.rd_valid.value = 0
                await RisingEdge(dut.clk)  # the read is taken here; its data shows after it
                await Timer(1, "ns")
                dut.rd_valid.value = 0
                if a is not None:
                    assert int(dut.rd_data_valid.value) == 1, f"tile {t}: rd_data_valid"
                    got = int(dut.rd_data.value)
                    assert got == tile[a], f"tile {t} addr {a}: got {got:#x} want {tile[a]:#x}"
                else:
                    assert int(dut.rd_data_valid.value) == 0
            for _ in range(crng.randrange(spec["hold"] + 1)):
                await RisingEdge(dut.clk)
            assert int(dut.rd_avail.value) == 1
            dut.rd_release.value = 1
            stats["tiles_read"] += 1
        await RisingEdge(dut.clk)
        dut.rd_release.value = 0

    cocotb.start_soon(clock_counter())
    p = cocotb.start_soon(producer())
    c = cocotb.start_soon(consumer())
    await p
    await c
    await RisingEdge(dut.clk)
    await ReadOnly()
    assert int(dut.rd_avail.value) == 0 and int(dut.wr_ready.value) == 1, "banks not all free"
    stats["cycles"] = cycle[0]
    Path(os.environ["TB_SPAD_OUT"]).write_text(json.dumps(stats))


def recut(beats, in_w, out_w):
    """Reference: the output beats (data, last) of the adapter for input beats (data, last)."""
    out = []
    if in_w >= out_w:
        n = in_w // out_w
        for d, last in beats:
            for i in range(n):
                out.append({"data": (d >> (i * out_w)) & ((1 << out_w) - 1),
                            "last": int(bool(last) and i == n - 1)})
        return out
    n = out_w // in_w
    word, part = 0, 0
    for d, last in beats:
        word |= d << (part * in_w)
        part += 1
        if part == n or last:
            out.append({"data": word, "last": int(last)})
            word, part = 0, 0
    return out


@cocotb.test()
async def adapter(dut):
    spec = _spec()
    in_w, out_w = spec["in_width"], spec["out_width"]
    rng = random.Random(spec["seed"])
    await _reset(dut, ["in_valid", "in_data", "in_last", "out_ready"])
    if spec.get("whole"):   # in_last only on the last input of an output beat
        n = out_w // in_w
        beats = [(rng.getrandbits(in_w), int(i % n == n - 1 and rng.random() < 0.5))
                 for i in range(spec["beats"] - spec["beats"] % n)]
    else:
        beats = [(rng.getrandbits(in_w), int(rng.random() < 0.2)) for _ in range(spec["beats"])]
    beats[-1] = (beats[-1][0], 1)
    want = recut(beats, in_w, out_w)
    drv = StreamDriver(dut.clk, {"data": dut.in_data, "last": dut.in_last}, dut.in_valid,
                       dut.in_ready, PERIOD_NS, RandomGate(spec["p_in"], spec["seed"] + 1))
    sink = StreamSink(dut.clk, {"data": dut.out_data, "last": dut.out_last}, dut.out_valid,
                      dut.out_ready, PERIOD_NS, RandomGate(spec["p_out"], spec["seed"] + 2))
    task = cocotb.start_soon(drv.send([{"data": d, "last": l} for d, l in beats]))
    got = await sink.receive(len(want))
    await task
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.fields == w, f"beat {i}: got {g.fields} want {w}"
    dut.out_ready.value = 1
    for _ in range(5):
        await RisingEdge(dut.clk)
        await ReadOnly()
        assert int(dut.out_valid.value) == 0, "an extra output beat"
        await Timer(1, "ns")
    if spec["p_in"] == spec["p_out"] == 1.0:
        span = got[-1].edge - got[0].edge + 1
        # full rate: one output beat per cycle when splitting, one per n cycles when packing
        n = max(in_w // out_w, out_w // in_w)
        assert span <= (len(want) if in_w >= out_w else len(beats)) + 1, (span, len(want), n)
