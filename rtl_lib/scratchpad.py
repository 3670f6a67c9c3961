"""Double-buffered scratchpad (ping-pong banks) and the width adapter in front of it.

``make_scratchpad(width, depth, tag_width=16)`` -> module ``scratchpad_w{width}_d{depth}``
---------------------------------------------------------------------------------------
Two banks of ``depth`` words of ``width`` bits. At any time the producer (DMA side) owns at
most one bank and the consumer (core side) at most one; a bank passes producer -> consumer by a
*commit* and back by a *release*, so the DMA fills tile t+1 while the core reads tile t.
Each bank is a simple dual-port memory (``seq.hlmem``: one write port, one registered read
port) that Yosys maps onto block RAM (ECP5: DP16KD; 1024 x 64 bits -> 4 DP16KD per bank).
Besides the DP16KD, most of the flip-flops and LUTs Yosys adds are its read-before-write emulation (``emulate_read_first``): the SV memory reads old
data when its two ports hit one address in one cycle, which DP16KD does not do across ports.
The ownership protocol below never reads and writes one bank in the same cycle, so a
``(* no_rw_check *)`` memory would not need it, but the hlmem lowering cannot attach that
attribute (left as a known cost).

Producer ports: ``wr_ready`` (out: the producer owns an empty bank), ``wr_valid``, ``wr_addr``
(log2 depth), ``wr_data``: a word is written on an edge where ``wr_valid & wr_ready``
(``wr_valid`` without ``wr_ready`` is ignored, i.e. valid/ready). ``commit_valid`` with
``commit_tag`` (tag_width bits of user metadata, e.g. the tile's K): taken on an edge where
``commit_valid & wr_ready``; the bank (including a write on that same edge) goes to the
consumer and the producer moves to the other bank (``wr_ready`` falls if that one is still
held by the consumer).

Consumer ports: ``rd_avail`` (out: the consumer owns a full bank), ``rd_tag`` (out: its commit
tag), ``rd_valid``, ``rd_addr``: a read is issued on an edge where ``rd_valid & rd_avail``;
``rd_data`` and ``rd_data_valid`` follow one cycle later (latency 1, one read per cycle).
``rd_release`` (in; ``release`` is an SV keyword): taken on an edge where
``rd_release & rd_avail``; the bank goes back to the
producer (a read issued on that same edge still returns the released bank's word).

Latency: a commit on edge e makes ``rd_avail`` high after e (the next cycle) if the consumer
was waiting; a release on edge e makes ``wr_ready`` high after e if the producer was waiting.
``clk``, ``rst`` (synchronous, active high: both banks empty, producer at bank 0; memory
contents are not cleared).

``make_width_adapter(in_width, out_width, whole=False)`` -> module ``width_adapter_{in}to{out}``
----------------------------------------------------------------------------------------------
A valid/ready stream ``in_data``/``in_last``/``in_valid``/``in_ready`` re-cut into
``out_data``/``out_last``/``out_valid``/``out_ready`` for an integer ratio of widths, LSB first
(little-endian, as DRAM bytes come off an AXI bus: byte i of a beat is bits [8i, 8i+8)):
* wider in (split, e.g. 64-bit AXI beats -> 32-bit rows of four int8 operands): each input beat
  gives ``in/out`` output beats, the lowest part first; ``out_last`` on the last part of a beat
  with ``in_last``. 1 output beat/cycle; the input is taken with the last part (no buffer).
* wider out (pack, e.g. 64 -> 128 for a 16-lane array): ``out/in`` input beats are gathered,
  the first into the lowest part; an ``in_last`` beat ends the output beat early (the missing
  parts are 0). The output is a register: 1 output beat per ``out/in`` cycles, latency 1.
  ``whole=True`` (module ``..._whole``): every output beat is whole (``in_last`` only ever on
  the last part of one), so no part is ever cleared and each part register's load is its
  enable alone. The read router's command packer is one: clearing the parts on a beat's first
  input put the route slot's destination bit -> the take -> the clear into the part
  registers' synchronous reset, the placed 8x8's critical path on seed 3 at a8b3ab2 (8.27 ns,
  6.38 of it routing).
* equal widths: wires.
"""

from __future__ import annotations

from pycde import Clock, Input, Module, Output, Reset
from pycde.constructs import Mux
from pycde.signals import BitsSignal
from pycde.types import Bits

from ..errors import ConfigError
from .bits import index_width, inc, log2
from .common import NamedReg, dual_port_mem
from .stream import Stream, module


