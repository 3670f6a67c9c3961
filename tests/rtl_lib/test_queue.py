"""``pycde_accel.queue.Queue`` in Verilator, on the skid buffer's testbench: words in order
under random back-pressure, full rate at latency 1, ``empty``/``full``/the head unchanged by the
inputs within a cycle (flops and a RAM read at a registered pointer), and exactly ``depth``
words held when nothing is taken, for power-of-two depths and others (the storage is rounded up
to a power of two; the capacity is not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pycde import Clock, Reset
from pycde.types import Bits

from pycde_accel.queue import Queue
from pycde_accel.rtl_lib.stream import Stream, module
from pycde_accel.sim import run

TB = "tb_skid_buffer"
TB_DIRS = [Path(__file__).resolve().parent]


def _queue(width: int, depth: int):
    s = Stream(data=width)

    def build(p):
        q = Queue(Bits(width), depth, p.clk, p.rst, "q")
        q.push(p.in_data, p.in_valid)
        p.in_ready = ~q.full
        p.out_valid = ~q.empty
        p.out_data = q.pop(p.out_ready & ~q.empty)

    return module(f"queue_test_w{width}_d{depth}", {"clk": Clock(), "rst": Reset(),
                                                    **s.sink("in"), **s.source("out")}, build)


def _run(sim, tmp_path, testcase, **spec):
    run(sim, TB, tmp_path, module_dirs=TB_DIRS, testcase=testcase,
        extra_env={"TB_SKID_SPEC": json.dumps(spec)})


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5])
def test_queue_stream_and_capacity(module_sim, tmp_path, depth):
    sim = module_sim(_queue(16, depth))
    _run(sim, tmp_path / "s", "stream", width=16, beats=300, seed=depth, p_in=0.8, p_out=0.4)
    _run(sim, tmp_path / "r", "registered", width=16, beats=0, seed=depth + 10, p_in=1.0,
         p_out=1.0, depth=depth)


def test_queue_full_rate(module_sim, tmp_path):
    _run(module_sim(_queue(8, 4)), tmp_path, "stream", width=8, beats=200, seed=3, p_in=1.0,
         p_out=1.0)


def test_queue_refuses():
    with pytest.raises(ValueError, match="depth must be >= 1"):
        Queue(Bits(8), 0, None, None, "q")
    with pytest.raises(TypeError, match="Bits"):
        Queue(int, 2, None, None, "q")
