"""The matmul unit: A/B operand scratchpads, the EXEC engine and the systolic core.

``make_matmul_unit(config)`` -> module ``matmul_unit_{R}x{C}``
--------------------------------------------------------------
R = config.rows, C = config.cols, W = config.axi_data_width, AB = W/8, ACC = config.acc_width.
Refused (ConfigError) unless C % AB == 0 (docs/accelerator-contract.md) and the config validates.

Inside: an A operand scratchpad (``operand_spad.make_operand_spad(R, W, spad_a_depth // AB)``:
R lanes of ``spad_a_depth`` int8 elements each), a B one (C lanes, ``spad_b_depth // AB``
words), both of DP16KD with the output register on for an ECP5 target (``ebr``; simulation
then needs ``sim_models(config)``), the EXEC engine below, a 4-entry operand FIFO and
``systolic.make_systolic_core``.

Ports (valid/ready: a transfer on a rising edge where both are high)
* ``clk``, ``rst`` (synchronous, active high; banks empty, no command, FIFO empty).
* A producer: ``a_wr_valid``, ``a_wr_ready`` (out), ``a_wr_lane`` (R bits, one-hot: bit i writes
  lane i), ``a_wr_word`` (log2(spad_a_depth/AB) bits), ``a_wr_data`` (W), ``a_commit``: the
  operand scratchpad's producer port (``wr_*``, ``commit``; see ``operand_spad``). ``b_*`` the
  same for B (C lanes, log2(spad_b_depth/AB) word bits).
* EXEC command: ``ex_k`` (16 bits, >= 1, its words inside the bank; 0 is not a valid K and
  would stream 65536 beats; the K of a whole tile, summed over a CHAIN run, is <= max_k),
  ``ex_a_word``, ``ex_b_word`` (16 bits; the low log2(depth words) bits are used), ``ex_rel_a``,
  ``ex_rel_b``, ``ex_chain``, ``ex_dw``, ``ex_valid``, ``ex_ready`` (out). ``ex_ready`` is high when no command is
  active or the active one issues its last read in this cycle (so commands run back to back).
* ``c_data`` (C x ACC), ``c_last``, ``c_valid`` (out), ``c_ready``: the core's C stream (R beats
  per tile, row r of C on beat r, ``c_last`` on beat R-1), tiles in EXEC order, through a
  register slice (``common.register_slice``, ``c_out_q``: each beat 1 cycle after the core
  offers it, full rate).
* ``busy`` (out): a command has been accepted and not finished (a command is active, or beats
  of it are still between the scratchpads and the core); low means every accepted command has
  handed all K beats to the core and released its banks.
* ``core_fire`` (out): a beat enters the core on this cycle's edge. ``stall`` (out):
  ``busy & ~core_fire``. ``err`` (out): the core's sticky ``err``.

EXEC semantics (docs/accelerator-contract.md): a command waits until the consumer owns a committed bank
of both A and B (``rd_avail`` of both scratchpads), then issues reads k = 0..K-1, one per cycle: A
beat k = byte k%AB of word ``a_word + k//AB`` of every A lane (word addresses wrap at the bank
depth), B beat k likewise from ``b_word``; ``last`` with k = K-1 unless CHAIN (``ex_chain``):
then no beat of the command is marked, the core goes on accumulating the same tile with the
next command's beats, and a run of EXECs with CHAIN on all but the last is one tile of the
summed K (the K splitting of ``backend/commands.py``). DW (``ex_dw``, depthwise; only in a build
with C == AB, ``systolic.has_depthwise``, else ignored): A beat k is the whole word
``a_word + k`` of every A lane (the A word steps every beat), B beat k as above, and the core
multiplies byte j of lane i's word into column j: C[i][j] = sum_k A_word_i[a_word + k][j] *
B_lane_j[k]. The operand FIFO then carries one word per A lane (R*W bits, byte 0 the selected
byte of a normal beat); the timing below is the same in both modes. The A bank is released on the
edge the last read is issued if REL_A, the B bank if REL_B (the read still returns the released
bank's data). So the tile is C[i][j] = sum_k A_lane_i[k] * B_lane_j[k].

Flow control and timing: the scratchpads' reads cannot be stalled (block RAM with a fixed read
latency, ``operand_spad.RD_LATENCY`` = 3), so reads are issued against credits: a read is issued
only if fewer than ``FIFO_DEPTH`` (5) beats are issued and not yet taken by the core; its data
goes into the operand FIFO RD_LATENCY edges after the issue, and the core takes the FIFO's head. The FIFO is 5
registers of R*8 + C*8 + 1 bits (R*W + C*8 + 2 with the depthwise mode) (not a ``lutram.Lutram``: a second Lutram of another width in
one design gets a uniquified module name, ``pycde_accel_lutram_1``, that ``lutram.sv`` does not
define). A beat issued on edge e can enter the core on edge e + 4 at the earliest
(``ISSUE_TO_CORE``), and its credit is free for the issue on edge e + 5: 5 credits sustain the
rate (one read per cycle over that round trip).
With ``c_ready`` high the reads and the core both run at one beat per cycle, and commands
follow each other without a gap (the next command's first read is issued on the edge after the
previous one's last read). So a run of EXECs with K_0..K_{T-1}, with both banks available and
``c_ready`` high, takes the core's ``run_cycles(R, C, ks)`` from the first beat into the core to
the last C beat, plus ``C_SLICE_LATENCY`` (1, the C slice); from the edge that accepts the first command to its first beat into the core
is ``ISSUE_TO_CORE + 1`` edges (accept, then the first read, then the core). Short tiles (K < R)
are slowed by the core's admission (one tile per R cycles) only: the FIFO absorbs it. The core is
built in its fed form: that admission (``systolic.LastBeatAdmission``) runs here, beside the
FIFO's head, with the same cycles as the core's own.

Registers hold the command (remaining count, word and byte counters, release flags, and the
issue decision's compares: ``cmd_rem_zero`` = no reads left after this one, ``cmd_credit`` =
a credit is free, each set from the next value of its counter, so the issue and ``ex_ready``
are logic of a few registers and no compare sits on them); every
output is a register or logic of registers (``c_*``: the C slice's registers).

Resources: ``bench/fmax.py`` reports them for the default config (the lane memories map to
DP16KD, the PEs to MULT18X18D). The operand FIFO's slots are registers, each loaded by
registered enables computed a cycle ahead, one kept copy (``keep_ff``) per ``SLOT_CHUNK`` bits of
the slot, so no single enable net reaches a whole slot; likewise each ``SLOT_CHUNK`` bits of the
head are picked by a kept copy of the read pointer (``fifo_rd_c<i>``).
"""