class BankOwnership:
    """The ping-pong handoff of two banks (registers ``bank{0,1}_full``, ``wr_bank``,
    ``rd_bank``): ``wr_ready`` (the producer owns an empty bank), ``rd_avail`` (the consumer
    owns a full one), and the ``commit``/``release`` actually taken this cycle;
    ``wr_ready_next``: ``wr_ready``'s next value (a user can keep a flop of its own from it)."""

    def __init__(self, wr_bank, rd_bank, wr_ready, rd_avail, commit, release, wr_ready_next):
        self.wr_bank, self.rd_bank = wr_bank, rd_bank
        self.wr_ready, self.rd_avail = wr_ready, rd_avail
        self.commit, self.release = commit, release
        self.wr_ready_next = wr_ready_next


def bank_ownership(clk, rst, commit_req, release_req) -> BankOwnership:
    """The bank ownership protocol of :func:`make_scratchpad` (see the module docstring),
    shared by every double-buffered memory: a commit is taken when the producer owns an empty
    bank, a release when the consumer owns a full one."""
    full = [NamedReg(1, clk, rst, 0, name=f"bank{b}_full") for b in range(2)]
    wr_bank = NamedReg(1, clk, rst, 0, name="wr_bank")
    rd_bank = NamedReg(1, clk, rst, 0, name="rd_bank")
    # wr_ready and rd_avail are flops of their own, computed from the next bank state:
    # they gate the read router's beats and the matmul unit's read issue, whose logic
    # then starts from one flop instead of a bank-select mux
    wr_ready_q = NamedReg(1, clk, rst, 1, name="wr_ready_q")
    rd_avail_q = NamedReg(1, clk, rst, 0, name="rd_avail_q")
    wr_ready, rd_avail = wr_ready_q.q, rd_avail_q.q
    commit = commit_req & wr_ready
    release = release_req & rd_avail
    wr_bank_next = wr_bank.q ^ commit

    def next_state(rel: bool):
        """The banks' next state if the consumer releases (``rel``) or not: flops and the
        commit only."""
        full_next = []
        for b in range(2):
            set_b = commit & (wr_bank.q == Bits(1)(b))
            keep_b = full[b].q & ~(rd_avail & (rd_bank.q == Bits(1)(b))) if rel else full[b].q
            full_next.append(keep_b | set_b)
        rd_bank_next = rd_bank.q ^ rd_avail if rel else rd_bank.q
        return (full_next[0], full_next[1], rd_bank_next,
                ~Mux(wr_bank_next, full_next[0], full_next[1]),
                Mux(rd_bank_next, full_next[0], full_next[1]))

    # the release request is the late input (the matmul unit's issue decision, then its last
    # read: cmd_active -> issue -> release -> the bank-full next values -> wr_ready_out_q ran
    # six LUT levels, the placed 8x8's critical path on seed 3 at 569ab3f, 8.81 ns): each next
    # value is computed both ways from flops and the commit, and the request only selects
    full0, full1, rd_bank_n, wr_ready_next, rd_avail_next = (
        Mux(release_req, a, b) for a, b in zip(next_state(False), next_state(True)))
    full[0].next(full0)
    full[1].next(full1)
    wr_bank.next(wr_bank_next)
    rd_bank.next(rd_bank_n)
    wr_ready_q.next(wr_ready_next)
    rd_avail_q.next(rd_avail_next)
    return BankOwnership(wr_bank, rd_bank, wr_ready, rd_avail, commit, release, wr_ready_next)


