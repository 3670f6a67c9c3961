"""cocotb testbench for the matmul unit (``rtl_lib.matmul_unit``): drives a program, checks C.

The program is JSON in the file named by ``TB_MMU_SPEC`` (tests/rtl_lib/test_matmul_unit.py
writes it with its numpy reference)::

    {"rows", "cols", "acc_width",
     "a_banks": [{"writes": [[lane, word, data], ...], "commit_with_last": bool}, ...],
     "b_banks": [...],                       # in commit order; each bank ends with a commit
     "execs": [[k, a_word, b_word, rel_a, rel_b(, chain(, dw))], ...],
     "tiles": [[[C[0][0], C[0][1], ...], ...], ...],   # expected tile per EXEC without chain
                                                       # (summed over its CHAIN run; signed)
     "p_wr", "p_ex", "p_c": probability a write / EXEC / c_ready is offered in a cycle,
     "junk": offer ignored writes while the producer owns no bank,
     "preload": EXECs are offered only after this many banks of A and of B were committed,
     "seed"}

Three producers (A writes, B writes, EXEC commands) and a C sink run concurrently with seeded
random gaps; every C row is compared bit-exactly with the expected tile, ``c_last`` on row
R-1. A monitor checks every cycle that ``stall == busy & ~core_fire`` and that no beat enters
the core while not ``busy``. At the end: no extra C beat, ``busy`` low, ``err`` low, both
producers own an empty bank (every bank released), and the core took sum(K) beats.
Writes ``TB_MMU_OUT`` (JSON): edge indices of the first EXEC accepted, first/last beat into
the core, last C beat, and cycle counts (busy, stall, fires).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from pycde_accel.sim import tb
from pycde_accel.sim.stream import edge_index

PERIOD_NS = tb.PERIOD_NS


def _u(h) -> int:
    return int(h.value)


@cocotb.test()
async def program(dut):
    spec = json.loads(Path(os.environ["TB_MMU_SPEC"]).read_text())
    R, C, ACC = spec["rows"], spec["cols"], spec["acc_width"]
    seed = spec["seed"]
    inputs = [f"{s}_{n}" for s in "ab" for n in ("wr_valid", "wr_lane", "wr_word", "wr_data",
                                                 "commit")]
    inputs += ["ex_k", "ex_a_word", "ex_b_word", "ex_rel_a", "ex_rel_b", "ex_chain", "ex_valid",
               "c_ready"]
    await tb.start(dut, idle=inputs)
    committed = {"a": 0, "b": 0}
    ev = {"accepts": [], "fires": [], "c": [], "busy": 0, "stall": 0}
    done = {"flag": False}

    def h(pfx, name):
        return getattr(dut, f"{pfx}_{name}")

    async def producer(pfx, banks, rng):
        wmask_l, wmask_w = (1 << len(h(pfx, "wr_lane"))) - 1, (1 << len(h(pfx, "wr_word"))) - 1
        width = len(h(pfx, "wr_data"))
        for bank in banks:
            writes = list(bank["writes"])
            cwl = bank.get("commit_with_last", False)
            while True:
                await RisingEdge(dut.clk)
                await Timer(1, "ns")  # wr_ready depends on registers only: stable now
                h(pfx, "wr_valid").value = 0
                h(pfx, "commit").value = 0
                if not _u(h(pfx, "wr_ready")):
                    if spec.get("junk") and rng.random() < 0.3:  # must be ignored
                        h(pfx, "wr_valid").value = 1
                        h(pfx, "wr_lane").value = rng.randint(0, wmask_l)
                        h(pfx, "wr_word").value = rng.randint(0, wmask_w)
                        h(pfx, "wr_data").value = rng.getrandbits(width)
                    continue
                if rng.random() >= spec["p_wr"]:
                    continue
                if writes:
                    lane, word, data = writes.pop(0)
                    h(pfx, "wr_valid").value = 1
                    h(pfx, "wr_lane").value = (1 << lane) & wmask_l  # one-hot; none: dropped
                    h(pfx, "wr_word").value = word
                    h(pfx, "wr_data").value = data
                    if not writes and cwl:
                        h(pfx, "commit").value = 1
                        break
                else:
                    h(pfx, "commit").value = 1
                    break
            await RisingEdge(dut.clk)  # the commit (and maybe a write) is taken here
            committed[pfx] += 1
            await Timer(1, "ns")
            h(pfx, "wr_valid").value = 0
            h(pfx, "commit").value = 0

    async def execs(rng):
        need = spec.get("preload", 0)
        na, nb = min(need, len(spec["a_banks"])), min(need, len(spec["b_banks"]))
        while committed["a"] < na or committed["b"] < nb:
            await RisingEdge(dut.clk)
        for k, aw, bw, ra, rb, *chain in spec["execs"]:
            while True:
                await RisingEdge(dut.clk)
                await Timer(1, "ns")  # ex_ready depends on registers only
                dut.ex_valid.value = 0
                if rng.random() >= spec["p_ex"]:
                    continue
                dut.ex_k.value, dut.ex_a_word.value, dut.ex_b_word.value = k, aw, bw
                dut.ex_rel_a.value, dut.ex_rel_b.value = ra, rb
                dut.ex_chain.value = chain[0] if chain else 0
                if len(chain) > 1:      # [chain, dw]: a depthwise EXEC
                    dut.ex_dw.value = chain[1]
                dut.ex_valid.value = 1
                if _u(dut.ex_ready):
                    ev["accepts"].append(edge_index(PERIOD_NS) + 1)
                    break
        await RisingEdge(dut.clk)
        await Timer(1, "ns")
        dut.ex_valid.value = 0

    async def sink(rng):
        mask = (1 << ACC) - 1
        for t, want in enumerate(spec["tiles"]):
            r = 0
            while r < R:
                await RisingEdge(dut.clk)
                await Timer(1, "ns")
                on = rng.random() < spec["p_c"]
                dut.c_ready.value = int(on)
                if not (on and _u(dut.c_valid)):
                    continue
                data = _u(dut.c_data)
                row = []
                for j in range(C):
                    v = (data >> (j * ACC)) & mask
                    row.append(v - (1 << ACC) if v >> (ACC - 1) else v)
                assert row == want[r], f"tile {t} row {r}: got {row} want {want[r]}"
                assert _u(dut.c_last) == int(r == R - 1), f"tile {t} row {r}: c_last"
                ev["c"].append(edge_index(PERIOD_NS) + 1)
                r += 1
        await RisingEdge(dut.clk)
        dut.c_ready.value = 0

    async def monitor():
        while not done["flag"]:
            await RisingEdge(dut.clk)
            await ReadOnly()
            busy, fire, stall = _u(dut.busy), _u(dut.core_fire), _u(dut.stall)
            assert stall == (busy & (1 - fire)), "stall != busy & ~core_fire"
            assert busy or not fire, "a beat entered the core while not busy"
            ev["busy"] += busy
            ev["stall"] += stall
            if fire:
                ev["fires"].append(edge_index(PERIOD_NS) + 1)

    cocotb.start_soon(monitor())
    tasks = [cocotb.start_soon(producer("a", spec["a_banks"], random.Random(seed + 1))),
             cocotb.start_soon(producer("b", spec["b_banks"], random.Random(seed + 2))),
             cocotb.start_soon(execs(random.Random(seed + 3))),
             cocotb.start_soon(sink(random.Random(seed + 4)))]
    for t in tasks:
        await t
    dut.c_ready.value = 1
    for _ in range(R + 8):
        await RisingEdge(dut.clk)
        await ReadOnly()
        assert not _u(dut.c_valid), "an extra C beat"
    done["flag"] = True
    assert not _u(dut.busy), "busy after the last tile"
    assert not _u(dut.err), "core err"
    assert _u(dut.a_wr_ready) and _u(dut.b_wr_ready), "a bank was not released"
    assert _u(dut.ex_ready)
    ks = [e[0] for e in spec["execs"]]
    assert len(ev["fires"]) == sum(ks), (len(ev["fires"]), sum(ks))
    out = {"first_accept": ev["accepts"][0], "accepts": ev["accepts"],
           "first_fire": ev["fires"][0], "last_fire": ev["fires"][-1],
           "last_c": ev["c"][-1], "fires": len(ev["fires"]), "busy_cycles": ev["busy"],
           "stall_cycles": ev["stall"]}
    Path(os.environ["TB_MMU_OUT"]).write_text(json.dumps(out))
