"""AXI4 master DMA: a burst splitter, a read engine, a write engine, and both on one AXI port.

Command (the same for reads and writes; valid/ready, taken on an edge where both are high)
------------------------------------------------------------------------------------------
A 2-D transfer, beat-aligned: ``rows`` rows of ``beats`` bus beats each; row r starts at byte
address ``addr + r * stride``. A 1-D transfer is ``rows = 1``. ``addr`` and ``stride`` must be
multiples of the bus width in bytes (``data_width / 8``; the low address bits are ignored),
``beats >= 1`` and ``rows >= 1`` (0 is not a valid command). This form fetches a tile of a
row-major matrix in DRAM (rows of ``beats * data_width/8`` bytes, ``stride`` = the matrix row
pitch) with one command. Byte-granular (unaligned) transfers are not supported: the compiler
lays tensors out beat-aligned.

Ports: ``cmd_addr`` (addr_width), ``cmd_beats`` (beat_width, default 16), ``cmd_rows``
(row_width, default 16), ``cmd_stride`` (addr_width), ``cmd_valid``, ``cmd_ready`` (out).

Bursts
------
Each row is cut into INCR bursts of at most ``max_burst`` beats (<= 256) that never cross a
4 KiB boundary: a burst's length is ``min(beats left in the row, max_burst, beats to the next
4 KiB boundary)``. ``arsize/awsize = log2(data_width/8)``, ``arburst/awburst = INCR``, ID 0
(in-order responses), ``*cache = 0b0011``, ``*prot = 0``, ``*lock = 0``.
At most ``max_outstanding`` bursts are in flight per engine (read: AR issued, last R beat not yet
taken; write: AW issued, B not yet taken); the splitter issues at most one burst per cycle.

Read engine ``axi_dma_rd`` (port ``m_axi_ar*``, ``m_axi_r*``)
-----------------------------------------------------------
Data out on ``out_data`` (data_width), ``out_last`` (the command's last beat), ``out_row_last``
(a row's last beat), ``out_valid``, ``out_ready``: R beats pass through a register slice
(``r_q``, ``common.register_slice``: 2 entries, latency 1, full rate; ``rready`` is its flop, so
the consumer's ready never reaches the R channel and ``out_*`` are registers). ``done`` (out)
is high for the cycle the command's last beat is taken on ``out``. Commands may be queued back to back: the
splitter takes the next command as soon as it has issued the last burst of the previous one.
Sustained rate with no back-pressure: 1 beat per cycle once the first burst's data arrives
(as long as the memory's latency is covered by ``max_outstanding`` bursts).

Write engine ``axi_dma_wr`` (port ``m_axi_aw*``, ``m_axi_w*``, ``m_axi_b*``)
---------------------------------------------------------------------------
A command enters through a register slice (``wr_cmd_q``, 2 entries, latency 1: ``cmd_ready``
is its flop), so the splitter offers its first burst two cycles after the command is taken.
Data in on ``in_data``, ``in_valid``, ``in_ready`` (out): exactly ``rows * beats`` beats per
command, in order (``wstrb`` all ones); a beat is taken only after its burst's AW was accepted
(``in_ready``, a flop: an accepted burst has beats left and the W FIFO has room, 0 otherwise;
the accepted bursts' lengths wait in a FIFO whose head passes a register slice, ``lens_q``,
so a burst's first beat can be taken two edges after its AW) and goes out on W through a
3-slot FIFO (``w_q``, latency 1, full rate while ``wready`` is high; ``wvalid`` is a flop and
``wdata``/``wlast`` one mux after flops; ``wready`` reaches only its read pointer and fill,
never ``in_ready``, so W keeps the AXI rule whatever the source does; ``in_ready`` counts the
FIFO's fill without the cycle's W beat, so after a stall it rises one cycle after the beat that
made room left), ``wlast`` on a burst's last beat. ``done`` is high for the cycle the B response of the command's last burst is
taken (i.e. all its data is written).

Both engines: ``busy`` (out: a command is being split or has bursts in flight), ``err`` (out,
sticky until reset: a response other than OKAY), ``bytes_read`` / ``bytes_written`` (out, 32
bits, wrapping: data_width/8 per data beat taken; for the CSR performance counters).
``clk``, ``rst`` (synchronous, active high; a reset mid-transfer leaves the AXI port in
whatever state it was: reset the slave with it).

``axi_dma`` puts both on one AXI4 master port ``m_axi_*`` (reads and writes are independent).
"""

from __future__ import annotations

from pycde import Clock, Input, Module, Output, Reset
from pycde.constructs import Mux, Wire
from pycde.signals import BitsSignal
from pycde.types import Bits, UInt

from ..errors import ConfigError
from ..queue import Queue
from .bits import add, log2, shl, sub
from .common import NamedReg, Ring3, pick3, register_slice, rotate3
from .stream import Stream, module, pack, unpack

