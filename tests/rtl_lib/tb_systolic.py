"""cocotb testbench for the systolic core (``rtl_lib.systolic``): random matmuls, timing.

Driven from Python by :func:`run_systolic` (tests and ``bench/systolic.py`` use it). The spec
(JSON, path in ``TB_SYSTOLIC_SPEC``) holds the array shape and a list of runs; each run is a
sequence of tiles (one K per tile) with an operand mode and stream back-pressure
probabilities. For each run the bench sends all tiles, collects ``rows`` C beats per tile,
checks them bit-exactly against numpy, and records the edges every beat moved on. The results
(JSON, path in ``TB_SYSTOLIC_OUT``) give per run: ``cycles`` (first input beat to last C beat,
inclusive), ``last_in`` (edge of each tile's last input beat), ``first_out`` (edge of each
tile's first C beat).

A run with ``"reset_after": n`` is preceded by n cycles of junk beats (output stalled) and a
one-cycle reset with the inputs still valid; it must then behave exactly like a fresh core.

Operand modes: ``random`` (uniform over the signed range), ``min`` (all -2^(w-1)), ``max``
(all 2^(w-1)-1), ``minmax`` (A all min, B all max: the most negative sums).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly, RisingEdge

from pycde_accel.sim import tb
from pycde_accel.sim.stream import RandomGate, StreamDriver, StreamSink

PERIOD_NS = 10


def make_operands(mode: str, rng: np.random.Generator, rows: int, cols: int, k: int,
                  dw: int) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = -(1 << (dw - 1)), (1 << (dw - 1)) - 1
    if mode == "random":
        return (rng.integers(lo, hi + 1, size=(rows, k), dtype=np.int64),
                rng.integers(lo, hi + 1, size=(k, cols), dtype=np.int64))
    vals = {"min": (lo, lo), "max": (hi, hi), "minmax": (lo, hi)}
    if mode not in vals:
        raise ValueError(f"unknown operand mode {mode!r}")
    va, vb = vals[mode]
    return np.full((rows, k), va, dtype=np.int64), np.full((k, cols), vb, dtype=np.int64)


def pack(values, width: int) -> int:
    mask = (1 << width) - 1
    out = 0
    for i, v in enumerate(values):
        out |= (int(v) & mask) << (i * width)
    return out


def unpack_signed(word: int, n: int, width: int) -> list[int]:
    mask = (1 << width) - 1
    out = []
    for i in range(n):
        v = (word >> (i * width)) & mask
        out.append(v - (1 << width) if v >> (width - 1) else v)
    return out


async def _garbage_then_reset(dut, cycles: int, rows: int, cols: int, dw: int) -> None:
    """Feed ``cycles`` of beats (a last every 3rd) with the output stalled, then reset for one
    cycle with the inputs still valid: the next run must see a clean core."""
    rng = np.random.default_rng(cycles)
    dut.c_ready.value = 0
    for n in range(cycles):
        dut.a_data.value = pack(rng.integers(-128, 128, rows), dw)
        dut.b_data.value = pack(rng.integers(-128, 128, cols), dw)
        dut.a_last.value = dut.b_last.value = int(n % 3 == 2)
        dut.a_valid.value = dut.b_valid.value = 1
        await RisingEdge(dut.clk)
    dut.rst.value = 1
    await ReadOnly()
    assert int(dut.a_ready.value) == 0 and int(dut.b_ready.value) == 0, "ready during reset"
    await RisingEdge(dut.clk)
    dut.rst.value = 0
    dut.a_valid.value = dut.b_valid.value = 0
    await RisingEdge(dut.clk)


@cocotb.test()
async def systolic_runs(dut):
    spec = json.loads(Path(os.environ["TB_SYSTOLIC_SPEC"]).read_text())
    rows, cols, dw, aw = spec["rows"], spec["cols"], spec["data_width"], spec["acc_width"]
    await tb.start(dut, idle=("a_valid", "b_valid", "c_ready"))

    results = []
    for run in spec["runs"]:
        if run.get("reset_after"):
            await _garbage_then_reset(dut, run["reset_after"], rows, cols, dw)
        rng = np.random.default_rng(run.get("seed", 0))
        ks = run["ks"]
        bp = run.get("bp", {})
        seed = run.get("seed", 0)
        tiles = [make_operands(run.get("mode", "random"), rng, rows, cols, k, dw) for k in ks]
        a_beats, b_beats = [], []
        for a, b in tiles:
            k = a.shape[1]
            for kk in range(k):
                last = int(kk == k - 1)
                a_beats.append({"data": pack(a[:, kk], dw), "last": last})
                b_beats.append({"data": pack(b[kk, :], dw), "last": last})
        da = StreamDriver(dut.clk, {"data": dut.a_data, "last": dut.a_last}, dut.a_valid,
                          dut.a_ready, PERIOD_NS, RandomGate(bp.get("a", 1.0), seed * 3 + 1))
        db = StreamDriver(dut.clk, {"data": dut.b_data, "last": dut.b_last}, dut.b_valid,
                          dut.b_ready, PERIOD_NS, RandomGate(bp.get("b", 1.0), seed * 3 + 2))
        sink = StreamSink(dut.clk, {"data": dut.c_data, "last": dut.c_last}, dut.c_valid,
                          dut.c_ready, PERIOD_NS, RandomGate(bp.get("c", 1.0), seed * 3 + 3))
        send_a = cocotb.start_soon(da.send(a_beats))
        send_b = cocotb.start_soon(db.send(b_beats))
        got = await sink.receive(rows * len(ks))
        await send_a
        await send_b
        # Nothing is left over: no extra beat appears once the run is done.
        dut.c_ready.value = 1
        for _ in range(rows + cols + 8):
            await RisingEdge(dut.clk)
            assert int(dut.c_valid.value) == 0, f"run {run['name']}: an extra C beat appeared"
        dut.c_ready.value = 0
        assert int(dut.err.value) == 0, "err: a_last and b_last disagreed"

        # joined streams: each A beat moved with its B beat
        assert [b.edge for b in da.sent] == [b.edge for b in db.sent], "A/B beats not joined"
        assert [b.fields for b in da.sent] == a_beats and [b.fields for b in db.sent] == b_beats
        for t, (a, b) in enumerate(tiles):
            want = a @ b
            for r in range(rows):
                beat = got[t * rows + r]
                row = unpack_signed(beat.fields["data"], cols, aw)
                assert row == [int(x) for x in want[r]], (
                    f"run {run['name']} tile {t} (K={ks[t]}) row {r}: got {row}, "
                    f"want {[int(x) for x in want[r]]}")
                assert beat.fields["last"] == int(r == rows - 1), \
                    f"run {run['name']} tile {t} row {r}: c_last={beat.fields['last']}"
        last_in, ends = [], 0
        for k in ks:
            ends += k
            last_in.append(da.sent[ends - 1].edge)
        results.append({
            "name": run["name"], "ks": ks,
            "cycles": got[-1].edge - da.sent[0].edge + 1,
            "first_in": da.sent[0].edge,
            "last_in": last_in,
            "first_out": [got[t * rows].edge for t in range(len(ks))],
            "last_out": got[-1].edge,
        })
        await RisingEdge(dut.clk)
    Path(os.environ["TB_SYSTOLIC_OUT"]).write_text(json.dumps(results, indent=1))
