"""The accelerator top's load engine: LOAD commands and the fetcher's reads -> DMA read
commands, and the route FIFO that tells the read router where the data goes (built inside the
top's generator; ``accel`` composes it).

``LoadEngine(clk, rst, loadq, fetcher, rd, rd_cmd_ready, addr_width, cmd_beats, depth, dst_cmd, decode)``
----------------------------------------------------------------------------------------------------------------------
``loadq``: dispatch's LOAD FIFO; ``fetcher``: ``fetch.Fetcher``; ``rd``: the wires of the read
DMA's command port (``cmd_addr``, ``cmd_beats``, ``cmd_rows``, ``cmd_stride``, ``cmd_valid``;
``axi_dma.command_stream``), ``rd_cmd_ready`` its ready; ``cmd_beats``: beats per command
(``CMD_BITS / W``); ``dst_cmd``: the route destination of fetched commands.

* The fetcher goes first: while ``fetcher.req`` is high it owns the read command (one row of
  ``chunk_now * cmd_beats`` beats from ``fetcher.addr``) and LOADs wait. A LOAD (word 1 the
  DRAM address, word 2 beats per row, word 3 rows, word 4 the row stride) is one 2-D DMA read;
  a ZERO load (flag bit 2) issues none.
* Every read issued and every ZERO load pushes a ``route`` entry (``depth`` entries behind a
  register slice, ``route_in``, of 2 more; the slice's ``in_ready`` holds both back; an
  entry reaches the FIFO a cycle after its issue; ``route_empty``: none in either): bits
  ``[0, 3)`` destination, ``[3, 6)`` flags (LANES, COMMIT, ZERO), ``[6, 22)`` index (word 5), ``[22, 38)`` word (word 6), ``[38, 54)`` beats,
  ``[54, 70)`` rows. A fetch's entry: destination ``dst_cmd``, 1 row. ``decode`` (optional, a
  ``dispatch.EngineDecode``, e.g. of ``read_router.route_decode``): bits stored above each entry,
  computed on the way in (of the LOAD's and of the fetch's entry, before the choice between
  them). When ``loadq.decoded`` is not None, the LOAD's entry (:func:`load_entry`) was
  already decoded on its way into the command FIFO (``dispatch.CommandQueue``'s decoders) and
  carried into the load queue, and the engine stores that.
* Issue is combinational on the FIFO heads and ``rd_cmd_ready``; one command per cycle.
  ``load_go`` (out): a LOAD left the FIFO for the route FIFO on this edge.
"""

from __future__ import annotations

from pycde.constructs import Mux, Wire
from pycde.signals import BitsSignal
from pycde.types import Bits

from ..queue import Queue
from .bits import shl
from .common import register_slice
from .dispatch import cmd_field

#: bits of a route FIFO entry
ROUTE_BITS = 3 + 3 + 16 * 4


def load_entry(cmd):
    """The route FIFO entry (without decode) of the LOAD command ``cmd``: the layout in the
    module docstring. Dispatch can decode it on the way into the load queue
    (``dispatch.EngineDecode`` of ``route_decode(load_entry(cmd))``); the engine then reads the
    decode from ``loadq.decoded``."""
    flags, dst = cmd[8:16], cmd[16:24]
    return BitsSignal.concat([cmd_field(cmd, 3, 16), cmd_field(cmd, 2, 16), cmd_field(cmd, 6, 16),
                              cmd_field(cmd, 5, 16), flags[0:3], dst[0:3]])