COUNTER_WIDTH = 32


def command_stream(addr_width: int, beat_width: int = 16, row_width: int = 16) -> Stream:
    """The command form of both engines (and of the burst splitter)."""
    return Stream(addr=addr_width, beats=beat_width, rows=row_width, stride=addr_width)


def write_ports(addr_width: int, data_width: int) -> dict:
    """The ports of a module that writes to DRAM through the write engine: its write command
    ``wc_*`` (:func:`command_stream`) and data ``wd_*`` (``data_width`` bits) out."""
    return {**command_stream(addr_width).source("wc"), **Stream(data=data_width).source("wd")}


def _ax_stream(AW) -> Stream:
    """An AXI4 address channel (AR or AW) as this DMA drives it."""
    return Stream(id=1, addr=AW, len=8, size=3, burst=2, lock=1, cache=4, prot=3)


def _engine_ports(cmd: Stream, AW: int, ax: str, data: dict, counter: str) -> dict:
    """An engine's ports: its command, its address channel ``ax``, its ``data`` ports (AXI
    and user side), ``done``/``busy``/``err`` and its byte counter."""
    return {"clk": Clock(), "rst": Reset(), **cmd.sink("cmd"), **_ax_stream(AW).source(ax, sep=""),
            **data, **{n: Output(Bits(1)) for n in ("done", "busy", "err")},
            counter: Output(Bits(COUNTER_WIDTH))}


def _check(data_width, addr_width, max_burst, max_outstanding, beat_width, row_width):
    if data_width not in (32, 64, 128, 256, 512):
        raise ConfigError(f"axi dma: data_width must be 32..512 (power of two), got {data_width}")
    if not 1 <= max_burst <= 256:
        raise ConfigError(f"axi dma: max_burst must be in 1..256, got {max_burst}")
    if max_outstanding < 1:
        raise ConfigError(f"axi dma: max_outstanding must be >= 1, got {max_outstanding}")
    if addr_width < 13:
        raise ConfigError(f"axi dma: addr_width must be >= 13, got {addr_width}")
    if beat_width < 1 or row_width < 1:
        raise ConfigError("axi dma: beat_width and row_width must be >= 1")


def _le_pow2(x: BitsSignal, bound: int) -> BitsSignal:
    """``x <= bound`` for a power of two ``bound`` < 2**width(x), as bit tests (no carry
    chain): the bits above ``bound``'s are zero and, if ``bound``'s bit is set, those below."""
    k, w = bound.bit_length() - 1, x.type.width
    assert bound == 1 << k and k < w
    hi_zero = x[k + 1:w] == Bits(w - k - 1)(0) if k + 1 < w else Bits(1)(1)
    lo_zero = x[0:k] == Bits(k)(0) if k > 0 else Bits(1)(1)
    return hi_zero & (~x[k] | lo_zero)


def _le_const(x: BitsSignal, bound: int) -> BitsSignal:
    """``x <= bound`` for any constant ``bound`` >= 0, as bit tests (no carry chain): not
    ``x > bound``, which holds where some bit of ``x`` is 1 against a 0 of ``bound`` with
    every bit above equal."""
    w = x.type.width
    if bound >= (1 << w) - 1:
        return Bits(1)(1)
    if bound & (bound + 1) == 0:                 # 2^k - 1: the bits from k up are zero
        k = bound.bit_length()
        return x[k:w] == Bits(w - k)(0)
    if bound & (bound - 1) == 0:
        return _le_pow2(x, bound)
    gt, eq_above = None, None
    for i in reversed(range(w)):
        bit = (bound >> i) & 1
        if not bit:
            term = x[i] if eq_above is None else x[i] & eq_above
            gt = term if gt is None else gt | term
        same = x[i] if bit else ~x[i]
        eq_above = same if eq_above is None else eq_above & same
    return ~gt


