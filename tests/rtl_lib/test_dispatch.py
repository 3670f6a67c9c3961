"""The dispatch decision's structure in the emitted top (``rtl_lib.dispatch``): it starts at
flops kept beside the head slice (the head's one-hot class and one ``dispatch_ok_*`` flop per
class), not at the engine queues' ``full`` flags or the engines' idle conditions, whose inputs
sit in three places on the die (the placed 8x8's critical path on seed 1 at af39b54), nor at
the slice's valid or its data mux (with them it was four LUTs deep: 2094307's seed 2)."""

from __future__ import annotations

import re

from .sv_cone import definitions, leaves, next_value

ENGINES = ("load", "exec", "store", "vec")


def test_the_decision_starts_at_flops_beside_the_head(top_sv):
    defs = definitions(top_sv)
    allowed = re.compile(r"dispatch_head_hot|dispatch_ok_\w+|\d+'?[hbd]?\w*|h\w+")
    # every engine queue's push, and the decision itself (the credit register's next value)
    exprs = {e: defs[f"{e}_head_fifo_push"] for e in ENGINES}
    exprs["decision"] = defs["credit_return_q_next"]
    for what, expr in exprs.items():
        srcs = leaves(defs, expr)
        assert any(n.startswith("dispatch_ok_") for n in srcs), (what, sorted(srcs))
        assert "dispatch_head_hot" in srcs, (what, sorted(srcs))
        bad = sorted(n for n in srcs if not allowed.fullmatch(n))
        assert not bad, f"{what}: {bad}"


def test_the_class_flags_follow_the_queues_and_the_hazards(top_sv):
    """Each ``dispatch_ok`` flop is set from what its class waits for: the engine queue's full
    flag's next value, and for LOAD P / LOAD X the store / vector engine's idle conditions."""
    defs = definitions(top_sv)
    cones = {c: leaves(defs, next_value(top_sv, f"dispatch_ok_{c}"))
             for c in ("load", "load_p", "load_x", "exec", "store", "vec", "fence")}
    for e in ENGINES:
        assert any(l.startswith(f"{e}_head_fifo_") for l in cones[e]), (e, sorted(cones[e]))
    assert any("store" in l and "busy" in l for l in cones["load_p"]) or \
        any(l.startswith("store") for l in cones["load_p"]), sorted(cones["load_p"])
    assert any(l.startswith("vec") or l.startswith("vector") for l in cones["load_x"]), \
        sorted(cones["load_x"])
    assert not any(l.startswith("vec") for l in cones["load_p"] - cones["load"]), \
        sorted(cones["load_p"])
