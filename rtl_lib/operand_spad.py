"""Double-buffered operand scratchpad: ``lanes`` memories per bank, read one byte per lane.

``make_operand_spad(lanes, width, depth_words)`` -> module ``operand_spad_l{lanes}_w{width}_d{depth_words}``
------------------------------------------------------------------------------------------------------
The A (or B) operand store of the matmul unit (docs/accelerator-contract.md: LOAD, EXEC). Two banks;
each bank holds ``lanes`` memories ("lanes") of ``depth_words`` words of ``width`` bits (the AXI
data width W; ``AB = width/8`` int8 elements per word). Element k of a lane is byte ``k % AB``
(bits ``[8*(k%AB), 8*(k%AB)+8)``) of word ``k // AB``.

Ownership is the protocol of ``scratchpad.make_scratchpad``: the producer (load side) owns at
most one bank and the consumer (exec side) at most one; a bank passes producer -> consumer by a
*commit* and back by a *release*.

Producer ports: ``wr_ready`` (out: the producer owns an empty bank), ``wr_valid``, ``wr_lane``
(``lanes`` bits, one-hot: bit i writes lane i; no bit set drops the write), ``wr_word``
(log2 depth_words bits), ``wr_data`` (width): a word is taken on an edge where
``wr_valid & wr_ready`` and reaches the memory one edge later (write stage: address, data and
lane enable registered). ``commit``:
taken on an edge where ``commit & wr_ready``; the bank (including a write on that same edge) goes
to the consumer one edge later, when that write lands, and the producer moves to the other bank
then: ``wr_ready`` is low for the cycle after a commit, and after it only if the consumer still
holds the other bank.

Consumer ports: ``rd_avail`` (out: the consumer owns a committed bank), ``rd_valid``,
``rd_word`` (log2 depth_words bits), ``rd_byte`` (log2 AB bits): a read is issued on an edge
where ``rd_valid & rd_avail``; it reads word ``rd_word`` of every lane and selects byte
``rd_byte`` of each. ``rd_data`` (lanes x 8 bits, lane i in bits ``[8i, 8i+8)``) and
``rd_data_valid`` follow **three cycles later** (read latency 3: the memory's registered read
port, a register on the raw words, then the byte select, driven by a registered ``rd_byte``,
into a register; the second register keeps the block RAM's long clock-to-out off the select,
the third the select off the consumer's route). Every output is a register. One read per
cycle. ``rd_words`` (lanes x width, lane i in bits ``[i*width, (i+1)*width)``): the whole words
of the same read, valid with ``rd_data`` (the raw words, registered as often).
``rd_release`` (in): taken on an edge where ``rd_release & rd_avail``; the bank goes back to the
producer (a read issued on that same edge still returns the released bank's data: the producer
can write the bank one edge later at the earliest, after the memory has been read).

Commit/release latency: a commit on edge e makes ``rd_avail`` high after e + 1 if the consumer
was waiting (one edge later than ``make_scratchpad``: the write stage); a release on edge e
makes ``wr_ready`` high after e if the producer was waiting, and ``rd_avail`` (the other bank)
after e if it was committed (its commit reached the ownership by then).
``clk``, ``rst`` (synchronous, active high: both banks empty, producer at bank 0; memory contents
are not cleared). Every output is a register or logic of registers only.

Memories: one memory per lane of ``2 * depth_words`` words holding both banks (the bank is the
address MSB: the ownership protocol never lets the two ports into one bank), with one write
port and one read port. All lanes share the read address; a write enables one lane's memory.

- Default: a ``seq.hlmem`` with a registered read port, then a fabric register
  (``lane{i}_rd_q``); Yosys maps the memory to block RAM (see ``scratchpad``; the slow test
  checks the mapping).
- ``ebr=True`` (the matmul unit on an ECP5 target): DP16KD blocks instantiated with their
  output register on (``ecp5_ebr.ebr_ram``, read latency 2 inside the block; simulation needs
  ``ecp5_ebr.SIM_MODEL``). The module name ends in ``_ebr``. A lane deeper than one block
  (more than 16384 words) keeps the default.

Either way the read latency is ``RD_LATENCY`` and the ports behave the same.
"""

