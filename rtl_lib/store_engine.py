"""The STORE engine: C tiles from the systolic core -> bias + requantize (+ReLU) -> DMA write.

``make_store_engine(config, requant)`` -> module ``store_engine_{R}x{C}``, where ``requant`` is
the streaming module of the lowered per-channel requantize kernel (R*C/L elements per run, L =
``config.lanes``; the engine instantiates it L times), a parameter: the engine does not know
how it is made. ``pycde_accel.assemble`` makes it::

    kernel, lowered = lower_accel_kernel(requant_kernel(config), out)  # CIRCT, static route
    #   (pipeline dialect), wide multiplies and variable shifts split
    requant = stream_module(system, kernel, lowered)   # inside emit_module(..., prepare=fn)

``assemble.emit_store_engine(config, sv_dir)`` does all of it (``assemble.store_engine_prepare``
is the ``prepare`` hook for a bigger design). The requantization arithmetic (SaturatingRounding-
DoublingHighMul, RoundingDivideByPOT, clamp to int8) is entirely the CIRCT-generated kernel;
this module adds the bias, ReLU, the parameter memory, the packing of bytes into AXI beats, the
row dropping and the DMA command.

Semantics (the spec's STORE op; ``R = rows``, ``C = cols``, ``AB = axi_data_width / 8``)
--------------------------------------------------------------------------------------
For each command, the next C tile (R beats of the core's C stream) is taken; element (r, j)::

    x = wrap32(wrap32(acc[r][j]) + bias[p])        # two's complement, int32 wrap
    y = requantize(x, m0[p], shift[p])            # the kernel: int8 in [-128, 127]
    y = max(y, 0) if relu                          # == frontend requantize(..., relu=True)
    p = p_index if per_tensor else p_index + j     # parameter record (mod spad_c_depth)

(``wrap32(acc)``: the low 32 bits of the accumulator, sign-extended if ``acc_width < 32``; the
same as ``backend.executor``. The frontend's reference never wraps: it raises
``AccumulatorOverflow`` where this hardware wraps, so for every program it accepts the two agree.)
Row r is C bytes, byte j at bits ``[8*(j % AB), +8)`` of beat ``j // AB`` (little-endian), i.e.
``C / AB`` beats; rows ``0 .. rows-1`` are written, rows ``>= rows`` are computed and dropped.

Ports (valid/ready streams; a beat moves on an edge where both are high; senders hold a beat
until it is taken)
----------------------------------------------------------------------------------------
* ``clk``, ``rst`` (synchronous, active high: queues, counters and the kernel emptied;
  the parameter memory is not cleared).
* C stream in: ``c_data`` (C lanes x acc_width, lane j = C[r][j] signed), ``c_last``,
  ``c_valid``, ``c_ready`` (out): the core's output, R beats per tile. The engine counts the
  beats itself (``c_last`` is not needed; it marks beat R-1 as the core guarantees). A beat is
  only taken for a command already accepted.
* Parameter writes: ``p_wr_valid``, ``p_wr_index`` (32: word 4*r + w of record r, w = 0 bias,
  1 m0, 2 shift, 3 zero: ignored), ``p_wr_data`` (32), ``p_wr_ready`` (out, always high).
  ``spad_c_depth`` records; the record index wraps modulo the depth. A write must not happen
  while the engine is busy (the spec's rule: a LOAD to P waits until the store engine is idle).
* Store command: ``st_addr`` (axi_addr_width), ``st_rows`` (16: 1..R, not checked),
  ``st_row_mask`` (R: bit r = row r is written, ``row_mask(st_rows, R)``; the sender decodes
  it, so the engine's intake has no compare),
  ``st_stride`` (32), ``st_p_index`` (16), ``st_relu``, ``st_per_tensor``, ``st_valid``,
  ``st_ready`` (out, a register: low in reset and on the first edge after it). Up to
  ``QUEUE`` commands are queued inside (st_ready low when full).
* DMA write command out (``axi_dma_wr``'s command form): ``wc_addr`` (axi_addr_width),
  ``wc_beats`` (16, = C/AB), ``wc_rows`` (16, = st_rows), ``wc_stride`` (axi_addr_width, the
  low bits of st_stride), ``wc_valid`` (out), ``wc_ready``. Offered from the cycle after the
  command is accepted, i.e. before any of its data.
* DMA write data out: ``wd_data`` (axi_data_width), ``wd_valid`` (out), ``wd_ready``: exactly
  ``rows * C/AB`` beats per command, in command order; ``wd_valid`` is a register (a 2-entry
  register slice, ``wd_q``), held (with its data) until taken.
* ``busy`` (out): a command accepted whose last byte has not yet left on ``wd`` (nor its
  ``wc`` command), or whose tile's elements are still in the pipeline (the dropped rows >=
  valid rows of a last tile leave the ~30-stage kernel after the last data beat): while busy
  the parameter memory is still being read.

Pipeline and throughput
-----------------------
``L = config.lanes`` lanes (``store_lanes``: the largest power of two <= it dividing C and AB),
each with its own copy of the parameter memory (one read port per lane; every write goes to
all copies) and its own instance of the kernel (``R*C/L`` elements per run); element (r, j)
goes to lane ``j % L``, so the lanes of one cycle are a group of L consecutive bytes of a row.
core beat (-> hold register while the beat buffer is busy: ``c_ready`` is ``~hold_valid``, a
register, so the element pipeline's stall never reaches the core) -> beat buffer (C
accumulators, read out one group of L per cycle) -> S1 (parameter memory read, latency 1:
``seq.hlmem`` x3 per lane, 32-bit bias/m0/shift, block RAM) -> S2 (registers: acc, bias,
m0, shift; x = acc + bias is added after them, so no logic follows the block RAMs; on an ECP5
target bias, m0 and shift are the DP16KD blocks' own output registers, ``param_ebr``: a block
RAM's data without it leaves the block 5.8 ns after the clock, and its route to S2 was the
placed 8x8's critical path on seeds 2 and 3 at bacd2b1; simulation then needs
``sim_models(config)``; S1 and S2 never stall: a group enters S1 only while every lane's S3
queue has a credit for it, ``s3_room``, a flop) -> S3 (per lane, a queue of ``LANE_CREDITS``
words of x, m0, shift that S2 pushes unasked, then a register slice: its kernel's input
stall ends there, and reaches S0 only as the registered pops that return the credits) -> L kernels
(``x``/``m0``/``shift`` element streams, one start token per tile each; a kernel whose class
says ``lockstep_join``, the static route's, takes the three in one cycle, so a slice is taken
on its kernel's ``x_ready``, with no per-input flags) -> Y (one register
slice per lane on the kernel's ``y``: the kernel's ``y_ready`` is its slice's ``in_ready``
flop) -> the join (every lane's Y slice valid: one flop, ``y_all_valid``, set from the
slices' next valids; the lanes are fed and drained together, so
they run in lockstep, at most two elements apart) -> ReLU -> byte packer (L bytes per
cycle) -> ``wd`` register. No combinational path runs from one lane's kernel to another's:
the joins are ANDs of slice flops. L elements per cycle end to end, so a tile occupies the engine
``R*C/L`` cycles; tiles are not serialized: a kernel (a fixed-latency pipeline, ~13 stages)
takes the next run's start token with the last element of the current run, so tile t+1's
elements enter it while tile t's results drain and its bytes are written; up to ``QUEUE`` = 4
commands are queued so that short tiles keep the pipeline full. Measured (Verilator, nothing
gated, all rows valid): T tiles take about ``T*R*C/L + 46`` cycles from the first C beat taken
to the last data beat taken (4x8: 256 elements in 292 cycles at L=1, 164 at L=2, 110 at L=4;
8x8 with L=8: 512 in 110; the constant is the fill and drain), but a tile takes at least about
4 cycles (2x4 at L=4, 2-element runs: 8 tiles in 81). A full-rate C tile from the core (one
every ``max(K, R)`` cycles) is faster than this only when ``K < R*C/L``; the core then waits
on ``c_ready`` (its output FIFO holds the rest).

Timing structure: no element stall chain runs through S1 and S2 (credits, above); the beat
buffer's own stall stops at the hold register at ``c_ready``, a kernel's at its S3 slice and
queue, the output stall at the per-lane Y slices. Each ``BB_CHUNK`` bits of the beat buffer
and of the hold register are loaded by a decision made from their own kept copies
(``keep_ff``) of its flops. ``bench/fmax.py`` measures the clock it reaches.
"""

