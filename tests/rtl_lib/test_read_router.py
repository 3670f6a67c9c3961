"""The read router's pop of the route head in the emitted top (``rtl_lib.read_router``): a LUT
of flops, with a ZERO entry's "last beat" from one flop of its own (``route_zero_last``), not
from the beat and row flags through their muxes (route_head_d -> those LUTs -> the pop ->
route_head_skid_v was the placed 8x8's critical path on seed 1 at bd973bd). The behaviour is
the simulations' (``tests/test_sim.py``: ZERO loads pad every convolution)."""

from __future__ import annotations

from .sv_cone import leaves, next_value

FLAGS = {"route_beat_first", "route_row_first", "route_beat_last_next", "route_row_last_next",
         "route_beat_in_row", "route_row"}


def test_the_route_head_pop_reads_one_last_flag(top_sv):
    pop = leaves(top_sv, next_value(top_sv, "route_head_skid_v"))
    assert "route_zero_last" in pop, sorted(pop)
    assert not FLAGS & pop, sorted(FLAGS & pop)


def test_the_last_flag_follows_the_counters_and_the_entering_entry(top_sv):
    src = leaves(top_sv, next_value(top_sv, "route_zero_last"))
    assert {"route_beat_in_row", "route_row", "route_head_skid_d"} <= src, sorted(src)