from __future__ import annotations

from pycde import Clock, Input, Module, Output, Reset
from pycde.constructs import Mux, Wire
from pycde.signals import BitsSignal
from pycde.types import Bits

from .. import contract
from ..config import AccelConfig
from ..errors import ConfigError
from .bits import count_width, index_width, inc, log2
from .common import NamedReg, register_slice
from .ecp5 import is_ecp5
from .keep_ff import kept_counter, replicated
from .operand_spad import RD_LATENCY, make_operand_spad
from .stream import Stream, module
from .systolic import LastBeatAdmission, has_depthwise, make_systolic_core, out_fifo_depth

#: entries of the operand FIFO in front of the core (= read credits; the contract's)
FIFO_DEPTH = contract.EXEC_CREDITS
#: edges from a read issued to the earliest edge its beat enters the core
ISSUE_TO_CORE = 1 + RD_LATENCY
#: edges the C stream's register slice adds between the core's C beat and ``c_*``
C_SLICE_LATENCY = 1
#: bits of an operand FIFO slot loaded by one copy of the slot's enable register
SLOT_CHUNK = 64
#: width of the command's K and word fields (the contract's EXEC fields)
CMD_WIDTH = contract.EXEC.field("K").bits


def spad_words(config: AccelConfig) -> tuple[int, int]:
    """Words per lane of the A and B operand scratchpads."""
    ab = config.axi_data_width // 8
    return config.spad_a_depth // ab, config.spad_b_depth // ab


