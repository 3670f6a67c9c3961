"""The STORE engine: C tiles from the systolic core -> bias + requantize (+ReLU) -> DMA write.

``make_store_engine(config, requant)`` -> module ``store_engine_{R}x{C}``, where ``requant`` is
the streaming module of the lowered per-channel requantize kernel (R*C elements per run), a
parameter: the engine does not know how it is made. ``pycde_accel.assemble`` makes it::

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
  ``st_stride`` (32), ``st_p_index`` (16), ``st_relu``, ``st_per_tensor``, ``st_valid``,
  ``st_ready`` (out). Up to ``QUEUE`` commands are queued inside (st_ready low when full).
* DMA write command out (``axi_dma_wr``'s command form): ``wc_addr`` (axi_addr_width),
  ``wc_beats`` (16, = C/AB), ``wc_rows`` (16, = st_rows), ``wc_stride`` (axi_addr_width, the
  low bits of st_stride), ``wc_valid`` (out), ``wc_ready``. Offered from the cycle after the
  command is accepted, i.e. before any of its data.
* DMA write data out: ``wd_data`` (axi_data_width), ``wd_valid`` (out), ``wd_ready``: exactly
  ``rows * C/AB`` beats per command, in command order; ``wd_valid`` is a register, held (with
  its data) until taken.
* ``busy`` (out): a command accepted whose last byte has not yet left on ``wd`` (nor its
  ``wc`` command), or whose tile's elements are still in the pipeline (the dropped rows >=
  valid rows of a last tile leave the ~30-stage kernel after the last data beat): while busy
  the parameter memory is still being read.

Pipeline and throughput
-----------------------
core beat (-> hold register while the beat buffer is busy: ``c_ready`` is ``~hold_valid``, a
register, so the element pipeline's stall never reaches the core) -> beat buffer (C
accumulators, read out one per cycle) -> S1 (parameter memory read,
latency 1: ``seq.hlmem`` x3, 32-bit bias/m0/shift, block RAM) -> S2 (registers: acc, bias,
m0, shift; x = acc + bias is added after them, so no logic follows the block RAMs) -> S3 (a
register slice holding x, m0, shift: the kernel's input stall ends there) -> kernel
(``x``/``m0``/``shift`` element streams, one start token per tile) -> y -> ReLU -> byte
packer -> ``wd`` register. One element per cycle end to end (the kernel's rate), so a tile occupies the engine ``R*C`` cycles; tiles are not serialized: the kernel (a fixed-
latency pipeline, ~30 stages) takes the next run's start token with the last element of the
current run, so tile t+1's elements enter it while tile t's results drain and its bytes are
written; up to ``QUEUE`` = 4 commands are queued so that short tiles (2x4: 8 elements) keep
the pipeline full. Measured (Verilator, nothing gated, all rows valid): T tiles take about
``T*R*C + 45`` cycles from the first C beat taken to the last data beat taken (2x4: 8 tiles,
64 elements in 109 cycles; 4x8: 256 in 291; the constant is the fill and drain; 107 and 290
before the S3 slice). A full-rate C tile from
the core (one every ``max(K, R)`` cycles) is faster than this only when ``K < R*C``; the core
then waits on ``c_ready`` (its output FIFO holds the rest).

Timing structure: the element stall chain (kernel in_ready -> S2 -> S1 -> beat buffer ->
``c_ready`` -> the C FIFO) is cut by the hold register at ``c_ready`` and by the S3 slice at the
kernel; ``bench/fmax.py`` measures the clock it reaches.
"""

from __future__ import annotations

from pycde import Clock, Module, Output, Reset
from pycde.constructs import Mux, Wire
from pycde.seq import FIFO
from pycde.signals import BitsSignal
from pycde.types import Bits