def make_burst_splitter(data_width: int = 64, addr_width: int = 32, max_burst: int = 256,
                        beat_width: int = 16, row_width: int = 16) -> type[Module]:
    """Command -> stream of bursts (``burst_addr``, ``burst_len`` = beats-1 as AXI ``*len``,
    ``burst_row_last``, ``burst_last``, ``burst_valid``, ``burst_ready``). Registered output (a
    register slice, ``burst_q``): a burst is offered the cycle after the command is taken, then
    one per cycle while taken; the splitter may run one burst ahead of a stalled output."""
    _check(data_width, addr_width, max_burst, 1, beat_width, row_width)
    AW, LW, RW = addr_width, beat_width, row_width
    lsb = log2(data_width // 8)
    page_beats = 4096 >> lsb            # beats in a 4 KiB page
    maxb = min(max_burst, page_beats)
    BW = max(LW, log2(page_beats + 1), log2(maxb + 1))  # width of burst-length arithmetic
    io = {"clk": Clock(), "rst": Reset(), **command_stream(AW, LW, RW).sink("cmd"),
          **Stream(addr=AW, len=8, row_last=1, last=1).source("burst"),
          "active": Output(Bits(1))}

    def build(p):
        clk, rst = p.clk, p.rst
        zero = Bits(1)(0)
        active = NamedReg(1, clk, rst, 0, name="active")
        cmd_fire = p.cmd_valid & ~active.q
        addr = NamedReg(AW, clk, None, None, name="cur_addr")
        row_left = NamedReg(LW, clk, None, None, name="row_left")
        rows_left = NamedReg(RW, clk, None, None, name="rows_left")
        row_beats = NamedReg(LW, clk, None, None, ce=cmd_fire, name="row_beats")
        stride = NamedReg(AW, clk, None, None, ce=cmd_fire, name="stride")
        row_beats.next(p.cmd_beats)
        stride.next(p.cmd_stride)
        # bursts leave through a register slice (burst_q): issue waits on its in_ready, a
        # flop, so the address channel's ready (and the in-flight limit) does not reach the
        # splitter's next-state logic; a burst is offered the cycle after it is issued
        b_in_ready = Wire(Bits(1), "burst_q_in_ready")
        issue = active.q & b_in_ready

        # beats to the next 4 KiB boundary: page_beats - (addr within the page, in beats).
        # Timing: the decisions (does the page cap the burst, does the row end, is it the
        # last row) are bit tests of registers kept beside the counters, with no carry
        # chain: ``page_cap_q`` (the page boundary is nearer than maxb), ``left_in_q``
        # (row_left + the address's beat in its page: ``left <= to_page`` is ``left_in <=
        # page``, bit tests against the power of two, ``_le_pow2``) and ``last_row_q``.
        # Each is set from candidates computed from registers in parallel with the
        # decisions, selected by them; the next address and beats left are chosen the same way.
        in_page = addr.q[lsb:12].as_uint(BW)
        to_page = sub(Bits(BW)(page_beats), in_page.as_bits(BW), BW)
        left = row_left.q.as_uint(BW).as_bits(BW)
        # a typed constant: with 128-bit beats a page is exactly one 256-beat burst and
        # page_beats - maxb is 0, which as an untyped constant is 0 bits
        cap_at = UInt(BW)(page_beats - maxb)
        page_cap_q = NamedReg(1, clk, None, None, name="page_cap_q")   # to_page < maxb
        left_in_q = NamedReg(BW + 1, clk, None, None, name="left_in_q")
        last_row_q = NamedReg(1, clk, None, None, name="last_row_q")   # rows_left == 1
        page_cap, left_in, last_row = page_cap_q.q, left_in_q.q, last_row_q.q
        def le_max(v):
            return _le_pow2(v, maxb) if maxb & (maxb - 1) == 0 else \
                (v.as_uint() <= maxb).as_bits()

        def le_page(v):
            return _le_pow2(v, page_beats)

        # left <= maxb and left_in <= page (left <= to_page) are flops too, set from the
        # next values of row_left and left_in_q like the others: row_done is one mux of
        # three flops (row_left -> bit tests -> row_done -> row_addr's enable ran 8 levels,
        # 11.3 ns on one placement)
        fits_max_q = NamedReg(1, clk, None, None, name="fits_max_q")
        fits_page_q = NamedReg(1, clk, None, None, name="fits_page_q")
        fits_max, fits_page = fits_max_q.q, fits_page_q.q
        row_done = Mux(page_cap, fits_max, fits_page)  # left <= cap
        cap_m1 = Mux(page_cap, Bits(BW)(maxb - 1), sub(to_page, Bits(BW)(1), BW))
        blen_m1 = Mux(row_done, cap_m1, sub(left, Bits(BW)(1), BW))  # burst beats - 1
        cmd_last = row_done & last_row

        # address after a burst that does not end the row: + maxb beats, or the next page
        plus_max = add(addr.q, Bits(AW)(maxb << lsb), AW)
        next_page = BitsSignal.concat([add(addr.q[12:AW], Bits(AW - 12)(1), AW - 12),
                                       Bits(12)(0)])
        after_cap = Mux(page_cap, plus_max, next_page)
        left_after = Mux(page_cap, sub(left, Bits(BW)(maxb), BW),
                         sub(left_in[0:BW], Bits(BW)(page_beats), BW))  # left - cap
        # the next row's address is the register next_row_q (the command's address + stride,
        # then + stride per row), so the new-row candidates below start from a flop, not
        # from an AW-bit adder (row_addr -> + stride -> + row_beats -> fits_page_q was the
        # placed 8x8's critical path on seed 2 at 45d1f20)
        next_row_q = NamedReg(AW, clk, None, None, name="next_row_q")
        next_row = next_row_q.q
        go_row = issue & row_done & ~last_row
        addr.next(Mux(cmd_fire, Mux(issue, addr.q, Mux(row_done, after_cap, next_row)),
                      p.cmd_addr))
        next_row_q.next(Mux(cmd_fire, Mux(go_row, next_row, add(next_row, stride.q, AW)),
                            add(p.cmd_addr, p.cmd_stride, AW)))
        row_left.next(Mux(cmd_fire, Mux(issue, row_left.q,
                                        Mux(row_done, left_after[0:LW], row_beats.q)),
                          p.cmd_beats))

        def as_left(v):          # a row_left value as the BW-bit 'left'
            return v.as_uint(BW).as_bits(BW)

        # left_after <= maxb without the subtraction (row_left -> left - maxb's carry chain
        # -> the bit tests -> fits_max_q was the placed 8x8's critical path on seed 1 at
        # c4c49fa, in the write DMA): it is used only when the burst does not end the row,
        # i.e. left > maxb (the page does not cap it: left_in > page), so left - maxb <= maxb
        # is left <= 2 maxb and left_in - page <= maxb is left_in <= page + maxb
        fits_after = Mux(page_cap, _le_const(left, 2 * maxb),
                         _le_const(left_in, page_beats + maxb))
        fits_max_q.next(Mux(cmd_fire, Mux(issue, fits_max,
                                          Mux(row_done, fits_after,
                                              le_max(as_left(row_beats.q)))),
                            le_max(as_left(p.cmd_beats))))
        rows_left.next(Mux(cmd_fire, Mux(go_row, rows_left.q,
                                         sub(rows_left.q, Bits(RW)(1), RW)), p.cmd_rows))

        # the decision registers' candidates: a new command; a burst that does not end the
        # row (the page caps it: the next page, in_page 0; else + maxb beats, which wraps
        # to the next page when in_page was exactly page - maxb); a new row (next_row)
        def beat_in_page(a):
            return a[lsb:12].as_uint(BW)

        def in_plus(beats, a):
            return (beats.as_uint(BW + 1) + beat_in_page(a).as_uint(BW + 1)).as_bits(BW + 1)

        c_in = in_plus(p.cmd_beats, p.cmd_addr)
        # the new-row candidates of left_in and page_cap are registers kept in step with
        # next_row_q (row_beats + the next row's beat in its page; that beat > cap_at), each
        # set from the low 12 bits of next_row_q's next value, so fits_page_q's new-row
        # candidate is a bit test of a flop (next_row_q -> r_in's adder -> the bit tests ->
        # fits_page_q was the placed 8x8's critical path on seed 3 at a190752, read DMA)
        def page_low(a, b):     # (a + b)'s low 12 bits: its beat in its page
            return add(a[0:12], b[0:12], 12)

        # (each candidate's adders and compare come before the go_row / cmd_fire select).
        # The row after next's low bits are a register too, kept in step with next_row_q
        # (row_low_q == (next_row_q + stride)'s low 12 bits), so r_in's candidate is one
        # adder of flops: next_row_q -> the + stride low bits -> in_plus's adder ->
        # next_row_left_in_q, two carry chains and 4.1 ns of routing, was the placed 8x8's
        # critical path on seed 3 at c423a1a (write DMA). A new command sets it to
        # (cmd_addr + 2 cmd_stride)'s low bits, one adder of the command's fields.
        row_low_q = NamedReg(12, clk, None, None, name="next_row_low_q")
        row_low = row_low_q.q
        cmd_low = page_low(p.cmd_addr, p.cmd_stride)
        row_low_q.next(Mux(cmd_fire, Mux(go_row, row_low, add(row_low, stride.q[0:12], 12)),
                           add(p.cmd_addr[0:12], shl(p.cmd_stride[0:12], 1, 12), 12)))
        r_in_q = NamedReg(BW + 1, clk, None, None, name="next_row_left_in_q")
        r_in = r_in_q.q
        r_in_q.next(Mux(cmd_fire, Mux(go_row, r_in, in_plus(row_beats.q, row_low)),
                        in_plus(p.cmd_beats, cmd_low)))
        r_cap_q = NamedReg(1, clk, None, None, name="next_row_page_cap_q")
        r_cap_q.next(Mux(cmd_fire, Mux(go_row, r_cap_q.q, beat_in_page(row_low) > cap_at),
                         beat_in_page(cmd_low) > cap_at))
        wrap = page_cap | (in_page == cap_at)
        a_in = Mux(wrap, left_in, sub(left_in, Bits(BW + 1)(page_beats), BW + 1))
        pm_in_page = (in_page.as_uint(BW) + UInt(BW)(maxb)).as_bits(BW)
        pm_in_page = Mux(wrap, pm_in_page, Bits(BW)(0))
        a_cap = ~page_cap & (pm_in_page.as_uint() > cap_at)
        left_in_q.next(Mux(cmd_fire, Mux(issue, left_in, Mux(row_done, a_in, r_in)), c_in))
        # le_page(a_in) without a_in's subtraction: after a wrap left_in - page <= page is
        # left_in <= 2 page (left_in > page there: the burst did not end the row)
        a_fits = Mux(wrap, le_page(left_in), _le_const(left_in, 2 * page_beats))
        fits_page_q.next(Mux(cmd_fire, Mux(issue, fits_page,
                                           Mux(row_done, a_fits, le_page(r_in))),
                             le_page(c_in)))
        page_cap_q.next(Mux(cmd_fire, Mux(issue, page_cap,
                                          Mux(row_done, a_cap, r_cap_q.q)),
                            beat_in_page(p.cmd_addr) > cap_at))
        last_row_q.next(Mux(cmd_fire, Mux(go_row, last_row, rows_left.q == Bits(RW)(2)),
                            p.cmd_rows == Bits(RW)(1)))
        active.next(Mux(cmd_fire, active.q & ~(issue & cmd_last), Bits(1)(1)))

        b_valid, b_d, b_ready = register_slice(
            clk, rst, issue, BitsSignal.concat([cmd_last, row_done, blen_m1[0:8], addr.q]),
            p.burst_ready, "burst_q")
        b_in_ready.assign(b_ready)
        p.cmd_ready = ~active.q
        p.burst_addr = b_d[0:AW]
        p.burst_len = b_d[AW:AW + 8]
        p.burst_row_last = b_d[AW + 8]
        p.burst_last = b_d[AW + 9]
        p.burst_valid = b_valid
        p.active = active.q

    return module(f"axi_dma_burst_d{data_width}_a{AW}_b{max_burst}_l{LW}_r{RW}", io, build)


def _counter(clk, rst, inc, amount: int, name: str):
    cnt = NamedReg(COUNTER_WIDTH, clk, rst, 0, name=name)
    cnt.next(Mux(inc, cnt.q, add(cnt.q, Bits(COUNTER_WIDTH)(amount), COUNTER_WIDTH)))
    return cnt.q


def _outstanding(clk, rst, inc, dec, limit: int, name: str):
    """In-flight burst count: +1 on ``inc``, -1 on ``dec``; returns (count, below_limit)."""
    w = log2(limit + 1)
    cnt = NamedReg(w, clk, rst, 0, name=name)
    up = add(cnt.q, Bits(w)(1), w)
    down = sub(cnt.q, Bits(w)(1), w)
    cnt.next(Mux(inc, Mux(dec, cnt.q, down), Mux(dec, up, cnt.q)))
    return cnt.q, cnt.q.as_uint() < limit


def _split_commands(p, Split, cmd: Stream, slice_name: str | None = None):
    """The engine's burst splitter, fed from its command port ``cmd`` (through a register
    slice ``slice_name`` if given: ``cmd_ready`` is then its flop and the splitter's
    new-command candidates start from its registers, beside it): (instance, its
    burst_ready, a command waiting in the slice)."""
    burst_ready = Wire(Bits(1), "burst_ready")
    fields = cmd.fields("cmd", p)
    if slice_name is None:
        split = Split(clk=p.clk, rst=p.rst, **fields, burst_ready=burst_ready,
                      instance_name="split")
        p.cmd_ready = split.cmd_ready
        return split, burst_ready, Bits(1)(0)
    names = [n for n in fields if n != "cmd_valid"]
    taken = Wire(Bits(1), f"{slice_name}_taken")
    v, d, in_ready = register_slice(p.clk, p.rst, fields["cmd_valid"],
                                    pack({n: fields[n] for n in names}), taken, slice_name)
    sliced = unpack(d, {n: fields[n].type.width for n in names})
    split = Split(clk=p.clk, rst=p.rst, **sliced, cmd_valid=v, burst_ready=burst_ready,
                  instance_name="split")
    taken.assign(split.cmd_ready)
    p.cmd_ready = in_ready
    return split, burst_ready, v


def _issue_bursts(p, c, split, burst_ready, done, limit: int, name: str, lsb: int):
    """Drive the address channel ``c`` (``m_axi_ar``/``m_axi_aw``) from the splitter, at most
    ``limit`` bursts in flight (one ends on ``done``): returns (in-flight count, burst issued)."""
    ax_fire_w = Wire(Bits(1), f"{c[-2:]}_fire")
    inflight, can_issue = _outstanding(p.clk, p.rst, ax_fire_w, done, limit, name)
    can = can_issue.as_bits()
    ax_ready = getattr(p, f"{c}ready")
    ax_fire = split.burst_valid & can & ax_ready
    ax_fire_w.assign(ax_fire)
    burst_ready.assign(can & ax_ready)
    for field, sig in (("id", Bits(1)(0)), ("addr", split.burst_addr), ("len", split.burst_len),
                       ("size", Bits(3)(lsb)), ("burst", Bits(2)(1)), ("lock", Bits(1)(0)),
                       ("cache", Bits(4)(3)), ("prot", Bits(3)(0)),
                       ("valid", split.burst_valid & can)):
        setattr(p, f"{c}{field}", sig)
    return inflight, ax_fire


def make_dma_read(data_width: int = 64, addr_width: int = 32, max_burst: int = 256,
                  max_outstanding: int = 4, beat_width: int = 16,
                  row_width: int = 16) -> type[Module]:
    """The read engine (see the module docstring)."""
    _check(data_width, addr_width, max_burst, max_outstanding, beat_width, row_width)
    DW, AW = data_width, addr_width
    lsb = log2(DW // 8)
    Split = make_burst_splitter(DW, AW, max_burst, beat_width, row_width)
    cmd = command_stream(AW, beat_width, row_width)
    io = _engine_ports(cmd, AW, "m_axi_ar", {
        **Stream(id=1, data=DW, resp=2, last=1).sink("m_axi_r", sep=""),
        **Stream(data=DW, last=1, row_last=1).source("out")}, "bytes_read")

    def build(p):
        clk, rst = p.clk, p.rst
        split, burst_ready, _ = _split_commands(p, Split, cmd)
        # R beats enter a register slice (r_q): rready is its flop and out_* are its
        # registers, so the consumer's ready does not reach the R channel and the
        # consumer's logic starts from flops, not from the burst flags' LUT-RAM read
        r_in_ready = Wire(Bits(1), "r_q_in_ready")
        r_fire = p.m_axi_rvalid & r_in_ready
        r_end = r_fire & p.m_axi_rlast
        inflight, ar_fire = _issue_bursts(p, "m_axi_ar", split, burst_ready, r_end,
                                          max_outstanding, "rd_inflight", lsb)
        flags = Queue(Bits(2), max(2, max_outstanding), clk, rst, "flags")
        flags.push(BitsSignal.concat([split.burst_last, split.burst_row_last]), ar_fire)
        head = flags.pop(r_end)
        beat = BitsSignal.concat([p.m_axi_rlast & head[1], p.m_axi_rlast & head[0],
                                  p.m_axi_rdata])
        o_valid, o_beat, o_in_ready = register_slice(clk, rst, p.m_axi_rvalid, beat,
                                                     p.out_ready, "r_q")
        r_in_ready.assign(o_in_ready)
        p.m_axi_rready = o_in_ready
        p.out_data = o_beat[0:DW]
        p.out_valid = o_valid
        p.out_last = o_beat[DW + 1]
        p.out_row_last = o_beat[DW]
        p.done = o_valid & p.out_ready & o_beat[DW + 1]
        busy = (split.active | split.burst_valid | o_valid |
                (inflight != Bits(inflight.type.width)(0)))
        p.busy = busy
        err = NamedReg(1, clk, rst, 0, name="rd_err")
        err.next(err.q | (r_fire & (p.m_axi_rresp != Bits(2)(0))))
        p.err = err.q
        p.bytes_read = _counter(clk, rst, r_fire, DW // 8, "rd_bytes")

    return module(f"axi_dma_rd_d{DW}_a{AW}_b{max_burst}_o{max_outstanding}", io, build)


def _w_fifo(clk, rst, push, data, ready, name: str):
    """The write engine's W FIFO: 3 slots, a beat pushed into the slot under a one-hot write
    pointer (each slot's enable is its pointer bit and "not full", flops), ``out_valid`` a
    flop and ``out_data`` the slot under a one-hot read pointer (one mux after the flops),
    latency 1; ``ready`` (the W channel's, from the memory's port) reaches only the read
    pointer and the fill count.
    Returns ``(out_valid, out_data, room)``: ``room`` = after this edge it holds at most 2
    beats counting the push and not the pop, the next value of a registered ``in_ready``
    that never over-fills it and runs at one beat per cycle while ``ready`` is high, as a pair
    of flop functions ``(without the push, with it)`` for the caller to select by the push.
    Registers ``{name}_slot0..2``, ``{name}_wr``/``{name}_rd``, ``{name}_n`` (fill) and
    ``{name}_v`` (not empty)."""
    ring = Ring3(clk, rst, name)
    rd = NamedReg(3, clk, rst, 0b001, name=f"{name}_rd")
    n = NamedReg(2, clk, rst, 0, name=f"{name}_n")
    v = NamedReg(1, clk, rst, 0, name=f"{name}_v")
    pop = v.q & ready
    # the slot under the write pointer samples the data while the ring is not full (fewer
    # than 3 beats): the push is in no slot's enable. Its push & pointer enable, 65 flops'
    # CE, was in_ready_q -> the beat -> a 2.79 ns route -> the enable -> a 3.58 ns route
    # (the placed 8x8's critical path on seed 2 at ac8e72c, 8.15 ns)
    slots = ring.load(data, push, free=~(n.q[0] & n.q[1]))
    rd.next(Mux(pop, rd.q, rotate3(rd.q)))
    one = Bits(2)(1)
    n_push = add(n.q, one, 2)
    n_pop = sub(n.q, one, 2)
    n_next = Mux(push, Mux(pop, n.q, n_pop), Mux(pop, n_push, n.q))
    n.next(n_next)
    v.next(n_next != Bits(2)(0))
    room = (n.q != Bits(2)(3), ~n.q[1])                 # n + push <= 2
    return v.q, pick3(rd.q, slots), room


def make_dma_write(data_width: int = 64, addr_width: int = 32, max_burst: int = 256,
                   max_outstanding: int = 4, beat_width: int = 16,
                   row_width: int = 16) -> type[Module]:
    """The write engine (see the module docstring)."""
    _check(data_width, addr_width, max_burst, max_outstanding, beat_width, row_width)
    DW, AW = data_width, addr_width
    nb = DW // 8
    lsb = log2(nb)
    Split = make_burst_splitter(DW, AW, max_burst, beat_width, row_width)
    cmd = command_stream(AW, beat_width, row_width)
    io = _engine_ports(cmd, AW, "m_axi_aw", {
        **Stream(data=DW, strb=nb, last=1).source("m_axi_w", sep=""),
        **Stream(id=1, resp=2).sink("m_axi_b", sep=""), **Stream(data=DW).sink("in")},
        "bytes_written")

    def build(p):
        clk, rst = p.clk, p.rst
        # the command enters through a register slice (wr_cmd_q): the splitter's new-command
        # candidates (cmd_beats + the address's beat in its page -> the page test ->
        # fits_page_q) start from its flops, placed beside the splitter, not from the write
        # arbiter's slice across the die (dma.wr_cmd_beats -> a 3.09 ns route -> two carry
        # chains -> fits_page_q was the placed 8x8's critical path on seed 1 at a8b3ab2).
        # One cycle more per write command (perfmodel.timing.WR_CMD_SLICE)
        split, burst_ready, cmd_waits = _split_commands(p, Split, cmd, "wr_cmd_q")
        b_fire = p.m_axi_bvalid  # bready is always high
        inflight, aw_fire = _issue_bursts(p, "m_axi_aw", split, burst_ready, b_fire,
                                          max_outstanding, "wr_inflight", lsb)
        depth = max(2, max_outstanding)
        # W side: the lengths of accepted bursts, in order (AXI len, beats - 1), each with
        # "one beat" decoded on the way in. The last-beat flag is not a compare of the beat
        # counter with the FIFO's LUT-RAM read: on a burst's first beat it is the stored
        # "one beat" bit, after it a flop (w_last_next: beat == len - 1, set on each beat),
        # so the FIFO's pop is a mux of flops and one LUT-RAM bit (lens' read address ->
        # the 8-bit compare -> the pop -> the FIFO's flags ran 7 levels in the estimator)
        lens = Queue(Bits(9), depth, clk, rst, "lens")
        lens.push(BitsSignal.concat([split.burst_len == Bits(8)(0), split.burst_len]),
                  aw_fire)
        # the FIFO's head reaches the W side through a register slice (lens_q): the length
        # and "one beat" bit are flops and the FIFO pops on its flags, so no LUT-RAM read
        # runs into w_last_next's compare or the FIFO's count (lens_mem -> w_last_next ->
        # lens_full, four LUTs, was the placed 8x8's critical path on seed 2 at a8b3ab2).
        # A burst's beats may start two edges after its AW (one more: perfmodel.timing.AW_TO_W)
        lens_taken = Wire(Bits(1), "lens_q_taken")
        have, lens_head, lens_in_ready = register_slice(
            clk, rst, ~lens.empty, lens.output, lens_taken, "lens_q")
        lens.pop(~lens.empty & lens_in_ready)
        # ``in_ready`` is one flop (``in_ready_q``): it drives the write arbiter's data slice
        # across the die, and as the AND of ``lens_q_v`` and the W slice's room it was a LUT
        # the placer put between the two (lens_q_v -> a 5.12 ns route -> the AND -> 2.50 ns
        # back to arb_data_q_skid_v was the placed 8x8's critical path on seed 1 at ade49bc).
        # Its next value is lens_q's next valid and the W FIFO's room counted without this
        # cycle's pop, so ``m_axi_wready`` does not reach it (a registered ready that did
        # cost seed 2 14 MHz at 1358fb9): the W FIFO (``w_q``, 3 slots) takes a beat while
        # it holds at most 2 beats after the edge, not counting a beat leaving on W then.
        in_ready_q = NamedReg(1, clk, rst, 0, name="in_ready_q")
        w_fire = p.in_valid & in_ready_q.q
        beat = NamedReg(8, clk, rst, 0, name="w_beat")
        head_len, head_one = lens_head[0:8], lens_head[8]
        first = NamedReg(1, clk, rst, 1, name="w_beat_first")
        lastn = NamedReg(1, clk, rst, 0, name="w_last_next")
        w_last = Mux(first.q, lastn.q, head_one)
        lens_taken.assign(w_fire & w_last)
        beat.next(Mux(w_fire, beat.q, Mux(w_last, add(beat.q, Bits(8)(1), 8), Bits(8)(0))))
        first.next(Mux(w_fire, first.q, w_last))
        # the beat after this one (index beat + 1) is the last when beat + 1 == len
        lastn.next(Mux(w_fire, lastn.q, add(beat.q, Bits(8)(1), 8) == head_len))
        wv, wd, room = _w_fifo(clk, rst, w_fire, BitsSignal.concat([w_last, p.in_data]),
                               p.m_axi_wready, "w_q")
        # lens_q's next valid and the W FIFO's room are selected by this cycle's beat, each
        # side a function of flops: the beat (the arbiter's in_valid, across the die) is the
        # last input, one LUT before in_ready_q. As have_next & room, the beat ran through the
        # last flag into lens_q_v's next-valid LUTs 33 columns away and back (in_valid ->
        # 2.48 ns -> lens_q -> 2.49 ns -> in_ready_q: the placed 8x8's critical path on seed 1
        # at 32abc82, 7.99 ns). have_next = (lens_q_v & not taken) | skid | the FIFO not empty
        more = ~lens_in_ready | ~lens.empty                # lens_q's skid entry, or the FIFO's
        in_ready_q.next(Mux(w_fire, room[0] & (have | more),
                            room[1] & ((have & ~w_last) | more)))
        p.m_axi_wdata = wd[0:DW]
        p.m_axi_wstrb = Bits(nb)((1 << nb) - 1)
        p.m_axi_wlast = wd[DW]
        p.m_axi_wvalid = wv
        p.in_ready = in_ready_q.q
        # B side: which burst ends a command
        lasts = Queue(Bits(1), depth, clk, rst, "lasts")
        lasts.push(split.burst_last, aw_fire)
        head_last = lasts.pop(b_fire)
        p.m_axi_bready = Bits(1)(1)
        p.done = b_fire & head_last
        p.busy = (cmd_waits | split.active | split.burst_valid |
                  (inflight != Bits(inflight.type.width)(0)))
        err = NamedReg(1, clk, rst, 0, name="wr_err")
        err.next(err.q | (b_fire & (p.m_axi_bresp != Bits(2)(0))))
        p.err = err.q
        p.bytes_written = _counter(clk, rst, w_fire, nb, "wr_bytes")

    return module(f"axi_dma_wr_d{DW}_a{AW}_b{max_burst}_o{max_outstanding}", io, build)


def make_axi_dma(data_width: int = 64, addr_width: int = 32, max_burst: int = 256,
                 max_outstanding: int = 4, beat_width: int = 16,
                 row_width: int = 16) -> type[Module]:
    """Read and write engines on one AXI4 master port ``m_axi_*``; their other ports are
    prefixed ``rd_`` / ``wr_`` (``rd_cmd_*``, ``rd_out_*``, ``wr_cmd_*``, ``wr_in_*``...)."""
    Rd = make_dma_read(data_width, addr_width, max_burst, max_outstanding, beat_width, row_width)
    Wr = make_dma_write(data_width, addr_width, max_burst, max_outstanding, beat_width,
                        row_width)
    ports = {"clk": Clock(), "rst": Reset()}
    rd_axi, wr_axi, rd_user, wr_user = [], [], [], []
    for cls, axi, user, pre in ((Rd, rd_axi, rd_user, "rd_"), (Wr, wr_axi, wr_user, "wr_")):
        for port in cls._builder.inputs:
            name, typ = port.name, port.type
            if name in ("clk", "rst"):
                continue
            (axi if name.startswith("m_axi") else user).append((name, "in"))
            ports[name if name.startswith("m_axi") else pre + name] = Input(typ)
        for port in cls._builder.outputs:
            name, typ = port.name, port.type
            (axi if name.startswith("m_axi") else user).append((name, "out"))
            ports[name if name.startswith("m_axi") else pre + name] = Output(typ)

    def build(p):
        for cls, axi, user, pre, inst in ((Rd, rd_axi, rd_user, "rd_", "rd"),
                                          (Wr, wr_axi, wr_user, "wr_", "wr")):
            kw = {"clk": p.clk, "rst": p.rst}
            for name, d in axi + user:
                if d == "in":
                    kw[name] = getattr(p, name if name.startswith("m_axi") else pre + name)
            i = cls(**kw, instance_name=inst)
            for name, d in axi + user:
                if d == "out":
                    setattr(p, name if name.startswith("m_axi") else pre + name,
                            getattr(i, name))

    return module(f"axi_dma_d{data_width}_a{addr_width}_b{max_burst}_o{max_outstanding}",
                  ports, build)
