"""The accelerator top's read-data router: DMA read beats -> the destination the route FIFO's
head names (built inside the top's generator; ``accel`` composes it).

``ReadRouter(clk, rst, route, dma, out_ready, cmdq, CmdPack, ParamSplit, dsts, data_width, lanes)``
------------------------------------------------------------------------------------------------------
``route``: the load engine's route FIFO (``load_engine``, entry layout there); ``dma``: the DMA
instance (its ``rd_out_*`` stream: ``data``, ``last``, ``row_last``, ``valid``); ``out_ready``:
the wire of its ``rd_out_ready``; ``cmdq``: the command FIFO; ``CmdPack``/``ParamSplit``: the
width adapters W -> 256 and W -> 32 (``scratchpad.make_width_adapter``); ``dsts``: the
destination codes of A, B, P, X, S and CMD, in that order; ``lanes``: the most lanes an operand
scratchpad has (max(rows, cols)).

* The route FIFO's head goes through a register slice (``route_head``) with its destination
  decoded one-hot and ``beats - 2`` / ``rows - 2`` (the ZERO loads' last-beat compares),
  computed when the entry was pushed (:func:`route_decode`, stored in the FIFO): the
  router's logic starts from flops, and the slice's input is the LUT-RAM read. No
  bubble between entries: the next entry is in the slice when the last beat of one goes.
* Beats are taken in order (AXI reads are in order, ID 0). A ZERO entry makes its beats
  itself (all zero, one per cycle, ``beats x rows``) without the DMA. A beat moves when its
  output slice has room; otherwise the AXI R channel stalls. The DMA's beats come through
  a register slice (``route_rd``, latency 1, full rate); ``rd_valid``: a DMA beat is in it.
  Counters ``route_beat_in_row``, ``route_row``, ``route_beat`` (the beat in the command).
* The routed beats leave through a register slice (``route_out``, latency 1, full rate; a
  2-slot ``regs.fifo_slice``, so the readies reach its pointers, not its data enables) with
  their lane, word, X index, the entry's index, destination and COMMIT/last flags; the
  destinations take them from it when ready (``ready[dst]``, wires the top drives with the
  engines' readies), so those readies end at the slice's flops and the router's own moves
  start at its ``in_ready`` (a flop). ``out_valid``: a beat is in it. The offered beat's
  destination is one-hot flops of the slice's own (``route_out_hot``, zero while none is
  offered): each destination's valid (:meth:`to`) is a flop, and the take an AND-OR of
  those and the readies.
* Outputs per beat, from the output slice: ``out_valid``/``beat_data`` (qualify with
  :meth:`to`), ``lane`` (one-hot, ``lanes`` bits; LANES: the entry's index + row, one lane per
  row; else the entry's index; no bit set for a lane >= ``lanes``), ``word`` (LANES: the entry's
  word + beat in the row; else + beat in the command) and ``commit`` (the command's last beat,
  with COMMIT): the operand scratchpads' write port. ``lane`` and ``word`` are made, before the
  slice, from registers (``route_lane``, shifted one place per row, and ``route_word``) advanced
  with the counters, or from the route slice (the index decoded one-hot before it) on a
  command's first row (beat): no adder or compare between a flop and the slice. ``x_index()``
  (index + beat, added before the slice): the X buffer's; the S stream takes ``beat_data`` as
  is.
* ``load_done`` (out): the last beat of a LOAD's entry (any destination but CMD) left the
  output slice on this edge (the top counts LOADs in flight for FENCE).
* CMD: beats packed into 256-bit commands (``cmd_pack``) pushed into ``cmdq`` (its room is the
  fetcher's credits). P: beats split into 32-bit words (``param_split``) written as
  ``p_data``/``p_valid`` at ``param_index()`` = 4 * index + the word counted since the
  command's start (register ``param_word``), all three registered (``param_wr_*``: the
  write reaches the store engine one edge after the word left the splitter; ``p_pending``:
  a word is in those registers).
"""

from __future__ import annotations

from pycde.constructs import Mux, Wire
from pycde.signals import BitsSignal
from pycde.types import Bits

