"""The accelerator top's write arbiter: two engines' DMA write commands and data -> the one
write DMA (built inside the top's generator; ``accel`` composes it).

``WriteArbiter(first, second)`` then ``.build(clk, rst, a, b, wr, wr_cmd_ready, wr_in_ready)``
----------------------------------------------------------------------------------------------
``first``/``second``: the names of the two writers (``st``, ``vec``; the wires
``{name}_wc_ready``/``{name}_wd_ready`` of :meth:`WriteArbiter.ports` go to their instances
before they exist). ``a``/``b``: the two instances, each with ``axi_dma.write_ports`` (``wc_*``
write commands, ``wd_*`` data); ``wr``: the wires of the write DMA's ``cmd_*`` and
``in_data``/``in_valid`` ports, ``wr_cmd_ready``/``wr_in_ready`` its readies.

* Commands: fixed priority, ``first`` before ``second``, one per cycle (combinational on
  the two ``wc_valid`` and the DMA's ready). Each command taken pushes its owner and its
  beats per row and rows into the owner FIFO (``own``, 4 entries; full holds commands back).
* Data: the owner FIFO's head (through a register slice, ``own_q``, so the head the data
  select and the beat counters look at is flops) says whose ``wd`` beats go to the DMA,
  ``beats x rows`` of them
  (counted apart, registers ``write_beat_in_row`` and ``write_row`` from 1, so no multiplier
  sits on the command path), in command order. The last-beat and last-row decisions are
  flops (``write_beat_last_next``, ``write_row_last_next``, registered from the counters'
  compares with bpr - 1 and rows - 1, which the head carries with its "one beat" / "one row"
  bits, computed before ``own_q``), so no compare sits between a counter and the slice's
  enables. A writer offers its data only after its
  command was taken (both engines do), so the head is always the next data's owner.
* Register slices (``common.register_slice``, latency 1, full rate): the picked command goes
  to the DMA through ``arb_cmd_q`` and the data beats through ``arb_data_q``, so neither the
  engines' logic nor the DMA's burst splitter reaches the other in one cycle. A command is
  taken from its engine when its slice can take it and reaches the DMA one edge later.
* Each writer's ``wd`` beats enter through a skid buffer of their own (``{name}_wd_skid``,
  ``rtl_lib.skid_buffer``, 2 entries, latency 1, full rate) before the owner's select: the
  ``wd_ready`` an engine sees is that buffer's flop, so the owner FIFO's read and the data
  slice reach neither engine's output logic in one cycle. A data beat taken from its engine
  on edge e reaches the DMA's ``in`` after edge e + 1 (2 edges: the skid buffer and
  ``arb_data_q``), one beat per cycle per writer when the DMA takes one per cycle; a writer
  whose beats are not the owner FIFO's head has at most 2 of them taken ahead.
* ``own`` (the FIFO), ``own_empty`` (it and its slice hold no command), ``idle`` (no
  command or data still owed to the DMA: the owner FIFO, its slice, both slices and both skid
  buffers empty, for the top's idle) and ``wfire`` (a data beat went to the DMA).
"""

from __future__ import annotations

from pycde.constructs import Mux, Wire
from pycde.signals import BitsSignal
from pycde.types import Bits

from ..queue import Queue
from .bits import inc
from .common import NamedReg, register_slice
from .skid_buffer import make_skid_buffer
from .stream import pack, unpack

#: write commands whose data is still to come
OWNER_FIFO_DEPTH = 4