from __future__ import annotations

from pycde import Clock, Module, Output, Reset
from pycde.constructs import Mux, Wire
from pycde.signals import BitsSignal
from pycde.types import Bits

from .. import contract
from ..config import AccelConfig
from ..errors import ConfigError
from ..queue import Queue
from .axi_dma import write_ports
from .bits import add, inc, index_width, up_down
from .common import NamedReg, dual_port_mem, register_slice
from .ecp5 import is_ecp5
from .ecp5_ebr import SIM_MODEL as EBR_SIM_MODEL
from .ecp5_ebr import ebr_ram, ebr_supported
from .keep_ff import replicated
from .stream import Stream, module

#: the parameter memories' widest DP16KD mode on ECP5 (``ecp5_ebr.ebr_ram``): 18 bits, so the
#: read data and its output register are port B's alone
PARAM_EBR_WIDEST = 18


def param_ebr(config: AccelConfig) -> bool:
    """Whether the parameter memories are DP16KD blocks with their output register on (an
    ECP5 target, a depth one block holds)."""
    return is_ecp5(config.target) and ebr_supported(config.spad_c_depth)


def sim_models(config: AccelConfig) -> list:
    """The simulation-only sources of the store engine for ``config``: the DP16KD model if its
    parameter memories instantiate DP16KD."""
    return [EBR_SIM_MODEL] if param_ebr(config) else []

