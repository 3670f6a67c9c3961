"""The accelerator top's command fetcher: the command FIFO and the credits that keep it from
overflowing (built inside the top's generator; ``accel`` composes it).

``Fetcher(clk, rst, running, start, cmd_base, cmd_count, addr_width, cmd_bits, depth, chunk)``
----------------------------------------------------------------------------------------------
``depth``: the depth of the command FIFO (a ``dispatch.CommandQueue`` the top builds: the
read router pushes the fetched commands, dispatch pops them); the credits cover it.
Inputs: ``running`` (the top's running flag), ``start`` (the CSR start pulse), ``cmd_base``
(DRAM byte address of the first command) and ``cmd_count`` (commands to run), both sampled
on ``start``. Commands are ``cmd_bits`` bits (32 bytes) each.

Outputs: ``req``, ``addr``, ``chunk_now``, ``left_zero``, ``credits_zero``.

* ``req`` (out): a fetch read is wanted: running, commands left, and room for ``chunk`` more
  commands than are already credited. The read covers ``chunk_now`` commands (``chunk``, or
  fewer at the end) from ``addr``: ``chunk_now * cmd_bits / W`` beats, one row.
* ``go`` (a wire the load engine drives): the fetch read was issued on this edge; ``addr``
  moves on by ``chunk_now`` commands, ``left`` down by as many, and their credits are taken.
* ``pop`` (a wire dispatch drives from a register): a command left for its engine FIFO on the
  edge before; one credit returns.

The credits (register ``cmdq_credits_used``) count the commands requested
and not yet dispatched, so fetched data never finds the FIFO (and the dispatch slice in
front of it) full and the AXI R channel is never stalled by the fetcher. Registers:
``fetch_addr``, ``fetch_left`` (32 bits), ``cmdq_credits_used``, and the decisions' compares
(``fetch_left_short``: left < chunk, ``fetch_left_nonzero``, ``cmdq_room``,
``cmdq_credits_zero``), each set from the next value of its counter, so ``req`` and
``chunk_now`` are logic of registers with no compare and no cycle is added. The top's
``idle`` terms are two of these flops: ``left_zero`` (``left == 0``) and ``credits_zero``
(``cmdq_credits_used == 0``).
"""

from __future__ import annotations

from pycde.constructs import Mux, Wire
from pycde.types import Bits

from .bits import shl
from .common import NamedReg


class Fetcher:
    """The command fetcher (see the module docstring)."""

    def __init__(self, clk, rst, running, start, cmd_base, cmd_count, addr_width: int,
                 cmd_bits: int, depth: int, chunk: int):
        AW = addr_width
        CW = depth.bit_length()
        addr = NamedReg(AW, clk, rst, 0, name="fetch_addr")
        left = NamedReg(32, clk, rst, 0, name="fetch_left")
        used = NamedReg(CW, clk, rst, 0, name="cmdq_credits_used")
        # the decisions' compares as registers of their own, each set from the next value of
        # its counter (so they always equal the compare of the counter: no latency added)
        short = NamedReg(1, clk, rst, 1, name="fetch_left_short")      # left < chunk
        any_left = NamedReg(1, clk, rst, 0, name="fetch_left_nonzero")  # left != 0
        room = NamedReg(1, clk, rst, int(depth >= chunk), name="cmdq_room")
        now = Mux(short.q, Bits(CW)(chunk), left.q[0:CW])
        self.req = running & any_left.q & room.q
        self.go = Wire(Bits(1), "fetch_go")
        self.pop = Wire(Bits(1), "cmdq_pop")
        # the four candidates (no fetch / a fetch, pop low / high) from registers, selected by
        # go and pop last: the late fetch_go (an AND of the read port's flops) does not run
        # into an adder (dma.rd.split.active -> fetch_go -> the credit adders was the longest
        # path of pycde_accel.fpga.paths at ed5b86f)
        plus = (used.q.as_uint(CW) + now.as_uint(CW)).as_bits(CW)
        plus_m1 = (used.q.as_uint(CW) + now.as_uint(CW) - 1).as_bits(CW)
        minus1 = (used.q.as_uint(CW) - 1).as_bits(CW)
        used.next(Mux(self.go, Mux(self.pop, used.q, minus1), Mux(self.pop, plus, plus_m1)))
        # room' = used' <= depth - chunk, with used' = used + (go ? now : 0) - pop: each case a
        # compare of registers (a full chunk is a constant), go and pop only select among
        # them, so the late fetch_go / cmdq_pop do not run through an adder and a compare.
        # A fetch of the short tail takes the whole chunk's compare: it leaves nothing to
        # fetch (fetch_left_nonzero goes low), so room is not read before the next cycle
        # sets it from used again, and the whole chunk's compare is the stricter one (the
        # tail's own compare, used + left against the limit, was two carry chains in series:
        # fetch_left -> both -> cmdq_room was the placed 8x8's critical path on seed 2 at
        # 4ebabeb, 8.32 ns)
        lim = depth - chunk
        wide = CW + 1
        u = used.q.as_uint(wide)

        def le(v, k):
            return (v <= k).as_bits()

        # [pop low, pop high] for each case: no fetch, a fetch
        room_idle = [le(u, lim), le(u, lim + 1)]
        room_full = [le(u + chunk, lim), le(u + chunk, lim + 1)]

        def pick(pair):
            return Mux(self.pop, pair[0], pair[1])

        room.next(Mux(self.go, pick(room_idle), pick(room_full)))
        # zero' = (used' == 0) the same way: without a fetch, used (pop low) or used - 1 (pop
        # high) is zero; with one (now >= 1), only used + now - 1 can be, with pop high. The
        # top's idle AND takes this flop, not a compare of the counter (cmdq_credits_used ->
        # the compare's carry chain -> the idle AND -> idle_q was the placed 8x8's critical
        # path on seed 1 at 1d7174d)
        zero = NamedReg(1, clk, rst, 1, name="cmdq_credits_zero")
        u0 = (used.q == Bits(CW)(0))
        u1 = (used.q == Bits(CW)(1))
        zero_go = self.pop & u0 & (now == Bits(CW)(1))
        zero.next(Mux(self.go, Mux(self.pop, u0, u1), zero_go))
        cmd_bytes_log2 = (cmd_bits // 8).bit_length() - 1
        step = (addr.q.as_uint(AW) + shl(now, cmd_bytes_log2, AW).as_uint(AW)).as_bits(AW)
        addr.next(Mux(start, Mux(self.go, addr.q, step), cmd_base))
        rest = (left.q.as_uint(32) - now.as_uint(CW)).as_bits(32)
        left_next = Mux(start, Mux(self.go, left.q, rest), cmd_count)
        left.next(left_next)
        # after a fetch: short (left < chunk) fetches all that is left (nothing remains);
        # else left - chunk remains, short when left < 2 chunk, nonzero when left != chunk:
        # compares of left itself, not of the subtraction's result
        short_go = short.q | (left.q.as_uint(32) < 2 * chunk).as_bits()
        nz_go = ~short.q & (left.q != Bits(32)(chunk))
        short.next(Mux(start, Mux(self.go, short.q, short_go),
                       (cmd_count.as_uint(32) < chunk).as_bits()))
        any_left.next(Mux(start, Mux(self.go, any_left.q, nz_go), cmd_count != Bits(32)(0)))
        self.addr, self.chunk_now = addr.q, now
        # the top's idle terms, flops: no command left to fetch, every credit back
        self.left_zero, self.credits_zero = ~any_left.q, zero.q
