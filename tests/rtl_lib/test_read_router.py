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


def test_the_output_take_reads_the_head_destination_flops(top_sv):
    """The output slice's take (its pointer copies flip on it) is an AND-OR of the one-hot
    destination flops (``route_out_hot``) and the readies, not of the slots' destination bits
    through a pointer copy's mux (route_out_v -> the slot mux and the destination-ready AND-OR
    -> the pointer copies was the placed 8x8's critical path on seeds 1 and 3 at 614cbf2); each
    copy's next value is its own output XOR the take."""
    import re

    from .sv_cone import definitions

    defs = definitions(top_sv)
    copies = re.findall(r"pycde_accel_keep_ff\s+route_out_rd_\d+\s*\(.*?\.d\s*\((.*?)\),\s*\.q\s*"
                        r"\((\w+)\)", top_sv, re.S)
    assert len(copies) >= 2, copies
    for d, q in copies:
        assert re.fullmatch(rf"{q}\s*\^\s*(\w+)", d.strip()), (d, q)
    take = leaves(defs, next(iter(copies))[0])
    assert "route_out_hot" in take, sorted(take)
    assert not {"route_out_slot0", "route_out_slot1"} & take, sorted(take)
    # the destinations' valids are the flops themselves
    assert re.search(r"\.a_wr_valid\s*\(route_out_hot\[0\]\)", top_sv)
