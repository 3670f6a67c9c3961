"""The write arbiter's pop of the owner FIFO's head in the emitted top
(``rtl_lib.write_arbiter``): a LUT of flops, with the command's last beat from one flop of its
own (``write_last``) or, on the head's first beat (``write_head_fresh``), the head's bits,
not from the beat and row flags through their muxes, as the read router's
(``test_read_router``). Which beats go where is the simulations' (every STORE and
DRAM-bound VEC writes through it)."""

from __future__ import annotations

from .sv_cone import leaves, next_value

FLAGS = {"write_beat_first", "write_row_first", "write_beat_last_next", "write_row_last_next",
         "write_beat_in_row", "write_row"}


def test_the_owner_head_pop_reads_one_last_flag(top_sv):
    pop = leaves(top_sv, next_value(top_sv, "own_q_skid_v"))
    assert {"write_last", "write_head_fresh"} <= pop, sorted(pop)
    assert not FLAGS & pop, sorted(FLAGS & pop)


def test_the_last_flag_follows_the_counters_not_the_owner_fifo(top_sv):
    src = leaves(top_sv, next_value(top_sv, "write_last"))
    assert {"write_beat_in_row", "write_row"} <= src, sorted(src)
    assert not {"owner_mem", "owner_rd", "own_q_skid_d"} & src, sorted(src)


def test_the_owner_slice_loads_from_the_owner_fifos_head_register(top_sv):
    """The owner FIFO's head is a register (``owner_head``), so the slice's entering data (the
    head and its rows - 1 / bpr - 1 compares) starts at flops, not at the LUT-RAM read
    (owner_rd -> the read -> the compares -> own_q_d was a placed 8x8 path on seed 1 at
    2cef53c)."""
    import re

    nxt = re.findall(r"\bown_q_d\s*<=\s*(.*?);", top_sv, re.S)
    assert nxt, "no load of own_q_d"
    src = set().union(*(leaves(top_sv, n) for n in nxt))
    assert "owner_head" in src, sorted(src)
    assert not {"owner_mem", "owner_rd", "owner_rd_next"} & src, sorted(src)
