"""The dispatch decision's structure in the emitted top (``rtl_lib.dispatch``): it is an OR of
flops kept beside the head slice (``dispatch_head_go``: the head's one-hot class AND its
condition, registered together), not of the engine queues' ``full`` flags or the engines'
idle conditions, whose inputs sit in three places on the die (the placed 8x8's critical path
on seed 1 at af39b54), nor of the slice's valid or its data mux (with them it was four LUTs
deep: 2094307's seed 2), nor an AND-OR of class flops and condition flops (four LUTs deep:
7193335's seed 1)."""

from __future__ import annotations

import re

from .sv_cone import definitions, leaves, next_value

ENGINES = ("load", "exec", "store", "vec")


def test_the_decision_is_an_or_of_the_head_flops(top_sv):
    defs = definitions(top_sv)
    allowed = re.compile(r"dispatch_head_go|\d+'?[hbd]?\w*|h\w+")
    srcs = leaves(defs, defs["credit_return_q_next"])       # the decision, registered
    assert srcs == {"dispatch_head_go"}, sorted(srcs)
    # every engine queue's push: its own classes' go flops, and the queue's own flags
    for e in ENGINES:
        srcs = leaves(defs, next_value(top_sv, f"{e}_head_fifo_count"))
        assert "dispatch_head_go" in srcs, (e, sorted(srcs))
        bad = sorted(n for n in srcs if not allowed.fullmatch(n) and not n.startswith(f"{e}_head"))
        assert not bad, f"{e}: {bad}"


def test_the_head_flops_follow_the_class_the_queues_and_the_hazards(top_sv):
    """``dispatch_head_go`` is set from the head's class (``dispatch_head_hot``, the slots) and
    each class's condition: the engine queues' full flags, the store and vector engines' idle
    conditions (LOAD P / LOAD X), ``drained`` (FENCE)."""
    defs = definitions(top_sv)
    src = leaves(defs, next_value(top_sv, "dispatch_head_go"))
    assert {"dispatch_head_hot", "dispatch_head_slot0", "dispatch_head_slot1"} <= src, sorted(src)
    for e in ENGINES:
        assert any(n.startswith(f"{e}_head_fifo_") for n in src), (e, sorted(src))
    for busy in ("_store_busy", "_vector_busy", "_matmul_busy", "_dma_wr_busy"):
        assert busy in src, (busy, sorted(src))