class WriteArbiter:
    """The write arbiter (see the module docstring)."""

    def __init__(self, first: str, second: str):
        self._ready = {n: (Wire(Bits(1), f"{n}_wc_ready"), Wire(Bits(1), f"{n}_wd_ready"))
                       for n in (first, second)}
        self._names = (first, second)

    def ports(self, name: str) -> dict:
        """The ready inputs of writer ``name``'s instance."""
        wc, wd = self._ready[name]
        return {"wc_ready": wc, "wd_ready": wd}

    def build(self, clk, rst, a, b, wr, wr_cmd_ready, wr_in_ready):
        (a_wc_ready, a_wd_ready), (b_wc_ready, b_wd_ready) = (self._ready[n] for n in self._names)
        # the owner FIFO's head is a register (``Queue(head=True)``, same cycles), so the
        # compares below start at flops, not at its LUT-RAM read: owner_rd -> a 2.55 ns route
        # -> the read -> the rows - 1 / bpr - 1 carry chains -> own_q_d was a placed 8x8 path
        # on seed 1 at 2cef53c (7.73 ns; fpga.sta)
        own = Queue(Bits(33), OWNER_FIFO_DEPTH, clk, rst, "owner", head=True)
        a_wants = a.wc_valid
        pick_b = ~a_wants
        any_wc = a_wants | b.wc_valid
        # the picked command goes to the DMA through a register slice (cmd_q)
        fields = ("addr", "beats", "rows", "stride")       # addr in the top bits
        picked = {f: Mux(pick_b, getattr(a, f"wc_{f}"), getattr(b, f"wc_{f}")) for f in fields}
        cmd = pack({f: picked[f] for f in reversed(fields)})
        cmd_ready = Wire(Bits(1), "arb_cmd_slice_ready")
        c_valid, c_data, c_in_ready = register_slice(clk, rst, any_wc & ~own.full, cmd,
                                                     cmd_ready, "arb_cmd_q")
        cmd_ready.assign(wr_cmd_ready)
        wr["cmd_valid"].assign(c_valid)
        for f, sig in unpack(c_data, {f: picked[f].type.width for f in reversed(fields)}).items():
            wr[f"cmd_{f}"].assign(sig)
        wc_fire = any_wc & ~own.full & c_in_ready
        a_wc_ready.assign(~own.full & c_in_ready)
        b_wc_ready.assign(~own.full & c_in_ready & ~a_wants)
        own.push(BitsSignal.concat([Mux(pick_b, a.wc_rows, b.wc_rows),
                                    Mux(pick_b, a.wc_beats, b.wc_beats), pick_b]), wc_fire)
        # each writer's data beats come in through a skid buffer (rtl_lib.skid_buffer): the
        # ready the engine sees (its wd_ready) is the buffer's flop, so the owner FIFO's read
        # (o_b, o_valid) and the data slice's ready end at the buffers and do not run on into
        # the engines' output logic
        Skid = make_skid_buffer(a.wd_data.type.width)
        skid_ready = {n: Wire(Bits(1), f"{n}_wd_skid_out_ready") for n in self._names}
        a_in, b_in = (Skid(clk=clk, rst=rst, in_data=e.wd_data, in_valid=e.wd_valid,
                           out_ready=skid_ready[n], instance_name=f"{n}_wd_skid")
                      for n, e in zip(self._names, (a, b)))
        a_wd_ready.assign(a_in.in_ready)
        b_wd_ready.assign(b_in.in_ready)
        # the owner FIFO's head reaches the data select through a register slice
        # (``own_q``): its LUT-RAM read data and the beat/row compares on it no longer run
        # into the FIFO's own read address and count in one cycle (the placed critical path
        # fifo_rd_addr -> fifo_mem -> write_row CE -> pop -> fifo_count)
        own_taken = Wire(Bits(1), "own_q_taken")
        # with the head's "one beat per row" / "one row" bits and bpr - 1 / rows - 1 (the
        # last-beat compares' operands) computed before the slice
        oe = own.output
        pre = BitsSignal.concat([oe[17:33] == Bits(16)(1), oe[1:17] == Bits(16)(1),
                                 (oe[17:33].as_uint(16) - 1).as_bits(16),
                                 (oe[1:17].as_uint(16) - 1).as_bits(16), oe])
        o_valid, oh, own_in_ready = register_slice(clk, rst, ~own.empty, pre, own_taken, "own_q")
        own.pop(~own.empty & own_in_ready)
        o_b = oh[0]
        o_bpr_m1, o_rows_m1, o_bpr_one, o_rows_one = oh[33:49], oh[49:65], oh[65], oh[66]
        wbeat = NamedReg(16, clk, rst, 1, name="write_beat_in_row")  # counts from 1
        wrow = NamedReg(16, clk, rst, 1, name="write_row")            # counts from 1
        # the owner's data beats go to the DMA through a register slice (data_q)
        d_ready = Wire(Bits(1), "arb_data_slice_ready")
        d_valid, d_data, d_in_ready = register_slice(
            clk, rst, o_valid & Mux(o_b, a_in.out_valid, b_in.out_valid),
            Mux(o_b, a_in.out_data, b_in.out_data), d_ready, "arb_data_q")
        d_ready.assign(wr_in_ready)
        wr["in_data"].assign(d_data)
        wr["in_valid"].assign(d_valid)
        wfire = o_valid & Mux(o_b, a_in.out_valid, b_in.out_valid) & d_in_ready
        # the last-beat (last-row) flags from flops, not from 16-bit compares of the counters
        # (write_beat_in_row -> the compares -> own_q's CE was the placed 8x8's critical path
        # on seed 1 at 552e900): on a row's (command's) first beat (row) the head's
        # precomputed "one beat (row)" bit, else the counter's compare with bpr - 1
        # (rows - 1), registered when the counter moved (as the read router's)
        b_first = NamedReg(1, clk, rst, 1, name="write_beat_first")
        r_first = NamedReg(1, clk, rst, 1, name="write_row_first")
        b_lastn = NamedReg(1, clk, rst, 0, name="write_beat_last_next")
        r_lastn = NamedReg(1, clk, rst, 0, name="write_row_last_next")
        wb_last = Mux(b_first.q, b_lastn.q, o_bpr_one)
        wr_last = Mux(r_first.q, r_lastn.q, o_rows_one)
        # the command's last beat (wb_last & wr_last) from two flops of its own: on the head's
        # first beat (``write_head_fresh``) the head's "one beat a row and one row" bits,
        # else ``write_last``, set one cycle ahead; the head's pop is then one LUT of flops
        # (own_q_d -> the flags' muxes -> own_q_v -> own_q_skid_v was among fpga.paths'
        # longest estimates at 19531d4, the read router's twin placed on seed 1 at bd973bd;
        # setting write_last from the entering head instead ran the owner FIFO's LUT-RAM read
        # through the head's compares into it, e2d7e61's third longest estimate). After a beat
        # that ended a row (not the last: that pops) the next row's first beat is last if one
        # beat a row and that row is the last (r_lastn's next value); after a beat within a
        # row, if the next is the row's last (b_lastn's next value) in the last row
        fresh = NamedReg(1, clk, rst, 1, name="write_head_fresh")
        w_last_q = NamedReg(1, clk, rst, 0, name="write_last")
        w_last = Mux(fresh.q, w_last_q.q, o_bpr_one & o_rows_one)
        fresh.next(Mux(wfire, fresh.q, w_last))
        w_after = Mux(wb_last, (wbeat.q == o_bpr_m1) & wr_last,
                      o_bpr_one & (wrow.q == o_rows_m1))
        w_last_q.next(Mux(wfire, w_last_q.q, w_after))
        r_move = wfire & wb_last
        wbeat.next(Mux(wfire, wbeat.q, Mux(wb_last, inc(wbeat.q, 16), Bits(16)(1))))
        wrow.next(Mux(r_move, wrow.q, Mux(wr_last, inc(wrow.q, 16), Bits(16)(1))))
        b_first.next(Mux(wfire, b_first.q, wb_last))
        b_lastn.next(Mux(wfire, b_lastn.q, wbeat.q == o_bpr_m1))
        r_first.next(Mux(r_move, r_first.q, wr_last))
        r_lastn.next(Mux(r_move, r_lastn.q, wrow.q == o_rows_m1))
        own_taken.assign(wfire & w_last)
        skid_ready[self._names[0]].assign(o_valid & ~o_b & d_in_ready)
        skid_ready[self._names[1]].assign(o_valid & o_b & d_in_ready)
        self.own = own
        #: no write command's data still owed: the owner FIFO and its slice are empty
        self.own_empty = own.empty & ~o_valid & own_in_ready
        self.wfire = d_valid & wr_in_ready
        self.idle = (self.own_empty & ~c_valid & c_in_ready & ~d_valid & d_in_ready &
                     ~a_in.out_valid & ~b_in.out_valid)
