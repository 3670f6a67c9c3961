"""The vector engine: the accelerator's VEC command (element-wise residual ADD, MAX or MUL of the
X buffer's beats with the S stream's beats, or the S beats mapped through a function table),
its element math done by CIRCT-lowered kernels.

``make_vector_engine(config, add_kernel, max_kernel, mul_kernel)`` -> module ``vector_engine_w{W}``
-------------------------------------------------------------------------------------
``add_kernel`` / ``max_kernel``: the streaming PyCDE module classes (``lowering.stream.
stream_module``), parameters, of the two kernels ``pycde_accel.assemble.vector_kernels``
describes, lowered by either route
(same ports): ``residual_add`` (tensor inputs ``a``, ``b``; scalars ``ma``,
``mb``, ``s``) with a run length of n = AB = W/8 elements (one kernel run per AXI beat), and
``maxpool`` with k = 2 taps (``t0``, ``t1``) and a run length of ``MAX_RUN`` = 2^16, and
``mul_requantize`` (``a``, ``b``; scalars ``m0``, ``s``) with a run length of AB, fed like
residual_add (its m0 is the command's ``ma``, its shift ``shift``). The
accelerator lowers them by the static route (``assemble.lower_accel_kernel``: fixed-
latency pipelines, residual_add's multiplies and shifts split). The engine holds one instance
of residual_add and of mul_requantize (their DSP multipliers are not replicated) and feeds each
the AB int8 lanes of a beat one element per cycle (element e of beat i: ``a`` = byte e of
X[x_off+i], ``b`` = byte e of S_i); the kernel's ``y`` bytes are gathered back into beats. Of
the maxpool kernel (LUT logic only) it holds AB instances, ``max_kernel<e>``, one per byte
lane, fed a whole beat per cycle (lane e: ``t0`` = byte e of X[x_off+i], ``t1`` = byte e of
S_i); their ``y`` bytes make the result beat. Only ReLU (``max(y, 0)``, for ADD with RELU) is
engine logic. ``assemble.emit_vector_engine`` lowers the kernels and emits the
engine with them (SV + filelist); ``assemble.vector_engine_prepare`` is the ``emit_module``
``prepare`` hook for that.

Run lengths and rate (measured in tests/rtl_lib/test_vector_engine.py, no back-pressure): ADD's
scalars (ma, mb, shift) are taken once per run, so an ADD run cannot span two commands; one run
per beat keeps every command aligned without padding. The static kernels' stream wrapper takes
the next run's start and scalars with the current run's last element, so ADD runs at 1
element/cycle too: 64 beats in 281 / 537 cycles (W = 32 / 64; the handshake kernel had one
restart bubble per run, AB elements per AB + 1 cycles). MAX has no scalars, so the engine
offers each lane's maxpool kernel a start token at all times and the elements of successive MAX
commands continue one long run per lane (a run need not end with a command: each result leaves
the kernel as soon as its element went in): one beat per cycle (AB elements/cycle). Per command
there is a fixed start-up/drain (the pipeline's fill): a 64-beat command takes 281 / 537 cycles
(ADD, W = 32 / 64; 531 measured at W = 64 at 0f9c80a) and 74 / 73 (MAX to DRAM / TO_X, W = 64,
with the two-stage maxpool kernel and the ``wd_out`` slice), its first result beat on ``wd``
10 cycles after the command was taken; under write back-pressure the beats follow
``wd_ready`` (64 beats at ``wd_ready`` one cycle in two: 124..134 cycles).

MAX path: the pair FIFO's head goes whole into one register, ``max_in`` (2W bits: the lane
kernels start at flops), which every lane kernel reads its two bytes from, and ``max_in``
reloads once every lane took both of its bytes. With static-route kernels (``lockstep_join``:
both inputs taken in one cycle, control independent of the data) the lanes run in step and
lane 0's ready stands for all; otherwise a flag per lane and input remembers an element taken.
A result beat is taken when every lane kernel has its byte (``y_valid`` of all AB) and the
output register is free or being emptied: the kernels' output FIFOs hold the beats in flight
(a static kernel takes an element only with a free slot, so the lanes hold back in step), and
the pair FIFO's credits (``PAIR_FIFO_DEPTH`` beats between the X read and ``max_in``) stop the
issue, so no further credits are needed; the result goes into the output register the LUT
path uses, whole.

MUL (flag MUL): ``sat8(RDBPOT(SRDHM(x * s, ma), shift))`` through the mul kernel, one element
per cycle like ADD; with ``mb`` > 0 the X beat of step i is ``x_off + (i mod mb)`` (a wrapping
read index), so a broadcast vector of mb beats sits in X once and is re-read for every pixel.

Function table (flags LUT_SET / LUT, engine logic, no kernel): AB copies of the 256-entry
table (``lut_mem<k>``: 256/AB words of one beat each, block or distributed RAM), one per byte
lane, so a whole beat is mapped per cycle. LUT_SET writes S beat j into word j of every copy
(n = 256/AB beats, no result, no write command); LUT takes one S beat per cycle (X is not
read), lane k reads copy k at word ``idx // AB`` and selects byte ``idx % AB`` (idx = the code
with its sign bit flipped = code + 128), and the result beats queue in an 8-entry FIFO
(``LUT_FIFO_DEPTH`` credits, enough for the 5-cycle S-to-result path at full rate) before the
output register, which takes a whole beat per cycle. The S stream is the input so that the next
chunk's LOAD is not held behind the VEC (a LOAD X waits for every earlier VEC).

Row reduction (flag ROWRED, only in an engine built with ``row_reduce``, the
``rtl_lib.row_reduce`` unit): S beats take the table path's issue (one per cycle, X not read)
into the unit, which holds its own credits (``room``); its broadcast result beats go into the
output register whole, as LUT results do. ``x_off`` is the beats per row, ``mb`` the row length
(bits 0-15) and the operation (bits 16-17), ``ma``/``shift`` the requantization.

Registers on the way (for the clock, see below): S beats enter through a register slice; the X
buffer's block-RAM read data is registered before anything else (with the S beat beside it;
on an ECP5 target that register is the DP16KD blocks' own output register, ``x_ebr``, and
simulation then needs ``sim_models(config)``) and then pushed into the pair FIFO; each ADD/MUL
kernel input (``a`` bytes of X, ``b`` bytes of S) comes from a register slice after the byte select, and the MAX lane kernels' inputs from
``max_in``, so the kernels' first stage starts at flops; result beats for DRAM leave the output
register through a register slice (``wd_out``), so the kernels' output handshakes start at its
in_ready, a flop, not at the write side's ready (one cycle more per DRAM-bound command).

Timing structure: the pair FIFO read -> byte select path ends in the input slices before the
ADD/MUL kernels (for MAX in ``max_in``), and the overlap hazard is a register select, so
neither reaches ``s_ready`` and the read data router in one cycle; ``bench/fmax.py`` measures the clock it reaches.

Ports (valid/ready: a beat moves on a rising edge where both are high)
--------------------------------------------------------------------
* ``clk``, ``rst`` (synchronous, active high).
* X buffer write: ``x_wr_valid``, ``x_wr_index`` (log2 spad_c_depth bits, a beat index),
  ``x_wr_data`` (W), ``x_wr_ready`` (out). X is config.spad_c_depth beats of W bits (one
  ``seq.hlmem``, one write port shared with the engine's own TO_X writes, which take
  priority: ``x_wr_ready`` is low only in a cycle where the engine writes X; it is a register,
  ``x_wr_ready_q``). A beat taken on edge e is in X after edge e + 1, or later by the cycles
  the engine writes X in a row from e + 1 (a beat held that way lands after those writes: a
  caller must not load X while a VEC writes it, which the accelerator's dispatch ensures, a
  LOAD X waiting for every earlier VEC, and a VEC's results coming from S beats that follow
  the LOAD X's beats).
* S stream: ``s_data`` (W), ``s_valid``, ``s_ready`` (out, a register). Beats enter a
  2-entry register slice; from it they are taken only while a command is running and still
  needs beats, so at most 2 beats are taken ahead of their command.
* VEC command: ``v_n`` (16, beats >= 1), ``v_x_off`` (16), ``v_dst`` (axi_addr_width: DRAM byte
  address, multiple of AB; with ``v_to_x`` an X beat index), ``v_ma``, ``v_mb``, ``v_shift``
  (32 each; ma/mb signed, |m| < 2^15, shift 0..31 as frontend.quantize.add_multipliers makes
  them; MUL: ma = m0 in [0, 2^31), mb = the X period), ``v_max``, ``v_relu``, ``v_to_x``,
  ``v_lut_set``, ``v_lut``, ``v_mul``, ``v_n_nz`` (n != 0) and ``v_n_one`` (n == 1), decoded by
  the sender (the accelerator's dispatch stores them beside the command in the vector queue,
  so no 16-bit compare of n is on the accept path), ``v_valid``, ``v_ready`` (out) = not
  ``busy``: one command at a time.
* Write DMA command (rtl_lib.axi_dma form): ``wc_addr`` (= dst), ``wc_beats`` (16, = n),
  ``wc_rows`` (16, = 1), ``wc_stride`` (= AB), ``wc_valid`` (out), ``wc_ready``: exactly one per
  command without TO_X, offered from the cycle after the command is taken.
* Write data: ``wd_data`` (W), ``wd_valid`` (out), ``wd_ready``: the n result beats in order,
  offered only after the command's ``wc`` was taken (so a shared write DMA sees the command
  before its data).
* ``busy`` (out): high from the edge after a command is taken until every result beat has been
  written into X (TO_X) or taken on ``wd`` and the ``wc`` command was taken.

Semantics (docs/accelerator-contract.md, VEC): for beat i in 0..n-1 and byte e: a = X[x_off+i] byte e,
b = int8 S_i byte e; ADD: y = residual_add(a, b, ma, mb, shift) (sat8(RDBPOT(a*ma + b*mb,
shift))), then max(y, 0) if RELU; MAX: y = max(a, b) (RELU ignored). Result beat i goes to
DRAM at dst + i*AB or, with TO_X, to X[dst + i].

Ordering and hazards: X beat i is read (1-cycle registered read) on the edge S_i leaves the
input slice, so a
LOAD to X that was dispatched before the LOAD feeding S has written X before the first S beat
is read (the DMA returns data in command order, and the read router sends X and S beats through
one output slice: an X beat taken on edge e is written on e + 1, and an S beat taken on e + 1
or later is read on e + 2 or later). Results are written in order. A read of
X[x_off+r] waits while a result beat still in flight (read, not yet written) targets that
address: with TO_X and 0 < d = dst - x_off, read r waits until fewer than d beats are in
flight, which gives exactly the sequential element-by-element order for any overlap (dst ==
x_off in place, dst < x_off and disjoint ranges never wait). That condition is registered: on
the previous cycle's counters the engine compares both ``inflight >= d`` (``overlap_hazard``)
and ``inflight + 1 >= d`` (``overlap_hazard_after_read``), and the registered issue of that
cycle (``x_rd_valid``) selects the second if a read was issued then; the read count is thus
exact and only the write count a cycle old (a write since only lowers inflight), so the
hazard is never too permissive and reads go back to back. Measured (MAX TO_X, no
back-pressure, tests/rtl_lib/test_vector_engine.py): a read waits 10 cycles for the write it
depends on, so 0 < d < 10 runs at d beats per 10 cycles (24 beats: 240 cycles at d = 1, 53 at
d = 5) and d >= 10, in place or reading ahead at one beat per cycle (33 cycles). The compiler's
maxpool chain is in place. A command is taken only when the previous one
has finished (``v_ready = ~busy``), so consecutive VEC commands on X (e.g. the maxpool chain
LOAD X, VEC MAX TO_X, VEC MAX TO_X, VEC MAX to DRAM) see each other's results.
X addresses wrap modulo spad_c_depth.
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
from .bits import add, inc, log2, resize, sub, up_down
from .common import NamedReg, dual_port_mem, register_slice
from .ecp5 import is_ecp5
from .ecp5_ebr import SIM_MODEL as EBR_SIM_MODEL
from .ecp5_ebr import ebr_ram, ebr_supported
from .keep_ff import kept_copies
from .stream import Stream, module

#: beat pairs {X beat, S beat} buffered between the X read and the element serializer
#: (the contract's)
PAIR_FIFO_DEPTH = contract.VEC_PAIR_FIFO_DEPTH
#: run length of the maxpool kernel: it has no scalars, so its runs need not line up with
#: commands; a start token is always offered and MAX elements of successive commands simply
#: continue the current run (one restart bubble per MAX_RUN elements)
MAX_RUN = 1 << 16
#: LUT result beats in flight (issued, not yet in the output register): enough credits for
#: one beat per cycle over the S-to-result latency
LUT_FIFO_DEPTH = 8


def _check_kernel(cls, ins, scalars, what):
    names = {p.name for p in cls._builder.inputs} | {p.name for p in cls._builder.outputs}
    need = {"y", "y_valid", "y_ready", "start_valid", "start_ready"}
    for nm in list(ins) + list(scalars):
        need |= {nm, f"{nm}_valid", f"{nm}_ready"}
    missing = sorted(need - names)
    if missing:
        raise ConfigError(f"vector engine: {what} kernel module lacks ports {', '.join(missing)}")


def x_ebr(config: AccelConfig) -> bool:
    """Whether the X buffer is DP16KD blocks with their output register on (an ECP5 target, a
    depth one block holds; ``ecp5_ebr.ebr_ram``)."""
    return is_ecp5(config.target) and ebr_supported(config.spad_c_depth)


def sim_models(config: AccelConfig) -> list:
    """The simulation-only sources of the vector engine for ``config``: the DP16KD model if
    its X buffer instantiates DP16KD."""
    return [EBR_SIM_MODEL] if x_ebr(config) else []


def make_vector_engine(config: AccelConfig, add_kernel, max_kernel,
                       mul_kernel=None, row_reduce=None) -> type[Module]:
    """The vector engine module class (see the module docstring). ``row_reduce``: the
    ``rtl_lib.row_reduce`` module class for the ROWRED path (port ``v_rowred``), or None
    (no such path, the engine exactly as without it)."""
    config.validate()
    W, AW = config.axi_data_width, config.axi_addr_width
    AB = W // 8
    D = config.spad_c_depth
    XA = log2(D)
    EB = log2(AB)
    CW = 16
    OW = log2(PAIR_FIFO_DEPTH + 1)
    LW = log2(LUT_FIFO_DEPTH + 1)
    TW = contract.LUT_ENTRIES // AB        # words of one table copy
    TWA = log2(TW)                         # >= 3: AB <= 32 (contract.check_config)
    _check_kernel(add_kernel, ("a", "b"), ("ma", "mb", "s"), "add")
    _check_kernel(max_kernel, ("t0", "t1"), (), "max")
    if mul_kernel is None:
        raise ConfigError("vector engine: no mul kernel (assemble.vector_kernels gives it)")
    _check_kernel(mul_kernel, ("a", "b"), ("m0", "s"), "mul")
    rr = row_reduce is not None
    SW = add_kernel._builder.inputs[[p.name for p in add_kernel._builder.inputs].index("s")] \
        .type.width

    io = {"clk": Clock(), "rst": Reset(),
          **Stream(valid=1, index=XA, data=W, ready=1).sink("x_wr"), **Stream(data=W).sink("s"),
          **Stream(n=16, x_off=16, dst=AW, ma=32, mb=32, shift=SW, max=1, relu=1,
                   to_x=1, lut_set=1, lut=1, mul=1, n_nz=1, n_one=1,
                   **({"rowred": 1} if row_reduce is not None else {})).sink("v"),
          **write_ports(AW, W), "busy": Output(Bits(1))}

    def build(p):
        clk, rst = p.clk, p.rst
        one = Bits(1)(1)

        # ------------------------------------------------------------ command
        busy = NamedReg(1, clk, rst, 0, name="busy_q")
        accept = p.v_valid & ~busy.q
        cmd = {}
        for nm, w in (("n", 16), ("x_off", 16), ("dst", AW), ("ma", 32), ("mb", 32),
                      ("shift", SW), ("max", 1), ("relu", 1), ("to_x", 1), ("lut_set", 1),
                      ("lut", 1), ("mul", 1)) + ((("rowred", 1),) if rr else ()):
            r = NamedReg(w, clk, None, None, ce=accept, name=f"cmd_{nm}")
            r.next(getattr(p, f"v_{nm}"))
            cmd[nm] = r.q
        n, is_max, to_x = cmd["n"], cmd["max"], cmd["to_x"]
        # n - 1, for the "this is the last" flags (c + 1 == n is c == n - 1: no adder)
        n_m1_r = NamedReg(16, clk, None, None, ce=accept, name="cmd_n_m1")
        n_m1_r.next(sub(p.v_n, Bits(16)(1), 16))
        n_m1 = n_m1_r.q
        lut_set = cmd["lut_set"]

        def decoded(name, value):
            """A decision on the command, decoded from the command ports into a register
            when it is taken: its fanout (every kernel's valids, the issue and ready muxes)
            starts at a flop, not at the command registers through the decode."""
            r = NamedReg(1, clk, None, None, ce=accept, name=f"cmd_is_{name}")
            r.next(value)
            return r.q

        # the table path (LUT_SET, LUT; ROWRED too): S beats only, no kernel
        v_lut = p.v_lut_set | p.v_lut | (p.v_rowred if rr else Bits(1)(0))
        is_lut = decoded("lut", v_lut)
        if rr:      # ROWRED: S beats only too, into the row-reduction unit
            is_rr = cmd["rowred"]

        def counter(name, fire):
            """Beats/tokens of this command: cleared on accept, +1 per fire."""
            c = NamedReg(CW, clk, rst, 0, name=name)
            c.next(Mux(accept, Mux(fire, c.q, inc(c.q, CW)), Bits(CW)(0)))
            return c.q

        # write DMA command: one per command without TO_X
        wc_pend = NamedReg(1, clk, rst, 0, name="wc_pending")
        wc_fire = wc_pend.q & p.wc_ready
        wc_pend.next(Mux(accept, wc_pend.q & ~wc_fire,
                         ~p.v_to_x & ~p.v_lut_set & p.v_n_nz))

        # ------------------------------------------------------------ X read + S take
        out_valid = NamedReg(1, clk, rst, 0, name="out_valid_q")
        eng_wr = out_valid.q & to_x              # the engine writes X this cycle
        issue_w, pop_w = Wire(Bits(1), "pair_issue"), Wire(Bits(1), "pair_pop")
        out_take_w = Wire(Bits(1), "out_take")
        r = counter("rd_beat", issue_w)
        w = counter("wr_beat", out_take_w)
        occ = NamedReg(OW, clk, rst, 0, name="pair_occupancy")
        # (LUT beats do not enter the pair FIFO: they have their own credits, lut_occ)
        occ.next(up_down(occ.q, issue_w & ~is_lut, pop_w, OW))
        dst16 = resize(cmd["dst"], CW)
        # the hazard's operands are registers: reads in flight (r - w) counted by a register
        # of its own, and the distance (dst - x_off, and one less) and "dst above x_off"
        # computed from the command ports on accept, so each hazard flag is one compare of
        # registers (cmd_dst -> dist -> dist - 1 -> compare, three carry chains, was the
        # placed 8x8's critical path on three seeds)
        inflight_q = NamedReg(CW, clk, rst, 0, name="reads_in_flight")
        inflight = inflight_q.q
        inflight_q.next(Mux(accept, up_down(inflight, issue_w, out_take_w, CW), Bits(CW)(0)))
        v_dst16, v_xoff = resize(p.v_dst, CW), p.v_x_off
        v_dist = sub(v_dst16, v_xoff, CW)
        dist_q = NamedReg(CW, clk, None, None, ce=accept, name="overlap_dist")
        dist_q.next(v_dist)
        dist_m1_q = NamedReg(CW, clk, None, None, ce=accept, name="overlap_dist_m1")
        dist_m1_q.next(sub(v_dist, Bits(CW)(1), CW))
        dist, dist_m1 = dist_q.q, dist_m1_q.q
        # the overlap hazard is evaluated from the previous cycle's counters into
        # registers (its compares are off the issue path), twice: ``hz0`` for "no read was
        # issued in that cycle" (inflight >= dist) and ``hz1`` for "one was" (inflight + 1 >=
        # dist); the registered issue of that cycle (x_rd_valid) picks one. The read count
        # is then exact and the write count at most one cycle old (a result written since
        # only makes inflight smaller), so the hazard is never too permissive and reads may
        # issue back to back (MAX TO_X at one beat per cycle). Cleared on accept (nothing
        # is in flight when a command starts).
        overlap = decoded("overlap", p.v_to_x & ~v_lut &
                          (v_dst16.as_uint() > v_xoff.as_uint()).as_bits())
        hz0 = NamedReg(1, clk, rst, 0, name="overlap_hazard")
        hz0.next(Mux(accept, overlap & (inflight.as_uint() >= dist.as_uint()),
                     Bits(1)(0)))
        hz1 = NamedReg(1, clk, rst, 0, name="overlap_hazard_after_read")
        hz1.next(Mux(accept, overlap & (inflight.as_uint() >= dist_m1.as_uint()),
                     Bits(1)(0)))
        rd_v = NamedReg(1, clk, rst, 0, name="x_rd_valid")
        hazard = Mux(rd_v.q, hz0.q, hz1.q)
        lut_occ = NamedReg(LW, clk, rst, 0, name="lut_occupancy")
        lut_room = lut_occ.q != Bits(LW)(LUT_FIFO_DEPTH)
        if rr:
            rr_room_w = Wire(Bits(1), "rr_room")
            lut_room = Mux(is_rr, lut_room, rr_room_w)
        # "reads left" is a flop kept equal to r != n (set from the next value of r: a
        # compare for "issued" and one for "not", picked by the issue), so the issue
        # decision has no 16-bit compare on it (cmd_n -> s_beat's enable was a placed
        # critical path)
        rd_more = NamedReg(1, clk, rst, 0, name="rd_more")
        rd_more.next(Mux(accept, Mux(issue_w, r != n, r != n_m1), p.v_n_nz))
        can_issue = busy.q & rd_more.q & Mux(
            is_lut, (occ.q != Bits(OW)(PAIR_FIFO_DEPTH)) & ~hazard, lut_room)
        # S comes in through a register slice: s_ready is a register, so the issue
        # condition (the overlap hazard's compares) does not reach the read data router
        s_in_valid, s_in_data, s_in_ready = register_slice(clk, rst, p.s_valid, p.s_data,
                                                           can_issue, "s_in")
        issue = can_issue & s_in_valid
        issue_w.assign(issue)
        p.s_ready = s_in_ready
        # X beat of read r: x_off + r, or for MUL with mb > 0 x_off + (r mod mb) (a vector
        # re-read per pixel): xr wraps at the period
        xr = NamedReg(CW, clk, rst, 0, name="x_rd_index")
        period = cmd["mb"][0:CW]
        xr_inc = inc(xr.q, CW)
        # "the next read wraps" is a flop (xr + 1 == period, kept from xr's next value:
        # after a wrap or an accept xr is 0, after a step xr + 1), so the index's update
        # is a mux of registers, not an increment, a compare and a mux in one cycle
        xr_wrap_q = NamedReg(1, clk, rst, 0, name="x_rd_wraps")
        xr_wrap = xr_wrap_q.q
        one_c = Bits(CW)(1)
        # (the period's compares are decoded on accept: xr + 2 == period is xr == mb - 2)
        v_period = p.v_mb[0:CW]
        p_m2 = NamedReg(CW, clk, None, None, ce=accept, name="x_rd_period_m2")
        p_m2.next(sub(v_period, Bits(CW)(2), CW))
        wraps = decoded("x_rd_wrapping", p.v_mul & (v_period != Bits(CW)(0)))
        v_wrap_at0 = p.v_mul & (v_period == one_c)      # a period of 1: every read wraps
        wrap_at0 = decoded("x_rd_period1", v_wrap_at0)
        wrap_step = wraps & (xr.q == p_m2.q)
        xr_wrap_q.next(Mux(accept, Mux(issue, xr_wrap, Mux(xr_wrap, wrap_step, wrap_at0)),
                           v_wrap_at0))
        xr.next(Mux(accept, Mux(issue, xr.q, Mux(xr_wrap, xr_inc, Bits(CW)(0))), Bits(CW)(0)))
        rd_addr = add(cmd["x_off"], xr.q, CW)[0:XA]
        x_ready_q = NamedReg(1, clk, rst, 1, name="x_wr_ready_q")    # == ~eng_wr
        ext_wr = p.x_wr_valid & x_ready_q.q
        # an X beat from outside goes into a register (``x_wr_pend``: valid, index, data) and
        # from it into X on a later cycle where the engine does not write X (the next one, in
        # any program dispatch lets through: see "X buffer write" in the docstring), so the
        # block RAM's write data and address start at flops beside it, not at the read
        # router's output mux (route_out_rd_0 -> the slot mux -> a 4.15 ns route -> the X
        # write mux -> x_mem's DIB was the placed 8x8's critical path on seed 2 at af39b54)
        xw_v = NamedReg(1, clk, rst, 0, name="x_wr_pend_v")
        xw_i = NamedReg(XA, clk, None, None, ce=ext_wr, name="x_wr_pend_index")
        xw_i.next(p.x_wr_index)
        xw_d = NamedReg(W, clk, None, None, ce=ext_wr, name="x_wr_pend_data")
        xw_d.next(p.x_wr_data)
        # (ready is low while the engine writes X, so a held beat is never overwritten)
        xw_v.next(ext_wr | (xw_v.q & eng_wr))
        wr_addr = Mux(eng_wr, xw_i.q, add(dst16, w, CW)[0:XA])
        out_beat_w = Wire(Bits(W), "out_beat")
        wr_data = Mux(eng_wr, xw_d.q, out_beat_w)
        x_wen = eng_wr | xw_v.q
        p.x_wr_ready = x_ready_q.q
        s_q = NamedReg(W, clk, None, None, ce=issue, name="s_beat")
        s_q.next(s_in_data)
        rd_v.next(issue)
        # the block RAM's read data goes into a register before anything else (its
        # clock-to-out alone is ~5.7 ns on ECP5); the S beat waits alongside it. On ECP5 that
        # register is the DP16KD blocks' own (``x_ebr``: the same two-edge read): x_mem ->
        # a 1.44 ns route -> x_beat_q was a placed 8x8 path on seed 1 at 3ea0699 (7.27 ns,
        # 5.83 of it the block's clock-to-out; fpga.sta)
        if x_ebr(config):
            x_read = ebr_ram(clk, "x_mem", W, D, wr_addr, wr_data, x_wen, rd_addr)
        else:
            x_rd = dual_port_mem(clk, rst, "x_mem", W, D, wr_addr, wr_data, x_wen, rd_addr)
            x_q = NamedReg(W, clk, None, None, name="x_beat_q")
            x_q.next(x_rd)
            x_read = x_q.q
        s_q2 = NamedReg(W, clk, None, None, name="s_beat_q")
        s_q2.next(s_q.q)
        rd_v2 = NamedReg(1, clk, rst, 0, name="x_rd_valid_q")
        rd_v2.next(rd_v.q)
        # the head in a register of its own (same cycles): the LUT-RAM read at pairs_rd -> the
        # byte mux -> the input slice -> the MUL kernel's input was the placed 8x8's worst
        # path on seed 2 at de882f7 (7.88 ns, five LUTs; fpga.sta)
        pairs = Queue(Bits(2 * W), PAIR_FIFO_DEPTH, clk, rst, "pairs", head=True)
        pairs.push(BitsSignal.concat([s_q2.q, x_read]), rd_v2.q & ~is_lut)

        # ------------------------------------------------------------ function table
        # AB copies of the 256-entry table, one per byte lane, each TW words of one beat
        # (LUT_SET writes beat j into word j of every copy); lane k of a LUT beat reads copy
        # k at word idx // AB and selects byte idx % AB (idx = code + 128: the sign bit
        # flipped), so a whole beat is mapped per cycle
        lut_set_beat = rd_v2.q & lut_set
        tw = counter("lut_set_beats", lut_set_beat)
        lut_beat = rd_v2.q & cmd["lut"]
        lut_rd = []
        for k in range(AB):
            idx = s_q2.q[8 * k:8 * k + 8] ^ Bits(8)(0x80)
            word = dual_port_mem(clk, rst, f"lut_mem{k}", W, TW, tw[0:TWA], s_q2.q,
                                 lut_set_beat, idx[EB:8])
            sel = NamedReg(EB, clk, None, None, name=f"lut_sel{k}")
            sel.next(idx[0:EB])
            lut_rd.append((word, sel.q))
        lut_v3 = NamedReg(1, clk, rst, 0, name="lut_rd_valid")
        lut_v3.next(lut_beat)
        lut_bytes = []
        for word, sel in lut_rd:
            lut_bytes.append(Mux(sel, *[word[8 * j:8 * j + 8] for j in range(AB)]))
        lut_fifo = Queue(Bits(W), LUT_FIFO_DEPTH, clk, rst, "lut_fifo")
        lut_fifo.push(BitsSignal.concat(list(reversed(lut_bytes))), lut_v3.q)
        head = pairs.output
        head_valid = ~pairs.empty
        x_beat, s_beat = head[0:W], head[W:2 * W]

        # ------------------------------------------------------------ kernels
        def lane_feed(name, beat, ready):
            """Feed the AB bytes of the head beat on one kernel input, one per cycle,
            through a register slice (the kernel's input comes from flops: the pair FIFO
            read and the byte select end at the slice)."""
            e = NamedReg(EB, clk, rst, 0, name=f"{name}_byte")
            done = NamedReg(1, clk, rst, 0, name=f"{name}_done")
            valid = head_valid & ~done.q & ~is_max      # MAX beats go whole to max_in
            # (an AB-way mux on the byte counter, a tree, not a chain of compares: the pair
            # FIFO's read -> a five-LUT chain -> mul_kernel's input was the placed 8x8's
            # critical path on seed 2 at 4d2da04, 7.88 ns)
            data = Mux(e.q, *[beat[8 * k:8 * k + 8] for k in range(AB)])
            k_valid, k_data, slice_ready = register_slice(clk, rst, valid, data, ready,
                                                          f"{name}_in")
            fire = valid & slice_ready
            e_next = Mux(fire, e.q, inc(e.q, EB))
            e.next(e_next)
            # "the byte counter is at the beat's last byte" as a flop of its own, so the pair
            # FIFO's pop does not start at the counter, which also selects the bytes (a_byte ->
            # a_done -> pairs_full was 569ab3f's longest estimated path, fpga.paths)
            at_last = NamedReg(1, clk, rst, 0, name=f"{name}_byte_last")   # (AB >= 4)
            at_last.next(e_next == Bits(EB)(AB - 1))
            last = fire & at_last.q
            finished = done.q | last
            # ``finished`` where the head is a non-MAX beat (valid = ~done there): for the
            # pop, which then has neither the head's valid nor its class inside each lane's term
            ends = done.q | (slice_ready & at_last.q)
            return k_valid, k_data, finished, done, ends

        a_ready_w, b_ready_w = Wire(Bits(1), "a_ready"), Wire(Bits(1), "b_ready")
        a_valid, a_data, a_fin, a_done, a_ends = lane_feed("a", x_beat, a_ready_w)
        b_valid, b_data, b_fin, b_done, b_ends = lane_feed("b", s_beat, b_ready_w)
        ser_pop = head_valid & a_fin & b_fin
        a_done.next(a_fin & ~ser_pop)
        b_done.next(b_fin & ~ser_pop)

        # MAX: the head pair goes whole into a register slice (``max_in``: the kernels start
        # at flops) and from there to AB maxpool kernels, lane k taking byte k of the X beat
        # (t0) and of the S beat (t1); its head is consumed once every lane took both of its
        # bytes. The pair FIFO's pop waits on the slice's in_ready, a flop, not on the
        # kernels' readies (max_in_v -> the kernels' t0_ready -> the pop -> the pair FIFO's
        # count and flags was the estimator's longest path at ff17f30, when max_in was one
        # register).
        mi_consumed_w = Wire(Bits(1), "max_in_consumed")
        max_pop_w = Wire(Bits(1), "max_pop")
        mi_valid, mi_data, mi_in_ready = register_slice(clk, rst, max_pop_w, head,
                                                        mi_consumed_w, "max_in")

        mx_t0_ready = [Wire(Bits(1), f"max{k}_t0_ready") for k in range(AB)]
        mx_t1_ready = [Wire(Bits(1), f"max{k}_t1_ready") for k in range(AB)]
        lockstep = getattr(max_kernel, "lockstep_join", False)
        if lockstep:
            # A static-route kernel takes its inputs together (the wrapper's join) and its
            # control does not depend on the data, so lanes that are instances of one module,
            # reset together, with the same control inputs (both valids max_in_v, start
            # always offered, y_ready max_take) run in step: every lane's ready is lane 0's,
            # and max_in is consumed when lane 0 takes it (no per-lane flags, no AND over
            # the lanes between the kernels' readies and the pair FIFO's pop)
            # Each lane's valid is a kept copy of max_in's (``max_in_v_lane{k}``) with its next
            # value from that lane's own ready: the slice loads when it is empty or taken, and
            # every lane takes when lane 0 does. With max_in_v itself into all the lanes, a
            # lane's element take (its valid AND its credits) sat by the slice: max_kernel0's
            # credits -> a 2.90 ns route to that LUT -> 2.86 ns back -> its in_open_r (8.56 ns,
            # 6.86 routing) was the placed 8x8's critical path on seed 1 at 2094307.
            refill = ~mi_in_ready | max_pop_w      # a beat in the skid, or one entering
            lane_v = kept_copies(clk, rst, AB, "max_in_v_lane",
                                 lambda k, q: Mux(~q | mx_t0_ready[k], q, refill))
            mx_flags = [(None, None, v, v, None, None) for v in lane_v]
            mi_consumed = lane_v[0] & mx_t0_ready[0]
        else:
            # other routes may take t0 and t1 in different cycles: per lane and input a flag
            # remembers an element taken
            lane_taken = []
            mx_flags = []
            for k in range(AB):
                f0 = NamedReg(1, clk, rst, 0, name=f"max{k}_t0_done")
                f1 = NamedReg(1, clk, rst, 0, name=f"max{k}_t1_done")
                v0, v1 = mi_valid & ~f0.q, mi_valid & ~f1.q
                t0_fin = f0.q | (v0 & mx_t0_ready[k])
                t1_fin = f1.q | (v1 & mx_t1_ready[k])
                lane_taken.append(t0_fin & t1_fin)
                mx_flags.append((f0, f1, v0, v1, t0_fin, t1_fin))
            mi_consumed = mi_valid
            for t in lane_taken:
                mi_consumed = mi_consumed & t
            for f0, f1, _, _, t0_fin, t1_fin in mx_flags:
                f0.next(t0_fin & ~mi_consumed)
                f1.next(t1_fin & ~mi_consumed)
        mi_consumed_w.assign(mi_consumed)
        max_pop = head_valid & is_max & mi_in_ready
        max_pop_w.assign(max_pop)
        mi_x, mi_s = mi_data[0:W], mi_data[W:2 * W]

        # == Mux(is_max, ser_pop, max_pop), with the head's valid and class outside the two
        # lanes' terms: the MAX flag -> each lane's valid -> its take -> the pop -> the pair
        # FIFO's occupancy enable was the placed 8x8's second path on seed 1 at 3ea0699 (five
        # LUTs, 7.78 ns; fpga.sta)
        pop = head_valid & Mux(is_max, a_ends & b_ends, mi_in_ready)
        pop_w.assign(pop)
        pairs.pop(pop)

        v_add = ~p.v_max & ~v_lut & ~p.v_mul
        is_mul = decoded("mul", p.v_mul)
        is_add = decoded("add", v_add)
        relu_add = decoded("relu_add", p.v_relu & v_add)
        y_ready_w = Wire(Bits(1), "y_ready")
        # one start token per run (= per beat), scalars once per run, for the active kernel.
        # Each token's valid is a register (the kernel's take, the enable of its scalar
        # registers, starts at a flop): set on accept when the command is of its kernel and
        # n > 0, and after each take from the counter's next value (cleared with the n-th).
        tok_ready = {nm: Wire(Bits(1), f"{nm}_tok_ready")
                     for nm in ("add_start", "ma", "mb", "s", "mul_start", "m0", "mul_s")}
        tok_valid = {}
        n_nz, n_one = p.v_n_nz, p.v_n_one
        for nm, sel in (("add_start", v_add), ("ma", v_add), ("mb", v_add),
                        ("s", v_add), ("mul_start", p.v_mul), ("m0", p.v_mul),
                        ("mul_s", p.v_mul)):
            vld = NamedReg(1, clk, rst, 0, name=f"{nm}_tok_valid")
            take = vld.q & tok_ready[nm]
            # tokens still to give, counted down from n, and "the next take is the last"
            # as a flop of its own (set from the count before the take), so the take reaches
            # the valid through one gate, not through the count's adder and a 16-bit compare
            left = NamedReg(CW, clk, rst, 0, name=f"{nm}_tokens_left")
            last = NamedReg(1, clk, rst, 0, name=f"{nm}_tok_last")
            left.next(Mux(accept, Mux(take, left.q, sub(left.q, Bits(CW)(1), CW)), p.v_n))
            last.next(Mux(accept, Mux(take, last.q, left.q == Bits(CW)(2)), n_one))
            # (a run takes its tokens only while busy; the n-th take clears the valid, so
            # it is low again by the time the command finishes)
            vld.next(Mux(accept, vld.q & ~(take & last.q), sel & n_nz))
            tok_valid[nm] = vld.q
        add_k = add_kernel(clk=clk, rst=rst, a=a_data, a_valid=a_valid & is_add,
                           b=b_data, b_valid=b_valid & is_add,
                           ma=cmd["ma"], ma_valid=tok_valid["ma"],
                           mb=cmd["mb"], mb_valid=tok_valid["mb"],
                           s=cmd["shift"], s_valid=tok_valid["s"],
                           start_valid=tok_valid["add_start"],
                           y_ready=y_ready_w & is_add, instance_name="add_kernel")
        max_take_w = Wire(Bits(1), "max_take")
        mxs = []
        for k, (_, _, v0, v1, _, _) in enumerate(mx_flags):
            mk = max_kernel(clk=clk, rst=rst, t0=mi_x[8 * k:8 * k + 8], t0_valid=v0,
                            t1=mi_s[8 * k:8 * k + 8], t1_valid=v1,
                            start_valid=one,  # MAX: one endless stream of runs
                            y_ready=max_take_w, instance_name=f"max_kernel{k}")
            mx_t0_ready[k].assign(mk.t0_ready)
            mx_t1_ready[k].assign(mk.t1_ready)
            mxs.append(mk)
        mul_k = mul_kernel(clk=clk, rst=rst, a=a_data, a_valid=a_valid & is_mul,
                           b=b_data, b_valid=b_valid & is_mul,
                           m0=cmd["ma"], m0_valid=tok_valid["m0"],
                           s=cmd["shift"], s_valid=tok_valid["mul_s"],
                           start_valid=tok_valid["mul_start"],
                           y_ready=y_ready_w & is_mul, instance_name="mul_kernel")
        tok_ready["mul_start"].assign(mul_k.start_ready)
        tok_ready["m0"].assign(mul_k.m0_ready)
        tok_ready["mul_s"].assign(mul_k.s_ready)
        tok_ready["add_start"].assign(add_k.start_ready)
        tok_ready["ma"].assign(add_k.ma_ready)
        tok_ready["mb"].assign(add_k.mb_ready)
        tok_ready["s"].assign(add_k.s_ready)
        a_ready_w.assign(Mux(is_mul, add_k.a_ready, mul_k.a_ready))
        b_ready_w.assign(Mux(is_mul, add_k.b_ready, mul_k.b_ready))

        # ------------------------------------------------------------ results -> beats
        y_valid = Mux(is_mul, add_k.y_valid, mul_k.y_valid) & ~is_max
        y = Mux(is_mul, add_k.y, mul_k.y)
        y = Mux(relu_add & y[7], y, Bits(8)(0))
        y_fire = y_valid & y_ready_w
        ey = NamedReg(EB, clk, rst, 0, name="y_byte")
        ey.next(Mux(y_fire, ey.q, inc(ey.q, EB)))
        y_last = y_fire & (ey.q == Bits(EB)(AB - 1))
        lanes = []
        for k in range(AB):
            lane = NamedReg(8, clk, None, None, ce=y_fire & (ey.q == Bits(EB)(k)),
                            name=f"out_lane{k}")
            lane.next(y)
            lanes.append(lane.q)
        # a LUT result beat goes into the output register whole
        lut_take = ~lut_fifo.empty & is_lut & y_ready_w
        lut_fifo.pop(lut_take)
        lut_occ.next(up_down(lut_occ.q, issue & cmd["lut"], lut_take, LW))
        # a MAX result beat too: taken when every lane has its byte (the kernels' output
        # buffers hold the beats in flight; the pair FIFO's credits pace the issue)
        all_y = is_max & ~is_lut
        # (lanes in step, see max_in: lane 0's y_valid stands for all, so the take is not
        # behind an AND over the lanes' output FIFOs: out_valid_q -> that AND -> every lane's
        # output-FIFO count was a 9.1 ns group in fpga.paths' estimate of d1cbf2b's 8x8)
        for mk in (mxs[:1] if lockstep else mxs):
            all_y = all_y & mk.y_valid
        max_take = all_y & y_ready_w
        max_take_w.assign(max_take)
        max_beat = BitsSignal.concat([mk.y for mk in reversed(mxs)])
        lut_out = NamedReg(W, clk, None, None, ce=lut_take | max_take, name="lut_out")
        lut_out.next(Mux(is_max, lut_fifo.output, max_beat))
        out_beat = Mux(is_lut | is_max, BitsSignal.concat(list(reversed(lanes))), lut_out.q)
        lut_take = lut_take | max_take        # (lut_occ and the LUT FIFO counted above)
        if rr:
            unit = row_reduce(clk=clk, rst=rst, start=accept, bpr=cmd["x_off"],
                              length=cmd["mb"][0:16], op=cmd["mb"][16:18], m0=cmd["ma"],
                              shift=cmd["shift"], issue=issue & is_rr,
                              in_valid=rd_v2.q & is_rr, in_data=s_q2.q,
                              out_ready=y_ready_w & is_rr, instance_name="row_reduce")
            rr_room_w.assign(unit.room)
            rr_take = unit.out_valid & is_rr & y_ready_w
            rr_out = NamedReg(W, clk, None, None, ce=rr_take, name="rr_out")
            rr_out.next(unit.out_data)
            out_beat = Mux(is_rr, out_beat, rr_out.q)
            lut_take = lut_take | rr_take
        out_beat_w.assign(out_beat)
        # result beats for DRAM leave through a register slice (``wd_out``), so the output
        # register's take, and with it every kernel's y_ready and output-FIFO pop, starts at
        # flops: the slice's in_ready, not the write side's wd_ready and the write command's
        # wc_pending (wc_pending -> cmd_to_x -> the lane kernels' output-FIFO handshakes ->
        # add_kernel's out_fifo_count was the placed 8x8's critical path on seed 2 at
        # 48bed3a, 7.10 ns routing). A DRAM-bound beat leaves one cycle later (the perf
        # model's VEC_WD_SLICE); TO_X beats do not pass it
        wd_push = out_valid.q & ~to_x
        wd_v, wd_d, wd_in_ready = register_slice(clk, rst, wd_push, out_beat,
                                                 p.wd_ready & ~wc_pend.q, "wd_out")
        wd_empty = ~wd_v & wd_in_ready
        wd_valid = wd_v & ~wc_pend.q
        out_take = eng_wr | (wd_push & wd_in_ready)
        out_take_w.assign(out_take)
        y_ready_w.assign(~out_valid.q | out_take)
        out_valid_next = (out_valid.q & ~out_take) | y_last | lut_take
        out_valid.next(out_valid_next)
        # x_wr_ready (= ~eng_wr) as a flop of its own, from eng_wr's next value, that drives
        # only the port: the read router's destination ready starts at a flop it can sit
        # beside, not at out_valid_q and to_x across the die (vector.out_valid_q -> x_wr_ready
        # -> the router's destination ready -> the read DMA's R slice enables was the placed
        # 8x8's critical path at 774f804, seed 1). That next value is not out_valid_next,
        # whose take runs from the wd_out slice through y_ready into the kernels' output
        # FIFOs (wd_out_skid_v -> the take -> lut_fifo and mul_kernel's out_fifo ->
        # x_wr_ready_q was the placed 8x8's critical path on seed 2 at bd973bd, 8.06 ns): while
        # a TO_X command runs, the output register is taken every cycle it is full (y_ready
        # is 1), so out_valid_next is the result arriving with y_ready = 1 (``tox_next``);
        # on an accept, when the old command's results are all written, the bound
        # out_valid | tox_next (low ready is always allowed)
        tox_next = (y_valid & (ey.q == Bits(EB)(AB - 1))) | (~lut_fifo.empty & is_lut) | all_y
        if rr:
            tox_next = tox_next | (unit.out_valid & is_rr)
        x_ready_q.next(~Mux(accept, to_x & tox_next, p.v_to_x & (out_valid.q | tox_next)))

        # ------------------------------------------------------------ outputs, finish
        # w == n and tw == n as flops, each set from its counter's next value (an accept
        # clears the counters: equal iff n == 0), so the finish is a LUT of flops
        n_zero = ~p.v_n_nz
        w_done = NamedReg(1, clk, rst, 0, name="wr_beats_done")
        w_done.next(Mux(accept, Mux(out_take, w == n, w == n_m1), n_zero))
        tw_done = NamedReg(1, clk, rst, 0, name="lut_set_beats_done")
        tw_done.next(Mux(accept, Mux(lut_set_beat, tw == n, tw == n_m1), n_zero))
        # (and the DRAM slice drained: the next command's write follows this one's beats)
        finish = busy.q & Mux(lut_set, w_done.q, tw_done.q) & ~wc_pend.q & wd_empty
        busy.next(Mux(accept, busy.q & ~finish, one))
        p.v_ready = ~busy.q
        p.busy = busy.q
        p.wc_addr = cmd["dst"]
        p.wc_beats = n
        p.wc_rows = Bits(16)(1)
        p.wc_stride = Bits(AW)(AB)
        p.wc_valid = wc_pend.q
        p.wd_data = wd_d
        p.wd_valid = wd_valid

    return module(f"vector_engine_w{W}", io, build)
