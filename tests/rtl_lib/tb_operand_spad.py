"""cocotb testbench for the double-buffered operand scratchpad (``rtl_lib.operand_spad``).

Spec (JSON in ``TB_OSPAD_SPEC``): ``{"lanes", "width", "depth", "tiles", "seed", "p_wr",
"p_rd", "hold"}``. A producer fills tiles (the first two: every word of every lane; later
ones: random writes, also to lanes >= ``lanes``, which must be dropped, and junk writes while it
owns no bank), committing each (half of the time with its last write). A consumer waits for
``rd_avail``, issues random (word, byte) reads with random gaps and checks, one cycle after
each read, ``rd_data_valid`` and every lane's byte against a model of the two physical banks
(read latency RD_LATENCY); it releases the bank on the edge of its last read (that read must still
return the released bank's data) after ``hold`` random idle cycles.
"""

from __future__ import annotations

import json
import os
import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from pycde_accel.rtl_lib.operand_spad import RD_LATENCY
from pycde_accel.sim import tb


@cocotb.test()
async def pingpong(dut):
    spec = json.loads(os.environ["TB_OSPAD_SPEC"])
    lanes, width, depth = spec["lanes"], spec["width"], spec["depth"]
    ab = width // 8
    await tb.start(dut, idle=["wr_valid", "wr_lane", "wr_word", "wr_data", "commit", "rd_valid",
                              "rd_word", "rd_byte", "rd_release"])
    mem = [[[0] * depth for _ in range(lanes)] for _ in range(2)]
    state = {"wr_phys": 0, "rd_phys": 0, "reads": 0, "dropped": 0}
    n_tiles = spec["tiles"]

    async def producer():
        prng = random.Random(spec["seed"] + 1)
        for t in range(n_tiles):
            if t < 2:
                writes = [(l, w) for l in range(lanes) for w in range(depth)]
                prng.shuffle(writes)
            else:
                writes = [(prng.randrange(lanes + 2), prng.randrange(depth))
                          for _ in range(prng.randint(0, 2 * depth))]
            cwl = bool(writes) and prng.random() < 0.5
            while True:
                await RisingEdge(dut.clk)
                await Timer(1, "ns")
                dut.wr_valid.value = 0
                dut.commit.value = 0
                if not int(dut.wr_ready.value):
                    if prng.random() < 0.5:  # ignored: the producer owns no bank
                        dut.wr_valid.value = 1
                        dut.wr_lane.value = 1 << prng.randrange(lanes)
                        dut.wr_word.value = prng.randrange(depth)
                        dut.wr_data.value = prng.getrandbits(width)
                    continue
                if prng.random() >= spec["p_wr"]:
                    continue
                if writes:
                    lane, word = writes.pop()
                    data = prng.getrandbits(width)
                    dut.wr_valid.value = 1
                    dut.wr_lane.value = (1 << lane) & ((1 << lanes) - 1)  # one-hot; none: dropped
                    dut.wr_word.value, dut.wr_data.value = word, data
                    if lane < lanes:
                        mem[state["wr_phys"]][lane][word] = data
                    else:
                        state["dropped"] += 1
                    if not writes and cwl:
                        dut.commit.value = 1
                        break
                else:
                    dut.commit.value = 1
                    break
            await RisingEdge(dut.clk)
            state["wr_phys"] ^= 1
            await Timer(1, "ns")
            dut.wr_valid.value = 0
            dut.commit.value = 0

    async def consumer():
        crng = random.Random(spec["seed"] + 2)
        for t in range(n_tiles):
            while True:
                await RisingEdge(dut.clk)
                await Timer(1, "ns")
                dut.rd_valid.value = 0
                dut.rd_release.value = 0
                if int(dut.rd_avail.value):
                    break
            for _ in range(crng.randrange(spec["hold"] + 1)):
                await RisingEdge(dut.clk)
            await Timer(1, "ns")
            n = crng.randint(1, 3 * depth)
            pipe = []   # reads in flight: (issued, expected bytes, word, byte), oldest first

            def check():
                on, want, word, byte = pipe.pop(0)
                assert int(dut.rd_data_valid.value) == int(on), f"tile {t}: rd_data_valid"
                if on:
                    got = int(dut.rd_data.value)
                    got = [(got >> (8 * i)) & 0xFF for i in range(lanes)]
                    assert got == want, f"tile {t} word {word} byte {byte}: {got} != {want}"
                    state["reads"] += 1

            while n:
                on = crng.random() < spec["p_rd"]
                want, word, byte = None, None, None
                dut.rd_valid.value = int(on)
                if on:
                    n -= 1
                    word, byte = crng.randrange(depth), crng.randrange(ab)
                    dut.rd_word.value, dut.rd_byte.value = word, byte
                    want = [(mem[state["rd_phys"]][i][word] >> (8 * byte)) & 0xFF
                            for i in range(lanes)]
                    dut.rd_release.value = int(n == 0)  # release with the last read
                pipe.append((on, want, word, byte))
                await RisingEdge(dut.clk)
                await Timer(1, "ns")
                dut.rd_valid.value = 0
                dut.rd_release.value = 0
                if len(pipe) == RD_LATENCY:
                    check()
            # the last reads' data, RD_LATENCY edges later: an entry is checked when
            # RD_LATENCY - 1 entries were queued after it (a tile of fewer reads than that
            # leaves a shorter pipe, so check only when it is full)
            for _ in range(RD_LATENCY - 1):
                pipe.append((False, None, None, None))
                await RisingEdge(dut.clk)
                await Timer(1, "ns")
                if len(pipe) == RD_LATENCY:
                    check()
            state["rd_phys"] ^= 1

    p = cocotb.start_soon(producer())
    c = cocotb.start_soon(consumer())
    await p
    await c
    await RisingEdge(dut.clk)
    await ReadOnly()
    assert int(dut.rd_avail.value) == 0 and int(dut.wr_ready.value) == 1, "banks not all free"
    assert state["reads"] > n_tiles