from .. import contract
from ..config import AccelConfig
from ..errors import ConfigError
from .axi_dma import write_ports
from .bits import add, inc, index_width
from .common import NamedReg, dual_port_mem, register_slice
from .stream import Stream, module

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
    JW = index_width(C)
    RW = index_width(R)
    LAB = (AB - 1).bit_length()  # low bits of j that index a byte within a beat
    OW = index_width(3 * QUEUE + 2)    # outstanding command counter width

    io = {"clk": Clock(), "rst": Reset(), **Stream(data=C * ACC, last=1).sink("c"),
          **Stream(valid=1, index=32, data=32, ready=1).sink("p_wr"),
          **Stream(addr=AW, rows=16, stride=32, p_index=16, relu=1, per_tensor=1).sink("st"),
          **write_ports(AW, W), "busy": Output(Bits(1))}

    def build(p):
        clk, rst = p.clk, p.rst
        one, zero = Bits(1)(1), Bits(1)(0)
        not_rst = ~rst.as_bits()

        # -- command intake: three queues (DMA command, feed side, output side) ----------
        wcq = FIFO(Bits(2 * AW + 16), QUEUE, clk, rst)
        fq = FIFO(Bits(PA + 1), QUEUE, clk, rst)
        oq = FIFO(Bits(17), QUEUE, clk, rst)
        st_ready = not_rst & ~wcq.full & ~fq.full & ~oq.full
        st_fire = p.st_valid & st_ready
        p.st_ready = st_ready
        wcq.push(BitsSignal.concat([_fit(p.st_stride, AW), p.st_rows, p.st_addr]), st_fire)
        fq.push(BitsSignal.concat([p.st_per_tensor, _fit(p.st_p_index, PA)]), st_fire)
        oq.push(BitsSignal.concat([p.st_relu, p.st_rows]), st_fire)

        wc_valid = ~wcq.empty
        wc_head = wcq.pop(wc_valid & p.wc_ready)
        p.wc_valid = wc_valid
        p.wc_addr = wc_head[0:AW]
        p.wc_rows = wc_head[AW:AW + 16]
        p.wc_stride = wc_head[AW + 16:2 * AW + 16]
        p.wc_beats = Bits(16)(BPR)

        # -- parameter memory: bias, m0, shift, one 32-bit memory each --------------------
        p.p_wr_ready = one
        rec = p.p_wr_index[2:2 + PA] if 2 + PA <= 32 else _fit(p.p_wr_index[2:32], PA)
        word = p.p_wr_index[0:2]
        raddr = Wire(Bits(PA), "param_raddr")
        params = [dual_port_mem(clk, rst, f"param_{nm}", 32, D, rec, p.p_wr_data,
                                p.p_wr_valid & (word == Bits(2)(w)), raddr)
                  for w, nm in enumerate(("bias", "m0", "shift"))]

        # -- S0: the beat buffer, read out one element per cycle ------------------------
        s1_load = Wire(Bits(1), "s1_load")
        bb_v = NamedReg(1, clk, rst, 0, name="bb_valid")
        bb_j = NamedReg(JW, clk, rst, 0, name="bb_col")
        bb_data = NamedReg(C * ACC, clk, None, None, name="bb_data")
        bb_pidx = NamedReg(PA, clk, None, None, name="bb_p_index")
        bb_pt = NamedReg(1, clk, None, None, name="bb_per_tensor")
        f_row = NamedReg(RW, clk, rst, 0, name="feed_row")
        bb_last_j = bb_j.q == Bits(JW)(C - 1) if C > 1 else one
        s0_move = bb_v.q & s1_load  # element bb_j moves into S1
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
        hold_v.next(to_hold | (hold_v.q & ~load_bb))
        h_data = NamedReg(C * ACC, clk, None, None, ce=to_hold, name="hold_data")
        h_pidx = NamedReg(PA, clk, None, None, ce=to_hold, name="hold_p_index")
        h_pt = NamedReg(1, clk, None, None, ce=to_hold, name="hold_per_tensor")
        h_data.next(p.c_data)
        h_pidx.next(f_head[0:PA])
        h_pt.next(f_head[PA])
        f_last_row = f_row.q == Bits(RW)(R - 1) if R > 1 else one
        fq.pop(c_fire & f_last_row)
        if R > 1:
            f_row.next(Mux(c_fire, f_row.q, Mux(f_last_row, inc(f_row.q), Bits(RW)(0))))
        else:
            f_row.next(Bits(RW)(0))
        bb_v.next(load_bb | (bb_v.q & ~(s0_move & bb_last_j)))
        if C > 1:
            bb_j.next(Mux(s0_move, bb_j.q, Mux(bb_last_j, inc(bb_j.q), Bits(JW)(0))))
        else:
            bb_j.next(Bits(JW)(0))
        bb_data.next(Mux(load_bb, bb_data.q, Mux(hold_v.q, p.c_data, h_data.q)))
        bb_pidx.next(Mux(load_bb, bb_pidx.q, Mux(hold_v.q, f_head[0:PA], h_pidx.q)))
        bb_pt.next(Mux(load_bb, bb_pt.q, Mux(hold_v.q, f_head[PA], h_pt.q)))
        # kernel start tokens owed: one per tile, counted when its first beat is taken
        start_ready = Wire(Bits(1), "k_start_ready")
        owed = NamedReg(OW, clk, rst, 0, name="start_owed")
        start_valid = owed.q != Bits(OW)(0)
        start_fire = start_valid & start_ready
        first_row = c_fire & (f_row.q == Bits(RW)(0))
        owed_up = Mux(first_row, owed.q, inc(owed.q))
        owed.next(Mux(start_fire, owed_up, (owed_up.as_uint() - 1).as_bits(OW)))

        # element j of the beat buffer and its parameter record
        lanes = [bb_data.q[j * ACC:(j + 1) * ACC] for j in range(C)]
        s0_acc = Mux(bb_j.q, *lanes) if C > 1 else lanes[0]
        j_pa = _fit(bb_j.q, PA)
        s0_rec = Mux(bb_pt.q, add(bb_pidx.q, j_pa, PA), bb_pidx.q)

        # -- S1: parameters read (address held while S1 stalls) -------------------------
        s2_take = Wire(Bits(1), "s2_take")
        s1_v = NamedReg(1, clk, rst, 0, name="s1_valid")
        s1_acc = NamedReg(XW, clk, None, None, ce=s1_load, name="s1_acc")
        s1_rec = NamedReg(PA, clk, None, None, ce=s1_load, name="s1_rec")
        s1_adv = s1_v.q & s2_take
        s1_load.assign(~s1_v.q | s1_adv)
        s1_v.next(Mux(s1_load, s1_v.q, bb_v.q))
        s1_acc.next(_sext32(s0_acc))
        s1_rec.next(s0_rec)
        raddr.assign(Mux(s1_load, s1_rec.q, s0_rec))
        bias, m0, shift = params

        # -- S2: x = acc + bias (int32 wrap), forked to the kernel's three inputs ---------
        s2_v = NamedReg(1, clk, rst, 0, name="s2_valid")
        # the block RAM outputs go straight into S2's registers (a DP16KD's clock-to-out
        # is ~5.8 ns on ECP5: no adder after it); the bias is added after S2, in front of
        # the kernel's first stage
        s2_acc = NamedReg(XW, clk, None, None, ce=s2_take, name="s2_acc")
        s2_bias = NamedReg(XW, clk, None, None, ce=s2_take, name="s2_bias")
        s2_m0 = NamedReg(XW, clk, None, None, ce=s2_take, name="s2_m0")
        s2_sh = NamedReg(XW, clk, None, None, ce=s2_take, name="s2_shift")
        s2_acc.next(s1_acc.q)
        s2_bias.next(bias)
        s2_x = add(s2_acc.q, s2_bias.q, XW)
        s2_m0.next(m0)
        s2_sh.next(shift)
        # S3: a register slice between S2 and the kernel: the kernel's stall (its input
        # ready) ends at the slice, and S2's advance depends on registers only (the chain
        # kernel ready -> S2 -> S1 -> beat buffer -> hold register was the accelerator's
        # critical path); x = acc + bias is computed into it
        names = ("x", "m0", "shift")
        k_ready = {nm: Wire(Bits(1), f"k_{nm}_ready") for nm in names}
        s3_take = Wire(Bits(1), "s3_take")
        s3_v, s3_d, s3_ready = register_slice(
            clk, rst, s2_v.q, BitsSignal.concat([s2_sh.q, s2_m0.q, s2_x]), s3_take, "s3")
        s3_in = {"x": s3_d[0:XW], "m0": s3_d[XW:2 * XW], "shift": s3_d[2 * XW:3 * XW]}
        sent = {nm: NamedReg(1, clk, rst, 0, name=f"s3_{nm}_sent") for nm in names}
        k_valid = {nm: s3_v & ~sent[nm].q for nm in names}
        done_or_taking = [sent[nm].q | k_ready[nm] for nm in names]
        s3_adv = s3_v & done_or_taking[0] & done_or_taking[1] & done_or_taking[2]
        s3_take.assign(s3_adv)
        for nm in names:
            sent[nm].next(Mux(s3_adv, sent[nm].q | (k_valid[nm] & k_ready[nm]), zero))
        s2_adv = s2_v.q & s3_ready
        s2_take.assign(~s2_v.q | s2_adv)
        s2_v.next(Mux(s2_take, s2_v.q, s1_v.q))

        # -- the kernel ---------------------------------------------------------------------
        y_ready = Wire(Bits(1), "k_y_ready")
        k = requant(clk=clk, rst=rst, x=s3_in["x"], x_valid=k_valid["x"], m0=s3_in["m0"],
                    m0_valid=k_valid["m0"], shift=s3_in["shift"],
                    shift_valid=k_valid["shift"],
                    start_valid=start_valid, y_ready=y_ready, instance_name="requant")
        k_ready["x"].assign(k.x_ready)
        k_ready["m0"].assign(k.m0_ready)
        k_ready["shift"].assign(k.shift_ready)
        start_ready.assign(k.start_ready)

        # -- output: ReLU, pack bytes into beats, drop rows >= valid rows ------------------
        o_j = NamedReg(JW, clk, rst, 0, name="out_col")
        o_r = NamedReg(RW, clk, rst, 0, name="out_row")
        wd_v = NamedReg(1, clk, rst, 0, name="wd_valid_q")
        o_head = oq.output
        o_rows, o_relu = o_head[0:16], o_head[16]
        beat_end = (o_j.q[0:LAB] == Bits(LAB)(AB - 1)) if LAB else one
        wd_busy = wd_v.q & ~p.wd_ready
        y_rdy = ~oq.empty & ~(beat_end & wd_busy)
        y_ready.assign(y_rdy)
        y_fire = k.y_valid & y_rdy
        y = k.y
        byte = Mux(o_relu & y[7], y, Bits(8)(0))
        o_last_j = o_j.q == Bits(JW)(C - 1) if C > 1 else one
        o_last_r = o_r.q == Bits(RW)(R - 1) if R > 1 else one
        tile_end = y_fire & o_last_j & o_last_r
        oq.pop(tile_end)
        if C > 1:
            o_j.next(Mux(y_fire, o_j.q, Mux(o_last_j, inc(o_j.q), Bits(JW)(0))))
        else:
            o_j.next(Bits(JW)(0))
        if R > 1:
            o_r.next(Mux(y_fire & o_last_j, o_r.q,
                         Mux(o_last_r, inc(o_r.q), Bits(RW)(0))))
        else:
            o_r.next(Bits(RW)(0))
        row_kept = o_r.q.as_uint(16) < o_rows.as_uint()
        push = y_fire & beat_end & row_kept.as_bits()
        if AB > 1:
            pack = NamedReg(W - 8, clk, None, None, ce=y_fire, name="pack")
            pack.next(BitsSignal.concat([byte, pack.q[8:W - 8]]) if AB > 2 else byte)
            beat = BitsSignal.concat([byte, pack.q])
        else:
            beat = byte
        wd_data = NamedReg(W, clk, None, None, ce=push, name="wd_data_q")
        wd_data.next(beat)
        wd_v.next(push | wd_busy)
        p.wd_valid = wd_v.q
        p.wd_data = wd_data.q

        # -- busy: commands accepted and not finished ---------------------------------------
        outst = NamedReg(OW, clk, rst, 0, name="outstanding")
        up = Mux(st_fire, outst.q, inc(outst.q))
        outst.next(Mux(tile_end, up, (up.as_uint() - 1).as_bits(OW)))
        p.busy = (outst.q != Bits(OW)(0)) | wd_v.q | wc_valid

    return module(f"store_engine_{R}x{C}", io, build)