def make_scratchpad(width: int, depth: int, tag_width: int = 16) -> type[Module]:
    """The double-buffered scratchpad module class (see the module docstring)."""
    if width < 1:
        raise ConfigError(f"scratchpad: width must be >= 1, got {width}")
    if depth < 2 or depth & (depth - 1):
        raise ConfigError(f"scratchpad: depth must be a power of two >= 2, got {depth}")
    if tag_width < 1:
        raise ConfigError(f"scratchpad: tag_width must be >= 1, got {tag_width}")
    AW = log2(depth)

    io = {"clk": Clock(), "rst": Reset(),
          **Stream(ready=1, valid=1, addr=AW, data=width).sink("wr"),
          "commit_valid": Input(Bits(1)), "commit_tag": Input(Bits(tag_width)),
          "rd_avail": Output(Bits(1)), "rd_tag": Output(Bits(tag_width)),
          "rd_valid": Input(Bits(1)), "rd_addr": Input(Bits(AW)), "rd_data": Output(Bits(width)),
          "rd_data_valid": Output(Bits(1)), "rd_release": Input(Bits(1))}

    def build(p):
        clk, rst = p.clk, p.rst
        own = bank_ownership(clk, rst, p.commit_valid, p.rd_release)
        wr_bank, rd_bank = own.wr_bank, own.rd_bank
        wr_ready, rd_avail, commit = own.wr_ready, own.rd_avail, own.commit
        tags = []
        for b in range(2):
            tag = NamedReg(tag_width, clk, None, None, ce=commit & (wr_bank.q == Bits(1)(b)),
                           name=f"bank{b}_tag")
            tag.next(p.commit_tag)
            tags.append(tag.q)
        p.rd_tag = Mux(rd_bank.q, tags[0], tags[1])

        wen = p.wr_valid & wr_ready
        outs = []
        for b in range(2):
            outs.append(dual_port_mem(clk, rst, f"bank{b}_mem", width, depth, p.wr_addr,
                                      p.wr_data, wen & (wr_bank.q == Bits(1)(b)), p.rd_addr))
        rd_fire = p.rd_valid & rd_avail
        rd_sel = NamedReg(1, clk, None, None, ce=rd_fire, name="rd_data_bank")
        rd_sel.next(rd_bank.q)
        rd_data_valid = NamedReg(1, clk, rst, 0, name="rd_data_valid_q")
        rd_data_valid.next(rd_fire)
        p.rd_data = Mux(rd_sel.q, outs[0], outs[1])
        p.rd_data_valid = rd_data_valid.q
        p.wr_ready = wr_ready
        p.rd_avail = rd_avail

    return module(f"scratchpad_w{width}_d{depth}", io, build)


def make_width_adapter(in_width: int, out_width: int, whole: bool = False) -> type[Module]:
    """The width adapter module class (see the module docstring)."""
    big, small = max(in_width, out_width), min(in_width, out_width)
    if small < 1 or big % small:
        raise ConfigError(f"width adapter: {in_width} -> {out_width} is not an integer ratio")
    n = big // small
    CW = index_width(n)

    adapter = {"clk": Clock(), "rst": Reset(), **Stream(data=in_width, last=1).sink("in"),
               **Stream(data=out_width, last=1).source("out")}

    def build(p):
        clk, rst = p.clk, p.rst
        if n == 1:
            Stream(data=in_width, last=1).forward(p, "out", p, "in")
            p.in_ready = p.out_ready
            return
        if in_width > out_width:  # split
            part = NamedReg(CW, clk, rst, 0, name="part")
            at_end = part.q == Bits(CW)(n - 1)
            fire = p.in_valid & p.out_ready
            nxt = inc(part.q)
            part.next(Mux(fire, part.q, Mux(at_end, nxt, Bits(CW)(0))))
            pieces = [p.in_data[i * small:(i + 1) * small] for i in range(n)]
            sel = pieces[0]
            for i in range(1, n):
                sel = Mux(part.q == Bits(CW)(i), sel, pieces[i])
            p.out_data = sel
            p.out_last = p.in_last & at_end
            p.out_valid = p.in_valid
            p.in_ready = p.out_ready & at_end
            return
        # pack
        part = NamedReg(CW, clk, rst, 0, name="part")
        out_valid = NamedReg(1, clk, rst, 0, name="out_valid_q")
        out_last = NamedReg(1, clk, None, None, name="out_last_q")
        can_take = ~out_valid.q | p.out_ready
        fire = p.in_valid & can_take
        at_end = part.q == Bits(CW)(n - 1)
        closes = fire & (at_end | p.in_last)
        nxt = inc(part.q)
        part.next(Mux(fire, part.q, Mux(closes, nxt, Bits(CW)(0))))
        out_valid.next(closes | (out_valid.q & ~p.out_ready))
        out_last.next(Mux(closes, out_last.q, p.in_last))
        # lane registers: lane i takes in_data when part == i; lanes above a short
        # (in_last) beat are cleared when the beat starts (part == 0)
        lanes = []
        for i in range(n):
            lane = NamedReg(small, clk, None, None, name=f"lane{i}")
            here = fire & (part.q == Bits(CW)(i))
            if whole:
                lane.next(Mux(here, lane.q, p.in_data))
            else:
                starts = fire & (part.q == Bits(CW)(0))
                lane.next(Mux(here, Mux(starts, lane.q, Bits(small)(0)), p.in_data))
            lanes.append(lane.q)
        p.out_data = BitsSignal.concat(list(reversed(lanes)))
        p.out_last = out_last.q
        p.out_valid = out_valid.q
        p.in_ready = can_take

    suffix = "_whole" if whole and out_width > in_width else ""
    return module(f"width_adapter_{in_width}to{out_width}{suffix}", adapter, build)
