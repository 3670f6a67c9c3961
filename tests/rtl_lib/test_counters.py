"""The top's done condition in the emitted top (``rtl_lib.counters``): ``running`` ends on an
AND of flops, one per group of the idle condition (``idle_<group>_q``), each set from its own
part of the die, not on one flop behind an AND of the whole die (the store queue's
``fifo_empty`` -> a 3.22 ns route -> that AND -> ``idle_q`` was the placed 8x8's fourth path on
seed 1 at fc1165b). That ``done`` comes at the right edge is every whole-top simulation's."""

from __future__ import annotations

from .sv_cone import definitions, leaves, next_value

GROUPS = ("fetch", "queues", "route", "matmul", "store", "vector", "write")


def test_done_reads_one_registered_flop_per_idle_group(top_sv):
    defs = definitions(top_sv)
    src = leaves(defs, next_value(top_sv, "running"))
    assert {f"idle_{g}_q" for g in GROUPS} <= src, sorted(src)
    raw = sorted(n for n in src if n.startswith(("store_head", "exec_head", "_matmul", "_dma")))
    assert not raw, raw
    # a group holds its own terms only: the queues' flags, not an engine's busy
    queues = leaves(defs, next_value(top_sv, "idle_queues_q"))
    assert "store_head_fifo_empty" in queues, sorted(queues)
    assert not any("busy" in n for n in queues), sorted(queues)