def sim_models(config: AccelConfig) -> list:
    """The simulation-only sources of the matmul unit for ``config``: the ECP5 DSP model if
    its PEs instantiate MULT18X18D, the DP16KD model if a scratchpad instantiates DP16KD."""
    from . import ecp5, ecp5_ebr
    models = [ecp5.SIM_MODEL] if ecp5.uses_ecp5_dsp(config.target, config.data_width) else []
    if is_ecp5(config.target) and any(ecp5_ebr.ebr_supported(2 * n) for n in spad_words(config)):
        models.append(ecp5_ebr.SIM_MODEL)
    return models


def make_matmul_unit(config: AccelConfig) -> type[Module]:
    """The matmul unit module class for ``config`` (see the module docstring)."""
    config.validate()
    R, C = config.rows, config.cols
    W, ACC, DW = config.axi_data_width, config.acc_width, config.data_width
    AB = W // 8
    if DW != 8:
        raise ConfigError(f"matmul unit: data_width must be 8 (int8 operands), got {DW}")
    contract.check_beat_alignment(config, "matmul unit")
    a_words, b_words = spad_words(config)
    for name, n in (("spad_a_depth", a_words), ("spad_b_depth", b_words)):
        if n < 2:
            raise ConfigError(f"matmul unit: {name} must hold at least 2 words of {AB} bytes")
        if log2(n) > CMD_WIDTH:
            raise ConfigError(f"matmul unit: {name} words exceed the {CMD_WIDTH}-bit word field")
    AWA, AWB = log2(a_words), log2(b_words)
    BW = index_width(AB)
    ebr = is_ecp5(config.target)
    SpadA = make_operand_spad(R, W, a_words, ebr=ebr)
    SpadB = make_operand_spad(C, W, b_words, ebr=ebr)
    Core = make_systolic_core(config, fed=True)
    FW = index_width(FIFO_DEPTH)
    CNTW = count_width(FIFO_DEPTH)

    def ring_inc(v):
        """The next slot index after ``v``: the pointers wrap at FIFO_DEPTH (not a power
        of two: 5 credits for a read latency of 3), so the wrap is a compare of a flop."""
        if FIFO_DEPTH == 1 << FW:
            return inc(v)
        return Mux(v == Bits(FW)(FIFO_DEPTH - 1), inc(v), Bits(FW)(0))
    DWM = has_depthwise(config) and C > 1  # the depthwise mode (DW flag; C == AB)
    AE = R * W if DWM else R * 8   # FIFO entry's A: one word per lane in the depthwise build
    EW = AE + C * 8 + 1 + (1 if DWM else 0)  # FIFO entry: (dw,) last, B beat, A

    # the scratchpads' producer port (valid, ready, then the payload; see operand_spad)
    wr_a = Stream(valid=1, ready=1, lane=R, word=AWA, data=W)
    wr_b = Stream(valid=1, ready=1, lane=C, word=AWB, data=W)
    c_stream = Stream(data=C * ACC, last=1)
    io = {"clk": Clock(), "rst": Reset(),
          **wr_a.sink("a_wr"), "a_commit": Input(Bits(1)),
          **wr_b.sink("b_wr"), "b_commit": Input(Bits(1)),
          **Stream(k=CMD_WIDTH, a_word=CMD_WIDTH, b_word=CMD_WIDTH, rel_a=1, rel_b=1,
                   chain=1, dw=1).sink("ex"),
          **c_stream.source("c"),
          **{n: Output(Bits(1)) for n in ("busy", "core_fire", "stall", "err")}}

    def build(p):
        clk, rst = p.clk, p.rst
        issue = Wire(Bits(1), "issue")
        last_issue = Wire(Bits(1), "last_issue")
        rel_a = NamedReg(1, clk, None, None, name="cmd_rel_a")
        rel_b = NamedReg(1, clk, None, None, name="cmd_rel_b")
        chain = NamedReg(1, clk, None, None, name="cmd_chain")
        dwq = NamedReg(1, clk, None, None, name="cmd_dw")
        a_word = NamedReg(AWA, clk, None, None, name="cmd_a_word")
        b_word = NamedReg(AWB, clk, None, None, name="cmd_b_word")
        byte = NamedReg(BW, clk, None, None, name="cmd_byte")

        spad_a = SpadA(clk=clk, rst=rst, **wr_a.fields("wr", p, "a_wr"), commit=p.a_commit,
                       rd_valid=issue, rd_word=a_word.q, rd_byte=byte.q,
                       rd_release=last_issue & rel_a.q, instance_name="spad_a")
        spad_b = SpadB(clk=clk, rst=rst, **wr_b.fields("wr", p, "b_wr"), commit=p.b_commit,
                       rd_valid=issue, rd_word=b_word.q, rd_byte=byte.q,
                       rd_release=last_issue & rel_b.q, instance_name="spad_b")
        p.a_wr_ready = spad_a.wr_ready
        p.b_wr_ready = spad_b.wr_ready

        # -- the command and its read issue ------------------------------------------------
        active = NamedReg(1, clk, rst, 0, name="cmd_active")
        rem = NamedReg(CMD_WIDTH, clk, None, None, name="cmd_rem")  # reads left after this
        outstanding = NamedReg(CNTW, clk, rst, 0, name="outstanding")
        # the issue decision's two compares come from registers of their own, kept equal
        # to ``outstanding < FIFO_DEPTH`` and ``rem == 0`` (each computed from the next value)
        credit_q = NamedReg(1, clk, rst, 1, name="cmd_credit")
        last_q = NamedReg(1, clk, None, None, name="cmd_rem_zero")
        iss = active.q & spad_a.rd_avail & spad_b.rd_avail & credit_q.q
        issue.assign(iss)
        is_last = last_q.q
        last_issue.assign(iss & is_last)
        ex_ready = ~active.q | (iss & is_last)
        accept = p.ex_valid & ex_ready
        active.next(accept | (active.q & ~(iss & is_last)))
        rem_dec = (rem.q.as_uint() - 1).as_bits(CMD_WIDTH)
        k_m1 = (p.ex_k.as_uint() - 1).as_bits(CMD_WIDTH)
        rem.next(Mux(accept, Mux(iss, rem.q, rem_dec), k_m1))
        last_q.next(Mux(accept, Mux(iss, last_q.q, rem.q == Bits(CMD_WIDTH)(1)),
                        p.ex_k == Bits(CMD_WIDTH)(1)))
        rel_a.next(Mux(accept, rel_a.q, p.ex_rel_a))
        rel_b.next(Mux(accept, rel_b.q, p.ex_rel_b))
        chain.next(Mux(accept, chain.q, p.ex_chain))
        dwq.next(Mux(accept, dwq.q, p.ex_dw & Bits(1)(int(DWM))))
        word_step = iss & (byte.q == Bits(BW)(AB - 1)) if AB > 1 else iss
        a_step = (word_step | (iss & dwq.q)) if DWM else word_step  # DW: a word per beat
        a_inc = inc(a_word.q)
        b_inc = inc(b_word.q)
        a_word.next(Mux(accept, Mux(a_step, a_word.q, a_inc), p.ex_a_word[0:AWA]))
        b_word.next(Mux(accept, Mux(word_step, b_word.q, b_inc), p.ex_b_word[0:AWB]))
        if AB > 1:
            byte_inc = inc(byte.q)
            byte.next(Mux(accept, Mux(iss, byte.q, byte_inc), Bits(BW)(0)))
        else:
            byte.next(Bits(BW)(0))
        p.ex_ready = ex_ready

        # -- operand FIFO (read data arrives RD_LATENCY edges after the issue) ----------
        last_d = iss & is_last & ~chain.q         # CHAIN: the tile goes on in the next EXEC
        dw_d = iss & dwq.q
        for i in range(RD_LATENCY):
            last_d = last_d.reg(clk, rst, name=f"rd_last_d{i}")
            if DWM and i < RD_LATENCY - 1:
                dw_d = dw_d.reg(clk, rst, name=f"rd_dw_d{i}")
        if DWM:
            # the last stage in kept copies, one per A lane (its byte-0 select in every slot)
            # and one for the entry's flag: one flop before R lanes' selects over the slots
            # was the placed 16x8's critical path at 222f7a9 (rd_dw_d2 -> a 9.69 ns route ->
            # a slot's flop, 10.45 ns)
            dw_c = replicated(clk, rst, dw_d, R + 1, f"rd_dw_d{RD_LATENCY - 1}")
            dw_d = dw_c[R]
        push = spad_a.rd_data_valid
        wr = NamedReg(FW, clk, rst, 0, ce=push, name="fifo_wr")
        wr.next(ring_inc(wr.q))
        occ = NamedReg(CNTW, clk, rst, 0, name="fifo_occ")
        # the head's valid and last flags are flops of their own (the admission of a
        # tile's last beat is logic of them, not of the slot mux behind the read pointer),
        # set from candidates for "no pop" and "pop" computed from registers, selected by pop
        hv_q = NamedReg(1, clk, rst, 0, name="fifo_head_valid")
        hl_q = NamedReg(1, clk, None, None, name="fifo_head_last")
        head_valid = hv_q.q
        pop = Wire(Bits(1), "pop")
        rd = NamedReg(FW, clk, rst, 0, ce=pop, name="fifo_rd")
        rd.next(ring_inc(rd.q))
        if DWM:  # lane i: its word, byte 0 the selected byte unless DW (the core's a_data)
            a_lanes = []
            for i in range(R):
                wd = spad_a.rd_words[i * W:(i + 1) * W]
                byte0 = Mux(dw_c[i], spad_a.rd_data[8 * i:8 * i + 8], wd[0:8])
                a_lanes.append(BitsSignal.concat([wd[8:], byte0]))
            a_ent = BitsSignal.concat(list(reversed(a_lanes))) if R > 1 else a_lanes[0]
            entry = BitsSignal.concat([dw_d, last_d, spad_b.rd_data, a_ent])
        else:
            entry = BitsSignal.concat([last_d, spad_b.rd_data, spad_a.rd_data])
        # the slots' load enables are registers, computed a cycle ahead (the push is the
        # issue delayed RD_LATENCY edges, so its next value is the issue delayed one edge
        # less), one kept copy per SLOT_CHUNK bits of a slot: a slot is up to R*W + C*8 + 2
        # bits, and one enable net into all of them crossed the die (the placed 16x8's
        # critical path: the write pointer into a 1090-bit slot's enable, 4.4 ns of one route)
        push_ahead = iss
        for i in range(RD_LATENCY - 1):
            push_ahead = push_ahead.reg(clk, rst, rst_value=0, name=f"fifo_push_ahead{i}")
        wr_next = Mux(push, wr.q, ring_inc(wr.q))
        chunks = [(lo, min(lo + SLOT_CHUNK, EW)) for lo in range(0, EW, SLOT_CHUNK)]
        slots, slot_parts = [], []
        for i in range(FIFO_DEPTH):
            load = push_ahead & (wr_next == Bits(FW)(i))
            ens = replicated(clk, rst, load, len(chunks), f"fifo_slot{i}_load")
            parts = []
            for (lo, hi), en in zip(chunks, ens):
                part = NamedReg(hi - lo, clk, None, None, ce=en, name=f"fifo_slot{i}_{lo}")
                part.next(entry[lo:hi])
                parts.append(part.q)
            slot_parts.append(parts)
            slots.append(BitsSignal.concat(parts[::-1]) if len(parts) > 1 else parts[0])
        # the head's SLOT_CHUNK-bit parts each picked by a kept copy of the read pointer
        # (``fifo_rd_c<i>``), so no pointer net drives the select of the whole head: fifo_rd
        # -> a route across the array -> the core's skew and depthwise registers was a group
        # of placed 8x8 paths on seed 1 at 3ea0699 (7.14 ns, 6.14 of it routing; fpga.sta)
        rd_c = [kept_counter(clk, rst, pop, FW, 0, f"fifo_rd_c{c}", FIFO_DEPTH)
                for c in range(len(chunks))]
        head_parts = [_pick(rd_c[c], [slot_parts[i][c] for i in range(FIFO_DEPTH)])
                      for c in range(len(chunks))]
        head = BitsSignal.concat(head_parts[::-1]) if len(head_parts) > 1 else head_parts[0]
        LB = EW - 2 if DWM else EW - 1                 # the entry's last flag
        occ0 = occ.q == Bits(CNTW)(0)
        occ1 = occ.q == Bits(CNTW)(1)
        rd_up = ring_inc(rd.q)
        last_stay = Mux(occ0 & push, Mux(rd.q, *[sl[LB] for sl in slots]), last_d)
        last_pop = Mux(occ1 & push, Mux(rd_up, *[sl[LB] for sl in slots]), last_d)
        hl_q.next(Mux(pop, last_stay, last_pop))
        hv_q.next(push | ~(occ0 | (occ1 & pop)))
        head_last = hl_q.q
        c_in_ready = Wire(Bits(1), "c_slice_ready")
        if DWM:
            a_bytes = [head[i * W:i * W + 8] for i in range(R)]
            dw_in = {"a_dw": head[EW - 1], "a_words": head[0:AE]}
        else:
            a_bytes = [head[i * 8:i * 8 + 8] for i in range(R)]
            dw_in = {}
        # the take: the core is the fed form, so the head's last beat waits here, on an
        # admission beside the head (its ``last_ok`` flop, the head's flops), and the core
        # takes whatever is offered; the admission counts the core's C rows out from the core's
        # ``c_valid`` flop and the register slice's ready below
        adm = LastBeatAdmission(clk, rst, R, out_fifo_depth(R, C))
        fire = head_valid & ~rst.as_bits() & (~head_last | adm.ok)
        core = Core(clk=clk, rst=rst,
                    a_data=BitsSignal.concat(list(reversed(a_bytes))) if R > 1 else a_bytes[0],
                    a_last=head_last, a_valid=fire,
                    b_data=head[AE:AE + C * 8], b_last=head_last,
                    b_valid=fire, c_ready=c_in_ready, instance_name="core", **dw_in)
        # (the last beat's take written from the flops, not as ``fire & head_last``: the
        # take fans out to the read pointer copies by the core's skews, and the admission's
        # loop then ran through that net: matmul.last_ok -> the take -> a 2.56 ns route ->
        # the last take -> last_gap_ok -> last_ok, 7.73 ns on seed 1 at 9ccb201)
        adm.update(head_valid & head_last & adm.ok & ~rst.as_bits(), core.c_valid & c_in_ready)
        pop.assign(fire)
        occ_next = (occ.q.as_uint() + push.as_uint()).as_bits(CNTW)
        occ.next((occ_next.as_uint() - fire.as_uint()).as_bits(CNTW))
        out_next = (outstanding.q.as_uint() + iss.as_uint()).as_bits(CNTW)
        out_next = (out_next.as_uint() - fire.as_uint()).as_bits(CNTW)
        outstanding.next(out_next)
        credit_q.next((out_next.as_uint() < FIFO_DEPTH).as_bits())

        # the C stream leaves through a register slice: the core's output FIFO (a LUT RAM
        # read) and the store engine's beat buffer load are a cycle apart
        c_v, c_d, c_r = register_slice(clk, rst, core.c_valid,
                                       BitsSignal.concat([core.c_last, core.c_data]),
                                       p.c_ready, "c_out_q")
        c_in_ready.assign(c_r)
        p.c_data = c_d[0:C * ACC]
        p.c_last = c_d[C * ACC]
        p.c_valid = c_v
        p.err = core.err
        busy = active.q | (outstanding.q != Bits(CNTW)(0))
        p.busy = busy
        p.core_fire = fire
        p.stall = busy & ~fire

    return module(f"matmul_unit_{R}x{C}", io, build)


def _pick(sel, items):
    """``items[sel]``. An array index over items whose width is not a power of two is a
    multiply of the index by the width in Yosys, which it can map to a MULT18X18D (a 34-bit
    chunk of the 2x4's operand FIFO head took one, on its critical path); those get a tree of
    two-way muxes on the select's bits instead."""
    w = items[0].type.width
    if w & (w - 1) == 0:
        return Mux(sel, *items)
    level, bit = list(items), 0
    while len(level) > 1:
        level = [Mux(sel[bit], level[i], level[i + 1]) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
        bit += 1
    return level[0]


def emit_matmul_unit(config: AccelConfig, sv_dir):
    """Emit the matmul unit for ``config`` into ``sv_dir`` (with the core's extra sources and,
    on ECP5, the simulation model of its DSP); returns ``emit.EmittedSV``."""
    from pathlib import Path

    from . import keep_ff, lutram
    from .emit import emit_module

    unit = make_matmul_unit(config)
    return emit_module(unit, Path(sv_dir), sim_models=sim_models(config),
                       sources=[lutram.SOURCE, keep_ff.SOURCE])
