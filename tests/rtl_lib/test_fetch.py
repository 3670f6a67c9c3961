"""The command fetcher's decisions in the emitted top (``rtl_lib.fetch``), structurally; the
whole-accelerator simulations check its behaviour (every command fetched once, in order)."""

from __future__ import annotations

from sv_cone import leaves, next_value


def test_room_does_not_wait_on_the_commands_left(top_sv):
    """``cmdq_room``'s next value is compares of the credits register picked by the fetch and
    the pop, with no adder of ``fetch_left``: a tail fetch takes the whole chunk's compare
    (``fetch_left`` -> two carry chains -> ``cmdq_room`` was the placed 8x8's critical path on
    seed 2 at 4ebabeb)."""
    src = leaves(top_sv, next_value(top_sv, "cmdq_room"))
    assert "cmdq_credits_used" in src, sorted(src)
    assert "fetch_left" not in src, sorted(src)