from __future__ import annotations

from pycde import Clock, Input, Module, Output, Reset
from pycde.constructs import Mux
from pycde.signals import BitsSignal
from pycde.types import Bits

from ..errors import ConfigError
from .bits import index_width, log2
from .common import NamedReg, dual_port_mem
from .ecp5_ebr import ebr_ram, ebr_supported
from .keep_ff import toggles
from .scratchpad import bank_ownership
from .stream import Stream, module

#: cycles from a read issued (edge e) to its ``rd_data`` (valid for edge e + RD_LATENCY)
RD_LATENCY = 3
#: the most lanes a scratchpad has (``wr_lane`` is one-hot, one bit per lane)
MAX_LANES = 256


def make_operand_spad(lanes: int, width: int, depth_words: int,
                      ebr: bool = False) -> type[Module]:
    """The operand scratchpad module class (see the module docstring); ``ebr``: the lane
    memories are ECP5 DP16KD blocks with their output register on (``ecp5_ebr``)."""
    if not isinstance(lanes, int) or lanes < 1 or lanes > MAX_LANES:
        raise ConfigError(f"operand scratchpad: lanes must be in 1..{MAX_LANES}, "
                          f"got {lanes!r}")
    if width < 8 or width % 8 or (width // 8) & (width // 8 - 1):
        raise ConfigError(f"operand scratchpad: width must be 8 times a power of two, got {width}")
    if depth_words < 2 or depth_words & (depth_words - 1):
        raise ConfigError(f"operand scratchpad: depth_words must be a power of two >= 2, "
                          f"got {depth_words}")
    AB = width // 8
    AW = log2(depth_words)
    use_ebr = ebr and ebr_supported(2 * depth_words)
    BW = index_width(AB)

    io = {"clk": Clock(), "rst": Reset(),
          **Stream(ready=1, valid=1, lane=lanes, word=AW, data=width).sink("wr"),
          "commit": Input(Bits(1)), "rd_avail": Output(Bits(1)), "rd_valid": Input(Bits(1)),
          "rd_word": Input(Bits(AW)), "rd_byte": Input(Bits(BW)),
          "rd_data": Output(Bits(lanes * 8)), "rd_data_valid": Output(Bits(1)),
          "rd_words": Output(Bits(lanes * width)),
          "rd_release": Input(Bits(1))}

    def build(p):
        clk, rst = p.clk, p.rst
        # -- bank ownership (the protocol of make_scratchpad), the commit one edge late ----
        # A write reaches the memory one edge after it is taken (the write stage below), so
        # the commit reaches the ownership one edge late too: the bank goes to the consumer
        # on the edge its last write lands, and the producer owns no bank in between.
        commit_q = NamedReg(1, clk, rst, 0, name="commit_q")
        own = bank_ownership(clk, rst, commit_q.q, p.rd_release)
        wr_bank = own.wr_bank
        # wr_ready (the ownership's, low too in the cycle after a commit) is one flop of its
        # own, set from the next values of both: the read router's destination ready starts
        # at a flop, not at an AND of two (spad_a.commit_q -> the AND -> the router's ready
        # mux -> its lane register's enable was the placed 8x8's critical path on seed 1 at
        # 4776858, 10.14 ns, 8.18 of it routing)
        wr_ready_q = NamedReg(1, clk, rst, 1, name="wr_ready_out_q")
        wr_ready, rd_avail = wr_ready_q.q, own.rd_avail
        commit = p.commit & wr_ready
        commit_q.next(commit)
        wr_ready_q.next(own.wr_ready_next & ~commit)

        # -- write stage: address, data and each lane's enable registered before the memory
        # write (the read data's fan-out to every lane's block RAM is then a cycle of its
        # own). The lane comes one-hot: each lane's enable is one AND of its bit, not a
        # compare of a lane number (the router's lane mux -> a 16-bit compare -> the lane
        # enables was the placed 8x8's critical path on all three seeds at de26887).
        wen = p.wr_valid & wr_ready
        waddr = BitsSignal.concat([wr_bank.q, p.wr_word]).reg(clk, name="wr_addr_q")
        wdata = p.wr_data.reg(clk, name="wr_data_q")
        # the read bank bit in a kept copy per lane (each flips on the release beside
        # itself): one rd_bank flop into every lane's block RAM address was a route across
        # the die on the placed 16x8 at 222f7a9 (spad_a.rd_bank -> an 8.54 ns route -> lane
        # 4's ADB13, 9.27 ns)
        rd_bank_c = toggles(clk, rst, own.release, lanes, "rd_bank_c")
        words = []
        for i in range(lanes):
            raddr = BitsSignal.concat([rd_bank_c[i], p.rd_word])
            lane_hit = (wen & p.wr_lane[i]).reg(
                clk, rst, rst_value=0, name=f"lane{i}_wen_q")
            if use_ebr:  # read latency 2 in the block: its output register
                words.append(ebr_ram(clk, f"lane{i}_mem", width, 2 * depth_words, waddr,
                                     wdata, lane_hit, raddr))
            else:  # read latency 1, then a fabric register
                word = dual_port_mem(clk, rst, f"lane{i}_mem", width, 2 * depth_words,
                                     waddr, wdata, lane_hit, raddr)
                words.append(word.reg(clk, name=f"lane{i}_rd_q"))
        rd_fire = p.rd_valid & rd_avail
        byte_sel = NamedReg(BW, clk, None, None, ce=rd_fire, name="rd_data_byte")
        byte_sel.next(p.rd_byte)
        rd_data_valid = NamedReg(1, clk, rst, 0, name="rd_data_valid_q")
        rd_data_valid.next(rd_fire)
        # Second read stage: the block RAM's output goes straight into a register (a block
        # RAM read has a long clock-to-out; the byte select after it set the accelerator's
        # Fmax), then the byte select. The register is the block's own output register with
        # ``ebr`` (the route from a NOREG block to a fabric register was the placed 8x8's
        # critical path on seed 1 at 29fc67b: 5.83 ns clock-to-out, 3.29 ns of route).
        byte_sel2 = NamedReg(BW, clk, None, None, name="rd_data_byte_q")
        byte_sel2.next(byte_sel.q)
        rd_data_valid2 = NamedReg(1, clk, rst, 0, name="rd_data_valid_q2")
        rd_data_valid2.next(rd_data_valid.q)
        byte_sel = byte_sel2
        # Third read stage: the byte select into registers, so what leaves the scratchpad
        # is flops (the block's output register -> the select -> the matmul unit's operand
        # FIFO slots, across the die, was the placed 16x8's critical path at d1cbf2b: 3.24
        # ns of route, 4 LUT levels, 2.19 ns); the whole words are registered with it
        rd_data_valid3 = NamedReg(1, clk, rst, 0, name="rd_data_valid_q3")
        rd_data_valid3.next(rd_data_valid2.q)
        lane_bytes, lane_words = [], []
        for i, word in enumerate(words):
            if AB == 1:
                sel = word
            else:
                sel = Mux(byte_sel.q, *[word[8 * e:8 * e + 8] for e in range(AB)])
            lane_bytes.append(sel.reg(clk, name=f"lane{i}_rd_byte_q"))
            lane_words.append(word.reg(clk, name=f"lane{i}_rd_word_q"))
        p.rd_data = BitsSignal.concat(list(reversed(lane_bytes))) if lanes > 1 \
            else lane_bytes[0]
        p.rd_data_valid = rd_data_valid3.q
        p.rd_words = BitsSignal.concat(list(reversed(lane_words))) if lanes > 1 \
            else lane_words[0]
        p.wr_ready = wr_ready
        p.rd_avail = rd_avail

    suffix = "_ebr" if use_ebr else ""
    return module(f"operand_spad_l{lanes}_w{width}_d{depth_words}{suffix}", io, build)