from .bits import inc, shl
from .common import NamedReg, fifo_slice, register_slice
from .keep_ff import toggles

#: data bits of the output slice per copy of its read pointer (``regs.fifo_slice``)
ROUTE_OUT_CHUNK = 64

#: the route entry's bits (:func:`route_decode`'s, above the load engine's entry) that say
#: a ZERO entry has one row and one beat a row: the head's, and the entering entry's
ROWS_ONE, BEATS_ONE = 108, 109

#: the ready wires of the six destinations, in ``dsts`` order
READY_NAMES = ("a_wr_ready", "b_wr_ready", "param_in_ready", "x_wr_ready", "s_ready",
               "cmd_in_ready")


def route_decode_width(dsts, lanes: int) -> int:
    """Bits :func:`route_decode` adds to a route entry."""
    return lanes + 2 + 16 + 16 + len(dsts)


def route_decode(entry, dsts, lanes: int):
    """What the router wants decoded from a route entry (``load_engine`` layout), stored above
    it in the route FIFO (the load engine pushes ``concat(route_decode(e), e)``): the
    destination one-hot, a ZERO entry's beats - 2 and rows - 2 (its last-beat compares: the
    counter's next value c + 1 == n - 1 is c == n - 2, no incrementer before the compare;
    route_row -> + 1 -> the 16-bit compare -> route_row_last_next ran 9 levels at ff17f30),
    whether each is one (its first beat's or first row's compare) and the index one-hot (the
    first row's lane). Decoding them after the FIFO's LUT-RAM read (16-bit compares into the
    route slice) was the placed 8x8's critical path on seed 2 at ff17f30 (9.01 ns, 7.29
    routing)."""
    return BitsSignal.concat([entry[6:22] == Bits(16)(i) for i in reversed(range(lanes))]
                             + [entry[38:54] == Bits(16)(1), entry[54:70] == Bits(16)(1),
                                (entry[54:70].as_uint(16) - 2).as_bits(16),
                                (entry[38:54].as_uint(16) - 2).as_bits(16)]
                             + [entry[0:3] == Bits(3)(d) for d in reversed(dsts)])