class LoadEngine:
    """The load engine (see the module docstring); ``route`` is its route FIFO."""

    def __init__(self, clk, rst, loadq, fetcher, rd, rd_cmd_ready, addr_width: int,
                 cmd_beats: int, depth: int, dst_cmd: int, decode=None):
        AW = addr_width
        fetch_req = fetcher.req
        lh = loadq.output
        l_flags = lh[8:16]
        l_zero = l_flags[2]
        l_valid = ~loadq.empty
        extra = decode.width if decode is not None else 0
        self.route = route = Queue(Bits(ROUTE_BITS + extra), depth, clk, rst, "route_fifo",
                                   head=True)
        # entries reach the route FIFO through a register slice (``route_in``): its in_ready
        # (a flop) is the room, and the FIFO's write enable is its valid and the
        # FIFO's full, two flops. Pushed straight from the issue, the write enable of the
        # LUT RAM was the fetcher's request -> the read command's slice -> the push ->
        # the FIFO's flags -> WRE (fetch_left_nonzero -> route_fifo_mem WRE, 8.31 ns, 6.22 of
        # it routing: the placed 8x8's critical path on seed 2 at 32abc82)
        in_v = Wire(Bits(1), "route_in_valid")
        in_d = Wire(Bits(ROUTE_BITS + extra), "route_in_data")
        s_v, s_d, room = register_slice(clk, rst, in_v, in_d, ~route.full, "route_in")
        route.push(s_d, s_v)
        #: no entry in the slice or the FIFO
        self.route_empty = route.empty & ~s_v
        rd["cmd_valid"].assign(room & (fetch_req | (l_valid & ~l_zero)))
        rd["cmd_addr"].assign(Mux(fetch_req, cmd_field(lh, 1, AW), fetcher.addr))
        fetch_beats = shl(fetcher.chunk_now, cmd_beats.bit_length() - 1, 16)
        rd["cmd_beats"].assign(Mux(fetch_req, cmd_field(lh, 2, 16), fetch_beats))
        rd["cmd_rows"].assign(Mux(fetch_req, cmd_field(lh, 3, 16), Bits(16)(1)))
        rd["cmd_stride"].assign(Mux(fetch_req, cmd_field(lh, 4, AW), Bits(AW)(0)))
        fg = fetch_req & room & rd_cmd_ready
        fetcher.go.assign(fg)
        load_go = ~fetch_req & l_valid & room & (l_zero | rd_cmd_ready)
        loadq.pop(load_go)
        self.load_go = load_go
        l_entry = load_entry(lh)
        f_entry = BitsSignal.concat([Bits(16)(1), fetch_beats,
                                     Bits(16)(0), Bits(16)(0), Bits(3)(0), Bits(3)(dst_cmd)])
        if decode is not None:
            # each candidate is decoded before the choice between them, so the decode (the
            # ZERO loads' ``beats - 2`` / ``rows - 2`` carry chains) is never behind
            # ``fetcher.req``: the fetcher's ``cmdq_room`` -> the fetch/LOAD choice -> the
            # decode -> the route FIFO's LUT RAM was the placed 8x8's critical path on seed 3
            # at 29fc67b. A LOAD's decode comes from its queue's slice (``loadq.decoded``,
            # computed on the way into the command FIFO) when dispatch stored it there: decoded
            # here, its 16-bit compares ran from the slice's flops (load_head_d) through four
            # LUT levels and a 2.7 ns route into the route FIFO's LUT RAM, the placed 8x8's
            # critical path on seed 1 at c423a1a (9.04 ns)
            l_dec = loadq.decoded if getattr(loadq, "decoded", None) is not None \
                else decode(l_entry)
            l_entry = BitsSignal.concat([l_dec, l_entry])
            f_entry = BitsSignal.concat([decode(f_entry), f_entry])
        # the entry is chosen by ``fetch_req`` alone (flops): a push is the fetch's when it
        # requests and the LOAD's otherwise, so the DMA's ready reaches the FIFO's write
        # enable, not the select of its 100-odd data bits (dma.rd.split.active -> the ready ->
        # the choice -> the route FIFO's LUT-RAM data: 98 endpoints at 10.6 ns in
        # fpga.paths' estimate of d1cbf2b's 8x8, its worst group inside the design)
        in_d.assign(Mux(fetch_req, l_entry, f_entry))
        in_v.assign(fg | load_go)
