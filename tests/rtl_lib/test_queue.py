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


def _queue(width: int, depth: int, head: bool = False, shadow: bool = False):
    """``shadow``: ``in_ready`` is a flop of the queue's own, set from ``full_if_idle`` /
    ``full_if_push`` picked by the push request, in place of ``~full``: any cycle where that
    pick differs from ``full_next`` loses or duplicates a word, or changes the capacity."""
    s = Stream(data=width)

    def build(p):
        from pycde.constructs import Mux

        from pycde_accel.regs import NamedReg

        q = Queue(Bits(width), depth, p.clk, p.rst, "q", head=head)
        q.push(p.in_data, p.in_valid)
        if shadow:
            f = NamedReg(1, p.clk, p.rst, 0, name="full_shadow")
            f.next(Mux(p.in_valid, q.full_if_idle, q.full_if_push))
            p.in_ready = ~f.q
        else:
            p.in_ready = ~q.full
        p.out_valid = ~q.empty
        p.out_data = q.pop(p.out_ready & ~q.empty)

    name = f"queue_test_w{width}_d{depth}" + ("_head" if head else "") + ("_sh" if shadow else "")
    return module(name, {"clk": Clock(), "rst": Reset(), **s.sink("in"), **s.source("out")},
                  build)


def _run(sim, tmp_path, testcase, **spec):
    run(sim, TB, tmp_path, module_dirs=TB_DIRS, testcase=testcase,
        extra_env={"TB_SKID_SPEC": json.dumps(spec)})


@pytest.mark.parametrize("head", [False, True], ids=["ram_read", "head_reg"])
@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5])
def test_queue_stream_and_capacity(module_sim, tmp_path, depth, head):
    """``head=True`` (the head in a register of its own) keeps every word, its order and its
    cycle: the same testbench, the same checks."""
    sim = module_sim(_queue(16, depth, head))
    _run(sim, tmp_path / "s", "stream", width=16, beats=300, seed=depth, p_in=0.8, p_out=0.4)
    _run(sim, tmp_path / "r", "registered", width=16, beats=0, seed=depth + 10, p_in=1.0,
         p_out=1.0, depth=depth)


@pytest.mark.parametrize("depth", [1, 2, 4, 5])
def test_queue_full_candidates(module_sim, tmp_path, depth):
    """``full_if_idle`` / ``full_if_push``, picked by the push request, are ``full_next``: a
    ready flop set from them carries every word in order and holds exactly ``depth``."""
    sim = module_sim(_queue(16, depth, shadow=True))
    _run(sim, tmp_path / "s", "stream", width=16, beats=300, seed=depth, p_in=0.8, p_out=0.4)
    _run(sim, tmp_path / "r", "registered", width=16, beats=0, seed=depth + 10, p_in=1.0,
         p_out=1.0, depth=depth)


@pytest.mark.parametrize("head", [False, True], ids=["ram_read", "head_reg"])
def test_queue_full_rate(module_sim, tmp_path, head):
    _run(module_sim(_queue(8, 4, head)), tmp_path, "stream", width=8, beats=200, seed=3,
         p_in=1.0, p_out=1.0)


def test_queue_head_output_is_its_register(tmp_path):
    """With ``head=True`` the output is the ``q_head`` register, and it loads the RAM read at
    ``q_rd_next`` (a flop) or the pushed word, picked by the ``q_few`` flop."""
    import re

    from pycde_accel.rtl_lib.emit import emit_module

    from sv_cone import definitions, leaves, next_value

    m = _queue(16, 8, head=True)
    emit_module(m, tmp_path / "sv")
    sv = (tmp_path / "sv" / f"{m.module_name}.sv").read_text()
    defs = definitions(sv)
    out = re.search(r"assign\s+out_data\s*=\s*(.*?);", sv, re.S).group(1)
    assert leaves(defs, out) == {"q_head"}, sorted(leaves(defs, out))
    nxt = leaves(defs, next_value(sv, "q_head"))
    assert "q_few" in nxt and "q_rd" not in nxt, sorted(nxt)


def test_queue_refuses():
    with pytest.raises(ValueError, match="depth must be >= 1"):
        Queue(Bits(8), 0, None, None, "q")
    with pytest.raises(TypeError, match="Bits"):
        Queue(int, 2, None, None, "q")