class ReadRouter:
    """The read-data router (see the module docstring)."""

    def __init__(self, clk, rst, route, dma, out_ready, cmdq, CmdPack, ParamSplit, dsts,
                 data_width: int, lanes: int):
        one, zero = Bits(1)(1), Bits(1)(0)
        DST_A, DST_B, DST_P, DST_X, DST_S, DST_CMD = dsts
        r_pop_w = Wire(Bits(1), "route_pop")
        # the route FIFO holds each entry with its decode (:func:`route_decode`, computed on
        # the way in), so the slice's input is the FIFO's read with no logic after it
        r_valid, re, route_ready, r_load, re_in = register_slice(
            clk, rst, ~route.empty, route.output, r_pop_w, "route_head", next_data=True)
        route.pop(~route.empty & route_ready)
        r_lanes, r_commit, r_zero = re[3], re[4], re[5]
        r_index, r_word = re[6:22], re[22:38]
        is_dst = {d: re[70 + i] for i, d in enumerate(dsts)}
        r_beats_m2, r_rows_m2 = re[76:92], re[92:108]
        r_rows_one, r_beats_one = re[ROWS_ONE], re[BEATS_ONE]
        r_index_hot = re[110:110 + lanes]
        bcnt = NamedReg(16, clk, rst, 0, name="route_beat_in_row")
        rcnt = NamedReg(16, clk, rst, 0, name="route_row")
        tcnt = NamedReg(16, clk, rst, 0, name="route_beat")
        # a ZERO entry's last-beat flags from flops, not from 16-bit compares of the counters
        # (they ran into the pop, the route slice's load and its 100-odd CEs): on a row's
        # (command's) first beat (row) the entry's precomputed "one beat (row)" bit, else the
        # compare of the counter's next value, registered when the counter moved
        b_first = NamedReg(1, clk, rst, 1, name="route_beat_first")
        r_first = NamedReg(1, clk, rst, 1, name="route_row_first")
        b_lastn = NamedReg(1, clk, rst, 0, name="route_beat_last_next")
        r_lastn = NamedReg(1, clk, rst, 0, name="route_row_last_next")
        z_row_last = Mux(b_first.q, b_lastn.q, r_beats_one)
        # a ZERO entry's "this beat is the command's last" as a flop of its own
        # (``route_zero_last``, its next value below the counters): the head's pop is then a
        # LUT of flops (route_head_d -> the row/beat last LUTs ->
        # the pop -> route_head_skid_v was the placed 8x8's critical path on seed 1 at
        # bd973bd, 8.11 ns). It equals z_row_last & (r_first ? rows_one : r_lastn); an entry
        # entering the head has both first flags set (a pop is a row's last beat too)
        z_last_q = NamedReg(1, clk, rst, 0, name="route_zero_last")
        z_last = z_last_q.q
        # the DMA's read beats through a register slice of the router's own (``route_rd``):
        # the destination readies -> the router's ready end here, beside the router, not at
        # the DMA's R slice across the die (a spad's wr_ready_q -> the destination ready mux
        # -> the DMA's r_q_skid_v was the placed 8x8's critical path on seed 2 at 552e900,
        # 8 of its 10.19 ns routing). One cycle more per beat's latency, not its rate
        # (perfmodel.timing.ROUTE_RD_SLICE)
        rd_take = Wire(Bits(1), "route_rd_take")
        d_valid, d_beat, d_ready = register_slice(
            clk, rst, dma.rd_out_valid,
            BitsSignal.concat([dma.rd_out_last, dma.rd_out_row_last, dma.rd_out_data]),
            rd_take, "route_rd")
        out_ready.assign(d_ready)
        d_data = d_beat[0:data_width]
        d_row_last, d_last = d_beat[data_width], d_beat[data_width + 1]
        self.rd_valid = d_valid
        beat_valid = r_valid & Mux(r_zero, d_valid, one)
        beat_data = Mux(r_zero, d_data, Bits(data_width)(0))
        row_last = Mux(r_zero, d_row_last, z_row_last)
        cmd_last = Mux(r_zero, d_last, z_last)

        # the beats leave through a register slice of the router's own (``route_out``), so
        # the destinations' readies end at its flops: the router's move (the counters, lane,
        # word, the route and route_rd pops) starts from the slice's in_ready, a flop, not at
        # an OR of the engines' readies across the die (a spad's wr_ready_out_q -> the
        # destination ready OR -> route_lane's enable was the placed 8x8's critical path on
        # seed 1 at 0a97ea9, the same family on four earlier placements). One cycle more per
        # beat's latency, not its rate (perfmodel.timing.ROUTE_OUT_SLICE)
        out_take = Wire(Bits(1), "route_out_take")
        out_room = Wire(Bits(1), "route_out_room")
        beat_fire = beat_valid & out_room
        rd_take.assign(r_valid & ~r_zero & out_room)
        r_pop_w.assign(beat_fire & cmd_last)
        b_up, r_up = inc(bcnt.q, 16), inc(rcnt.q, 16)
        bcnt.next(Mux(beat_fire, bcnt.q, Mux(row_last, b_up, Bits(16)(0))))
        rcnt.next(Mux(beat_fire, rcnt.q,
                      Mux(cmd_last, Mux(row_last, rcnt.q, r_up), Bits(16)(0))))
        r_move = beat_fire & (row_last | cmd_last)
        tcnt.next(Mux(beat_fire, tcnt.q, Mux(cmd_last, inc(tcnt.q, 16), Bits(16)(0))))
        b_first.next(Mux(beat_fire, b_first.q, row_last))
        b_lastn.next(Mux(beat_fire, b_lastn.q, bcnt.q == r_beats_m2))
        r_first.next(Mux(r_move, r_first.q, cmd_last))
        r_lastn.next(Mux(r_move, r_lastn.q, rcnt.q == r_rows_m2))
        # route_zero_last's next value: an entry entering the head: its "one beat and one
        # row"; else after a beat of a ZERO head (not its last: that pops it) that ended a
        # row: the next row's first beat, last if the entry has one beat a row and that row
        # is the last (r_first goes low, r_lastn takes rcnt == rows - 2); after a beat within
        # a row: the row's next beat, last if it is the row's (b_lastn's next value) in the
        # last row (unchanged); else unchanged
        r_part = Mux(r_first.q, r_lastn.q, r_rows_one)
        after_beat = Mux(z_row_last, (bcnt.q == r_beats_m2) & r_part,
                         r_beats_one & (rcnt.q == r_rows_m2))
        z_last_q.next(Mux(r_load, Mux(beat_fire, z_last, after_beat),
                          re_in[ROWS_ONE] & re_in[BEATS_ONE]))
        # lane (index + row, one-hot) and word (word + beat) as registers advanced with their
        # counters, so the scratchpads' lane enables and word addresses start at a mux of
        # flops, not at a 16-bit adder and compare (route_row -> lane adder -> lane compare ->
        # spad lane wen was the placed 8x8's critical path on seed 3 at 541b140; the lane mux
        # -> compare -> wen on all seeds at de26887). On a command's first row (first beat)
        # they are the entry's index (word) itself, from the route slice; the next row's lane
        # is the bit one place up (none past the last lane).
        lane_q = NamedReg(lanes, clk, rst, 0, name="route_lane")
        lane = Mux(~r_lanes | r_first.q, lane_q.q, r_index_hot)
        up = BitsSignal.concat([lane[0:lanes - 1], zero]) if lanes > 1 else zero
        lane_q.next(Mux(r_move & ~cmd_last, lane_q.q, up))
        t_first = NamedReg(1, clk, rst, 1, name="route_beat_first_in_cmd")
        t_first.next(Mux(beat_fire, t_first.q, cmd_last))
        w_first = Mux(r_lanes, t_first.q, b_first.q)
        w_last = Mux(r_lanes, cmd_last, row_last)
        word_q = NamedReg(16, clk, rst, 0, name="route_word")
        word = Mux(w_first, word_q.q, r_word)
        word_q.next(Mux(beat_fire & ~w_last, word_q.q, inc(word, 16)))
        x_index = (r_index.as_uint(16) + tcnt.q.as_uint(16)).as_bits(16)

        # the output slice: per beat its data, lane, word, X index, the entry's index (the
        # parameter words' base), the one-hot destination, COMMIT and the command's last
        payload = BitsSignal.concat([cmd_last, r_commit, *[is_dst[d] for d in reversed(dsts)],
                                     r_index, x_index, word, lane, beat_data])
        # a 2-slot FIFO, not a main/skid pair: the destinations' readies (flops in the engines,
        # across the die) reach its pointers only, not the enables of its 100-odd data flops
        # (spad_b.wr_ready_out_q -> the ready OR -> route_out_d's CE was the placed 8x8's
        # critical path on seed 3 at f317b6c, 7.25 ns of its 8.72 routing)
        # (with a read pointer copy per ROUTE_OUT_CHUNK bits: route_out_rd -> the output
        # mux -> the parameter index adder -> the store's parameter memory address was the
        # placed 16x8's critical path at 48bed3a, 10.10 ns, 8.20 routing; each copy flips
        # beside itself, ``keep_ff.toggles``)
        # The offered beat's destination is one-hot flops of the slice's own
        # (``route_out_hot``): the destinations' valids are flops, and the take is an AND-OR
        # of those and the readies, not of the slot mux's destination bits under a pointer
        # copy (route_out_v -> the slot mux and the destination-ready AND-OR -> the pointer
        # copies was the placed 8x8's critical path on seeds 1 and 3 at 614cbf2, 8.13 and
        # 8.90 ns)
        dst_lo = data_width + lanes + 16 + 16 + 16
        o_valid, o, o_room, o_hot = fifo_slice(clk, rst, beat_valid, payload, out_take,
                                               "route_out", chunk=ROUTE_OUT_CHUNK,
                                               toggles=toggles, hot=(dst_lo, len(dsts)))
        out_room.assign(o_room)
        lo = 0

        def field(w):
            nonlocal lo
            f = o[lo:lo + w] if w > 1 else o[lo]
            lo += w
            return f

        o_data, o_lane, o_word, o_x_index, o_index = (field(data_width), field(lanes),
                                                      field(16), field(16), field(16))
        assert lo == dst_lo
        lo += len(dsts)
        #: the offered beat is for destination d (valid included): a flop each
        self.out_dst = o_dst = {d: o_hot[i] for i, d in enumerate(dsts)}
        o_commit, o_last = field(1), field(1)
        self.ready = ready = {d: Wire(Bits(1), n) for d, n in zip(dsts, READY_NAMES)}
        dst_ready = None
        for d in dsts:
            term = o_dst[d] & ready[d]
            dst_ready = term if dst_ready is None else dst_ready | term
        out_take.assign(dst_ready)
        #: a LOAD's route entry (not a fetch's) had its last beat delivered on this edge
        self.load_done = dst_ready & o_last & ~o_dst[DST_CMD]
        self.lane, self.word, self._x_index = o_lane, o_word, o_x_index
        # the operand scratchpads take a commit on an edge where it and their wr_ready are high
        # (the offered beat's COMMIT and last flags: qualify with ``out_dst``, which holds the
        # valid, as :meth:`spad_write` does)
        self.commit = o_last & o_commit
        self.out_valid, self.beat_data = o_valid, o_data

        # command FIFO input: W-bit beats packed into 256-bit commands
        pack = CmdPack(clk=clk, rst=rst, in_data=o_data, in_last=zero,
                       in_valid=o_dst[DST_CMD], out_ready=~cmdq.full,
                       instance_name="cmd_pack")
        ready[DST_CMD].assign(pack.in_ready)
        cmdq.push(pack.out_data, pack.out_valid & ~cmdq.full)

        # parameter words: W-bit beats split into 32-bit words
        psplit = ParamSplit(clk=clk, rst=rst, in_data=o_data, in_last=o_last,
                            in_valid=o_dst[DST_P], out_ready=one,
                            instance_name="param_split")
        ready[DST_P].assign(psplit.in_ready)
        pword = NamedReg(16, clk, rst, 0, name="param_word")
        p_valid, p_data = psplit.out_valid, psplit.out_data
        pword.next(Mux(p_valid, pword.q, Mux(psplit.out_last, inc(pword.q, 16), Bits(16)(0))))
        # the parameter write leaves the router from registers (``param_wr_*``): the index
        # adder ends here, beside the slice, and the store engine's parameter memories (across
        # the die) are written one edge later. ``p_pending``: a word is in them (the top's
        # drained and idle wait for it)
        p_index = (shl(o_index, 2, 16).as_uint(16) + pword.q.as_uint(16)).as_bits(16)
        pv_q = NamedReg(1, clk, rst, 0, name="param_wr_valid")
        pv_q.next(p_valid)
        pd_q = NamedReg(32, clk, None, None, name="param_wr_data")
        pd_q.next(p_data)
        pi_q = NamedReg(16, clk, None, None, name="param_wr_index")
        pi_q.next(p_index)
        self.p_valid, self.p_data, self._p_index = pv_q.q, pd_q.q, pi_q.q
        self.p_pending = pv_q.q
        self.r_valid = r_valid

    def to(self, dst: int):
        """The output slice's beat is valid for destination ``dst`` (a flop)."""
        return self.out_dst[dst]

    def spad_write(self, dst: int, prefix: str, lanes: int) -> dict:
        """The operand scratchpad write port ``{prefix}_wr_*`` and ``{prefix}_commit`` of the
        matmul unit for destination ``dst``, whose scratchpad has ``lanes`` lanes."""
        lane = self.lane[0:lanes] if lanes < self.lane.type.width else self.lane
        return {f"{prefix}_wr_valid": self.to(dst), f"{prefix}_wr_lane": lane,
                f"{prefix}_wr_word": self.word, f"{prefix}_wr_data": self.beat_data,
                f"{prefix}_commit": self.commit & self.out_dst[dst]}

    def param_index(self):
        """The parameter word's index: 4 * the entry's index + the word in the command
        (registered with ``p_valid`` and ``p_data``)."""
        return self._p_index

    def x_index(self):
        """The X buffer beat index: the entry's index + the beat in the command (computed
        before the output slice)."""
        return self._x_index