#: words each lane's S3 queue holds, and the credits S0 issues against it: a group issued on
#: edge t is in S1 after t, in S2 after t+1, in the queue after t+2, leaves it on t+3 at the
#: earliest, and its registered pop frees the credit for the issue on edge t+5, so 5 credits
#: keep one group per cycle; one more is slack
LANE_CREDITS = 6
#: bits of the beat buffer (and of the hold register) loaded by one kept copy of its load
#: decision's flops
BB_CHUNK = 64
#: commands queued inside the engine (each of the three command queues; the contract's)
QUEUE = contract.STORE_QUEUE
#: the kernel's element width
XW = 32


def _fit(v, w):
    """``v`` (bits) zero-extended or truncated to ``w`` bits."""
    return v.as_uint(w).as_bits(w) if v.type.width != w else v


def _sext32(v):
    """Low 32 bits of a signed value, sign-extended if it is narrower."""
    w = v.type.width
    if w >= XW:
        return v[0:XW]
    return BitsSignal.concat([BitsSignal.concat([v[w - 1]] * (XW - w)), v])


def row_mask(rows, R: int):
    """The ``st_row_mask`` of a command whose row count is ``rows`` (bits): bit r = (r < rows),
    R bits. The top decodes it on the way into the command FIFO (``dispatch.EngineDecode``)."""
    kept = [(rows.as_uint() > Bits(rows.type.width)(r).as_uint()).as_bits() for r in range(R)]
    return BitsSignal.concat(kept[::-1]) if R > 1 else kept[0]


def row_mask_value(rows: int, R: int) -> int:
    """:func:`row_mask` as an integer, for testbenches and drivers."""
    return (1 << min(max(rows, 0), R)) - 1


def check_config(config: AccelConfig) -> None:
    config.validate()
    contract.check_beat_alignment(config, "config")
    if config.data_width != 8:
        raise ConfigError(f"store engine: int8 outputs only, data_width={config.data_width}")


def make_store_engine(config: AccelConfig, requant) -> type[Module]:
    """The store engine module class for ``config``; ``requant``: the streaming module class
    (``lowering.stream.stream_module``) of ``pycde_accel.assemble.requant_kernel(config)``."""
    check_config(config)
    R, C = config.rows, config.cols
    ACC, W, AW = config.acc_width, config.axi_data_width, config.axi_addr_width
    AB = W // 8
    BPR = C // AB
    D = config.spad_c_depth
    PA = index_width(D)
    EBR = param_ebr(config)
    L = config.lanes                 # lanes: elements per cycle, a power of two dividing AB
    G = C // L                       # groups of L elements per row
    GB = AB // L                     # groups per AXI beat
    LL = (L - 1).bit_length()
    LGB = (GB - 1).bit_length()      # low bits of the group index that index a beat's group
    JW = index_width(G)
    RW = index_width(R)
    sfx = [""] if L == 1 else [f"_{l}" for l in range(L)]
    OW = index_width(3 * QUEUE + 2)    # outstanding command counter width

    io = {"clk": Clock(), "rst": Reset(), **Stream(data=C * ACC, last=1).sink("c"),
          **Stream(valid=1, index=32, data=32, ready=1).sink("p_wr"),
          **Stream(addr=AW, rows=16, row_mask=R, stride=32, p_index=16, relu=1,
                   per_tensor=1).sink("st"),
          **write_ports(AW, W), "busy": Output(Bits(1))}

    def build(p):
        clk, rst = p.clk, p.rst
        one, zero = Bits(1)(1), Bits(1)(0)
        not_rst = ~rst.as_bits()

        # -- command intake: three queues (DMA command, feed side, output side) ----------
        wcq = Queue(Bits(2 * AW + 16), QUEUE, clk, rst, "wc_queue")
        # the feed side's queue holds (per tensor, each lane's first record): lane l's record
        # of the command's first beat, p + l (p per tensor), added as the command enters, so
        # the parameter read addresses load from the queue's read with no adder after it
        # (the feed queue's LUT-RAM read -> the record adder's carry chain -> the address
        # muxes -> param_raddr_3 was the placed 8x8's critical path on seed 5 at 7a06fda,
        # 7.77 ns)
        fq = Queue(Bits(L * PA + 1), QUEUE, clk, rst, "feed_queue")
        # the output side's queue holds (relu, row mask): bit r of the mask = row r is kept
        # (r < rows), so the output's row test is a bit select of a flop, not a compare. The
        # mask comes in with the command (``st_row_mask``, decoded before the engine's
        # command queue): st_rows' head flops -> five LUTs of ``st_rows > r`` -> out_queue's
        # LUT-RAM write data was the placed 8x8's critical path on seed 1 at 35bd50c (8.48 ns)
        oq = Queue(Bits(R + 1), QUEUE, clk, rst, "out_queue")
        # st_ready is a flop of its own, set from the three queues' next fill flags (low in
        # reset and on the first edge after it), so the command's take is one AND of flops:
        # store_head_v -> the three full flags' AND -> the take -> a queue's full flag was
        # a placed 8x8 path on both seeds at 2cef53c (7.33 / 7.92 ns; fpga.sta)
        st_ready_q = NamedReg(1, clk, rst, 0, name="st_ready_q")
        st_ready = st_ready_q.q
        st_fire = p.st_valid & st_ready
        p.st_ready = st_ready
        wcq.push(BitsSignal.concat([_fit(p.st_stride, AW), p.st_rows, p.st_addr]), st_fire)
        p0 = _fit(p.st_p_index, PA)
        recs = [Mux(p.st_per_tensor, add(p0, Bits(PA)(l % (1 << PA)), PA), p0) for l in range(L)]
        fq.push(BitsSignal.concat([p.st_per_tensor] + recs[::-1]), st_fire)
        oq.push(BitsSignal.concat([p.st_relu, p.st_row_mask]), st_fire)
        st_ready_q.next(~(wcq.full_next | fq.full_next | oq.full_next))

        wc_valid = ~wcq.empty
        wc_head = wcq.pop(wc_valid & p.wc_ready)
        p.wc_valid = wc_valid
        p.wc_addr = wc_head[0:AW]
        p.wc_rows = wc_head[AW:AW + 16]
        p.wc_stride = wc_head[AW + 16:2 * AW + 16]
        p.wc_beats = Bits(16)(BPR)

        # -- parameter memory: bias, m0, shift, one 32-bit memory each, one copy per lane ----
        p.p_wr_ready = one
        rec = p.p_wr_index[2:2 + PA] if 2 + PA <= 32 else _fit(p.p_wr_index[2:32], PA)
        word = p.p_wr_index[0:2]
        raddr = [Wire(Bits(PA), f"param_raddr{sfx[l]}") for l in range(L)]
        # every lane's queue has room for one more group (see S3)
        s3_room = NamedReg(1, clk, rst, 1, name="s3_room")

        def param_mem(nm, w, l):
            """The ``nm`` memory of lane ``l``: its read is S1 (the address register); on
            ECP5 its DP16KD output register is S2's register too, else S2 registers the
            inferred block RAM's read data."""
            args = (f"param_{nm}{sfx[l]}", 32, D, rec, p.p_wr_data,
                    p.p_wr_valid & (word == Bits(2)(w)), raddr[l])
            if EBR:
                return ebr_ram(clk, *args, widest=PARAM_EBR_WIDEST)
            return dual_port_mem(clk, rst, *args)

        params = [[param_mem(nm, w, l) for w, nm in enumerate(("bias", "m0", "shift"))]
                  for l in range(L)]

        # -- S0: the beat buffer, read out one group of L elements per cycle ----------------
        bb_v = NamedReg(1, clk, rst, 0, name="bb_valid")
        bb_j = NamedReg(JW, clk, rst, 0, name="bb_col")
        bb_pt = NamedReg(1, clk, None, None, name="bb_per_tensor")
        f_row = NamedReg(RW, clk, rst, 0, name="feed_row")
        bb_last_j = bb_j.q == Bits(JW)(G - 1) if G > 1 else one
        s0_move = bb_v.q & s3_room.q  # group bb_j moves into S1
        bb_free = ~bb_v.q | (s0_move & bb_last_j)
        f_head = fq.output
        # a C beat taken while the beat buffer is busy waits in the hold register, so
        # that c_ready is a function of registers only (it does not wait on the element
        # pipeline's stall chain, which would run on into the core's output FIFO)
        hold_v = NamedReg(1, clk, rst, 0, name="hold_valid")
        c_ready = not_rst & ~fq.empty & ~hold_v.q
        c_fire = p.c_valid & c_ready
        p.c_ready = c_ready
        load_bb = bb_free & (hold_v.q | c_fire)
        to_hold = c_fire & ~bb_free
        hold_v_next = to_hold | (hold_v.q & ~load_bb)
        hold_v.next(hold_v_next)
        h_pt = NamedReg(1, clk, None, None, ce=to_hold, name="hold_per_tensor")
        h_pt.next(f_head[L * PA])
        f_last_row = f_row.q == Bits(RW)(R - 1) if R > 1 else one
        fq.pop(c_fire & f_last_row)
        if R > 1:
            f_row.next(Mux(c_fire, f_row.q, Mux(f_last_row, inc(f_row.q), Bits(RW)(0))))
        else:
            f_row.next(Bits(RW)(0))
        bb_v_next = load_bb | (bb_v.q & ~(s0_move & bb_last_j))
        bb_v.next(bb_v_next)
        if G > 1:
            bb_j_next = Mux(s0_move, bb_j.q, Mux(bb_last_j, inc(bb_j.q), Bits(JW)(0)))
        else:
            bb_j_next = Bits(JW)(0)
        bb_j.next(bb_j_next)
        # the beat buffer and the hold register, BB_CHUNK bits at a time, each chunk loaded
        # by its own copy of the load decision: from kept copies (``keep_ff``) of the flops
        # it is made of (bb_valid, hold_valid, s3_room inverted, "bb_col is the last
        # group"), one set per chunk, so the decision's fanout is a LUT beside each chunk
        # (and the take, c_fire, is in no chunk's enable: see below). The single decision
        # (store.hold_valid -> c_fire -> load_bb -> a 3.4 ns route to C * ACC flops' CEs) was
        # the placed 8x8's critical path on seed 2 at c423a1a (8.65 ns, 7.41 of it routing)
        chunks = [(lo, min(lo + BB_CHUNK, C * ACC)) for lo in range(0, C * ACC, BB_CHUNK)]
        nch = len(chunks)
        cp_bb_v = replicated(clk, rst, bb_v_next, nch, "bb_valid_cp")
        cp_hold = replicated(clk, rst, hold_v_next, nch, "hold_valid_cp")
        cp_full = [Wire(Bits(1), f"s3_full_cp{k}") for k in range(nch)]  # ~s3_room
        cp_last = replicated(clk, rst, bb_j_next == Bits(JW)(G - 1), nch, "bb_last_col_cp") \
            if G > 1 else [one] * nch
        bb_parts = []
        for k, (lo, hi) in enumerate(chunks):
            free_k = ~cp_bb_v[k] | (~cp_full[k] & cp_last[k])
            # the enables are flops' copies only: the hold register samples the C beat
            # while it is empty and the buffer is not free (a beat taken then stays, as
            # hold_valid rises), the buffer samples while it is free (hold or C beat; one
            # that is not taken leaves bb_valid low). With c_fire in them, feed_queue_empty
            # -> c_fire -> a 3.28 ns route -> bb_data's CE was the placed 8x8's critical
            # path on seed 1 at ac8e72c (7.81 ns, 6.58 routing)
            h_k = NamedReg(hi - lo, clk, None, None, ce=~free_k & ~cp_hold[k],
                           name=f"hold_data_{lo}")
            h_k.next(p.c_data[lo:hi])
            b_k = NamedReg(hi - lo, clk, None, None, ce=free_k,
                           name=f"bb_data_{lo}")
            b_k.next(Mux(cp_hold[k], p.c_data[lo:hi], h_k.q))
            bb_parts.append(b_k.q)
        bb_data_q = BitsSignal.concat(bb_parts[::-1]) if nch > 1 else bb_parts[0]
        bb_pt.next(Mux(load_bb, bb_pt.q, Mux(hold_v.q, f_head[L * PA], h_pt.q)))
        # kernel start tokens owed, per lane: one per tile, counted when its first beat is
        # taken (the lanes run in lockstep; a counter each keeps every kernel's handshake its own)
        start_ready = [Wire(Bits(1), f"k_start_ready{sfx[l]}") for l in range(L)]
        first_row = c_fire & (f_row.q == Bits(RW)(0))
        start_valid = []
        for l in range(L):
            owed = NamedReg(OW, clk, rst, 0, name=f"start_owed{sfx[l]}")
            sv = owed.q != Bits(OW)(0)
            owed.next(up_down(owed.q, first_row, sv & start_ready[l], OW))
            start_valid.append(sv)

        # group bb_j of the beat buffer (elements j = bb_j*L + l) and their parameter records
        GWD = L * ACC
        groups = [bb_data_q[g * GWD:(g + 1) * GWD] for g in range(G)]
        s0_grp = Mux(bb_j.q, *groups) if G > 1 else groups[0]
        s0_acc = [s0_grp[l * ACC:(l + 1) * ACC] for l in range(L)]

        # group bb_j's records, per lane, as registers (``param_raddr*``): the parameter
        # memories' read addresses start at flops, not at bb_col through the record adder
        # (bb_col -> the adder's carry chain -> a 3.26 ns route -> param_m0's DP16KD address
        # was the placed 8x8's critical path on seed 3 at 4d2da04, 8.52 ns). Element
        # j * L + l's record is the beat's first, p, + j * L + l (p for all, per tensor):
        # a beat entering the buffer brings p + l (the feed queue's, held with the beat in
        # ``hold_raddr*``), and each group moved on adds L. No decision runs
        # into the adders (the next values of bb_col and the index through the record adder
        # were 337d0a3's critical path on seed 1, 7.94 ns)
        PM = 1 << PA

        def first_record(head, l):
            return head[l * PA:(l + 1) * PA]

        step = Mux(bb_pt.q, Bits(PA)(L % PM), Bits(PA)(0))
        s0_rec = []
        for l in range(L):
            h_rec = NamedReg(PA, clk, None, None, ce=to_hold, name=f"hold_raddr{sfx[l]}")
            h_rec.next(first_record(f_head, l))
            r = NamedReg(PA, clk, None, None, name=f"param_raddr_q{sfx[l]}")
            r.next(Mux(load_bb, Mux(s0_move, r.q, add(r.q, step, PA)),
                       Mux(hold_v.q, first_record(f_head, l), h_rec.q)))
            s0_rec.append(r.q)

        # -- S1: parameters read; S1 and S2 never stall -------------------------------------
        # a group moves from the beat buffer into S1 only while every lane's queue (below)
        # has room for it counted from this issue on (``s3_room``, a flop), so S1 and S2
        # always advance and no ready runs back from the kernels through S2 and S1 into the
        # beat buffer's enables (that chain, s3_all_ready -> S2's take -> S1's load -> the
        # beat buffer -> bb_data's CE, was the placed 8x8's critical path at 51d42c7, seeds 1
        # and 2: 7.93 ns of routing)
        s1_v = NamedReg(1, clk, rst, 0, name="s1_valid")
        s1_v.next(s0_move)
        s1_acc = []
        for l in range(L):
            a_l = NamedReg(XW, clk, None, None, name=f"s1_acc{sfx[l]}")
            a_l.next(_sext32(s0_acc[l]))
            # the parameter RAMs read the record of the group moving into S1
            raddr[l].assign(s0_rec[l])
            s1_acc.append(a_l)

        # -- S2: x = acc + bias (int32 wrap), forked to the kernel's three inputs ---------
        s2_v = NamedReg(1, clk, rst, 0, name="s2_valid")
        s2_v.next(s1_v.q)
        # the block RAM outputs go straight into S2's registers (a DP16KD's clock-to-out
        # is ~5.8 ns on ECP5: no adder after it); the bias is added after S2, into the
        # lanes' queues
        s2_words = []
        for l in range(L):
            bias, m0, shift = params[l]
            s2_acc = NamedReg(XW, clk, None, None, name=f"s2_acc{sfx[l]}")
            s2_acc.next(s1_acc[l].q)
            if not EBR:
                regs = []
                for nm, v in (("bias", bias), ("m0", m0), ("shift", shift)):
                    r = NamedReg(XW, clk, None, None, name=f"s2_{nm}{sfx[l]}")
                    r.next(v)
                    regs.append(r.q)
                bias, m0, shift = regs
            s2_words.append(BitsSignal.concat([shift, m0, add(s2_acc.q, bias, XW)]))
        # S3: per lane, a queue of LANE_CREDITS words (x, m0, shift) that S2 pushes without
        # asking, then a register slice in front of the kernel (flops into its first stage):
        # a kernel's stall ends at its own slice and queue. ``s3_occ`` counts the words of a
        # lane issued and not yet known to have left its queue (the pop, registered: the
        # lanes' pops reach S0 through one flop each); ``s3_room`` = every lane's count is
        # below LANE_CREDITS, registered, so no queue ever overflows. Its next value is
        # chosen by S0's move (bb_valid & s3_room, flops) between two ANDs over the lanes,
        # each lane's term a function of its count and its pop flag (flops): "a group moves
        # in" needs count < LANE_CREDITS - 1 or a pop, "none moves in" needs count <
        # LANE_CREDITS or a pop. (The count's next value -> a compare -> the AND was the
        # placed 8x8's critical path at 3e65e81, seed 1: bb_valid -> s3_room's next value ->
        # the kept copies s3_full_cp, 8.32 ns)
        names = ("x", "m0", "shift")
        lockstep = getattr(requant, "lockstep_join", False)   # the static route's wrapper
        k_ready, k_valid, sent, s3_in = [], [], [], []
        s3_takes = [Wire(Bits(1), f"s3_take{sfx[l]}") for l in range(L)]
        CW = LANE_CREDITS.bit_length()
        room_if_move, room_if_stay = one, one
        for l in range(L):
            q_l = Queue(Bits(3 * XW), LANE_CREDITS, clk, rst, f"s3_queue{sfx[l]}")
            q_l.push(s2_words[l], s2_v.q)
            v_l, d_l, r_l = register_slice(clk, rst, ~q_l.empty, q_l.output, s3_takes[l],
                                           f"s3{sfx[l]}")
            pop_l = ~q_l.empty & r_l
            q_l.pop(pop_l)
            popped = NamedReg(1, clk, rst, 0, name=f"s3_popped{sfx[l]}")
            popped.next(pop_l)
            occ = NamedReg(CW, clk, rst, 0, name=f"s3_occ{sfx[l]}")
            occ_next = up_down(occ.q, s0_move, popped.q, CW)
            occ.next(occ_next)
            room_if_move = room_if_move & (popped.q | (occ.q.as_uint() < LANE_CREDITS - 1)
                                           .as_bits())
            room_if_stay = room_if_stay & (popped.q | (occ.q.as_uint() < LANE_CREDITS)
                                           .as_bits())
            s3_in.append({nm: d_l[i * XW:(i + 1) * XW] for i, nm in enumerate(names)})
            k_ready.append({nm: Wire(Bits(1), f"k_{nm}_ready{sfx[l]}") for nm in names})
            if lockstep:
                # the kernel takes x, m0 and shift in one cycle (its ready for each is
                # its input join's): no per-input flags between the slice and its take
                k_valid.append({nm: v_l for nm in names})
                s3_takes[l].assign(v_l & k_ready[l]["x"])
                continue
            sent.append({nm: NamedReg(1, clk, rst, 0, name=f"s3_{nm}_sent{sfx[l]}")
                         for nm in names})
            k_valid.append({nm: v_l & ~sent[l][nm].q for nm in names})
            adv_l = v_l
            for nm in names:
                adv_l = adv_l & (sent[l][nm].q | k_ready[l][nm])
            s3_takes[l].assign(adv_l)
            for nm in names:
                sent[l][nm].next(Mux(adv_l, sent[l][nm].q |
                                     (k_valid[l][nm] & k_ready[l][nm]), zero))
        room_next = Mux(s0_move, room_if_stay, room_if_move)
        s3_room.next(room_next)
        for w, q in zip(cp_full, replicated(clk, rst, ~room_next, nch, "s3_full_cp")):
            w.assign(q)

        # -- the kernels: one per lane -------------------------------------------------------
        # each kernel's y goes through a register slice of its own lane (the kernel's
        # y_ready is the slice's in_ready, a flop), so the join below is over the slices'
        # out_valid flops and no lane's output stall reaches another lane's kernel
        y_ready = Wire(Bits(1), "y_slice_ready")
        ks, ys, y_vs = [], [], []
        for l in range(L):
            k_y_ready = Wire(Bits(1), f"k_y_ready{sfx[l]}")
            k = requant(clk=clk, rst=rst, x=s3_in[l]["x"], x_valid=k_valid[l]["x"],
                        m0=s3_in[l]["m0"], m0_valid=k_valid[l]["m0"], shift=s3_in[l]["shift"],
                        shift_valid=k_valid[l]["shift"], start_valid=start_valid[l],
                        y_ready=k_y_ready, instance_name=f"requant{sfx[l]}")
            for nm in names:
                k_ready[l][nm].assign(getattr(k, f"{nm}_ready"))
            start_ready[l].assign(k.start_ready)
            _, yd_l, yr_l, yvn_l = register_slice(clk, rst, k.y_valid, k.y, y_ready,
                                                  f"y{sfx[l]}", next_valid=True)
            k_y_ready.assign(yr_l)
            ks.append(k)
            ys.append(yd_l)
            y_vs.append(yvn_l)
        # every lane's Y slice holds a result: the AND of their valids, registered from
        # their next values, so the output's decisions start at one flop, not an L-input AND
        y_all_next = y_vs[0]
        for v in y_vs[1:]:
            y_all_next = y_all_next & v
        # in two kept copies: ``y_all_valid_0`` drives the lanes' y_ready (the Y slices'
        # enables, L x 8 bits beside the kernels), ``y_all_valid_1`` the output's take (the
        # column and row counters, the packer, the push), so neither load's fanout sits on
        # the other's path (y_all_valid -> out_col -> wd_q_skid_v was the placed 8x8's
        # critical path on seed 3 at bd973bd, 7.79 ns)
        y_all_lanes, y_all = replicated(clk, rst, y_all_next, 2, "y_all_valid")

        # -- output: ReLU, pack bytes into beats, drop rows >= valid rows ------------------
        o_j = NamedReg(JW, clk, rst, 0, name="out_col")
        o_r = NamedReg(RW, clk, rst, 0, name="out_row")
        # the queue's head leaves through a register slice: the output's decisions (the
        # row kept, ReLU) read flops, not the queue's LUT RAM (its read into the row test
        # into wd_valid_q was the placed 8x8's critical path)
        tile_end_w = Wire(Bits(1), "out_tile_end")
        oh_v, o_head, oh_ready, oh_load, oh_in = register_slice(
            clk, rst, ~oq.empty, oq.output, tile_end_w, "out_cmd", next_data=True)
        oq.pop(~oq.empty & oh_ready)
        o_mask, o_relu = o_head[0:R], o_head[R]
        beat_end = (o_j.q[0:LGB] == Bits(LGB)(GB - 1)) if LGB else one
        # the data beats leave through a register slice (``wd_q``): a beat is pushed while
        # its in_ready (a flop) is high, so the write arbiter's ready stops at the slice
        # instead of running through "wd busy" into the lanes' take and the packer
        # (store.wd_valid_q -> wd busy -> y_all_valid's take -> out_col -> wd_valid_q was on
        # the placed 8x8's critical paths at c4c49fa, seed 2, 9.05 ns). Latency 1, as the
        # register it replaces; one beat more of buffering.
        wd_room = Wire(Bits(1), "wd_q_room")
        y_rdy = oh_v & ~(beat_end & ~wd_room)
        # a lane's result is taken when every lane has one (they run in lockstep)
        y_ready.assign(y_rdy & y_all_lanes)
        y_fire = y_all & y_rdy
        lane_bytes = []
        for y in ys:
            lane_bytes.append(Mux(o_relu & y[7], y, Bits(8)(0)))
        grp = BitsSignal.concat(lane_bytes[::-1]) if L > 1 else lane_bytes[0]
        o_last_j = o_j.q == Bits(JW)(G - 1) if G > 1 else one
        o_last_r = o_r.q == Bits(RW)(R - 1) if R > 1 else one
        tile_end = y_fire & o_last_j & o_last_r
        tile_end_w.assign(tile_end)
        if G > 1:
            o_j.next(Mux(y_fire, o_j.q, Mux(o_last_j, inc(o_j.q), Bits(JW)(0))))
        else:
            o_j.next(Bits(JW)(0))
        if R > 1:
            o_r.next(Mux(y_fire & o_last_j, o_r.q,
                         Mux(o_last_r, inc(o_r.q), Bits(RW)(0))))
        else:
            o_r.next(Bits(RW)(0))
        # the row's keep bit from a flop, not an R-way mux of the head's mask on out_row:
        # ``out_row_mask`` is the head's mask shifted right by out_row, loaded with the
        # entering command's mask when the head loads (out_row is 0 then) and shifted when
        # a row ends
        if R > 1:
            m_sh = NamedReg(R, clk, None, None, name="out_row_mask")
            m_sh.next(Mux(oh_load,
                          Mux(y_fire & o_last_j, m_sh.q,
                              BitsSignal.concat([zero, m_sh.q[1:R]])),
                          oh_in[0:R]))
            row_kept = m_sh.q[0]
        else:
            row_kept = o_mask[0]
        push = y_fire & beat_end & row_kept
        GBW = 8 * L
        if GB > 1:
            pack = NamedReg(W - GBW, clk, None, None, ce=y_fire, name="pack")
            pack.next(BitsSignal.concat([grp, pack.q[GBW:W - GBW]]) if GB > 2 else grp)
            beat = BitsSignal.concat([grp, pack.q])
        else:
            beat = grp
        wd_valid, wd_data, wd_in_ready = register_slice(clk, rst, push, beat, p.wd_ready, "wd_q")
        wd_room.assign(wd_in_ready)
        p.wd_valid = wd_valid
        p.wd_data = wd_data

        # -- busy: commands accepted and not finished ---------------------------------------
        outst = NamedReg(OW, clk, rst, 0, name="outstanding")
        outst.next(up_down(outst.q, st_fire, tile_end, OW))
        p.busy = (outst.q != Bits(OW)(0)) | wd_valid | wc_valid

    return module(f"store_engine_{R}x{C}", io, build)
