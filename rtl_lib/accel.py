"""The accelerator top: AXI4 DMA, command fetch and dispatch, the read-data router, the matmul
unit (operand scratchpads + systolic core), the store and vector engines, the write arbiter and
the AXI4-Lite CSRs.

``make_accelerator(config, requant, add_kernel, max_kernel)`` -> module ``pycde_accel_top``
(``requant``/``add_kernel``/``max_kernel``: the lowered post-op kernels as streaming modules,
``lowering.stream.stream_module``; :func:`pycde_accel.assemble.emit_accelerator` lowers and imports
them).

Execution model: decoupled access / execute, commands in DRAM
-------------------------------------------------------------
The compiler (``pycde_accel.backend.commands``) turns every layer into a list of 32-byte
commands (LOAD, EXEC, STORE, VEC) in the DRAM image. The host runs one layer per ``start``:
``cmd_base``/``cmd_count`` CSRs, ``ctrl.start``, then ``events.done``. The accelerator:

1. *fetches* the commands by DMA, up to ``FETCH_CHUNK`` commands per read, as long as the
   command FIFO (``CMD_FIFO_DEPTH``) has room for everything requested (credits, so fetched
   data never stalls the read channel);
2. *dispatches* them strictly in order to four engine FIFOs (``ENGINE_FIFO_DEPTH`` each):
   LOAD -> load engine, EXEC -> matmul unit, STORE -> store engine, VEC -> vector engine.
   Two write-after-read hazards are resolved here: a LOAD into the store engine's parameter
   memory (dst P) is dispatched only once every earlier STORE has finished (store FIFO empty,
   engine idle), and a LOAD into the vector engine's X buffer only once every earlier VEC has;
   an unknown opcode sets ``status.err_code`` bit 4 and is dropped. The command FIFO's head
   reaches dispatch through a register slice (opcode and LOAD destination decoded before it),
   one command per cycle, 1 cycle later than straight from the FIFO; the engines' idle
   conditions reach it registered (so a LOAD P / LOAD X goes 1 cycle after the engine is idle);
3. the *load engine* issues each LOAD as one 2-D DMA read (ZERO loads: none) and records its
   destination in the *route FIFO*; the fetcher's reads share the DMA (fetch first);
4. the *router* takes the read data in order (AXI reads are in order, ID 0) and, per the route
   FIFO's head, writes it to the A or B operand scratchpad (lane/word addressing, COMMIT after
   the last beat), the parameter memory (as 32-bit words), the X buffer, the S stream, or the
   command FIFO (the route FIFO's head comes through a register slice, its destination
   decoded: no bubble between entries). A destination that cannot take data stalls the AXI R
   channel: a LOAD into a scratchpad bank waits for the EXEC that releases it, and since that
   EXEC was dispatched earlier, an in-order program cannot deadlock;
5. the STORE and VEC engines' DMA write commands share the write DMA (STORE first); an owner
   FIFO routes each command's data beats in command order.

``done`` (``events.done``, the ``irq`` output) rises when every command was dispatched and
every FIFO, engine and DMA engine is idle (the last write response taken).

Ports: ``clk``, ``rst`` (synchronous, active high); AXI4 master ``m_axi_*`` (data
``axi_data_width``, address ``axi_addr_width``, ID 1 bit, INCR bursts, see ``axi_dma``);
AXI4-Lite slave ``s_axil_*`` (``axil_data_width``, 12 address bits; map:
``axil_csr.default_csr_map``); ``irq`` (out: ``events`` non-zero).

Performance counters (cleared by start, counting while busy): cycles, core-busy cycles (a beat
entered the core), stall cycles (an EXEC active and no beat entered), DMA bytes read and
written, commands dispatched.
"""

from __future__ import annotations

from pycde import Clock, Input, Module, Output, Reset, generator
from pycde.constructs import Mux, Wire
from pycde.seq import FIFO
from pycde.signals import BitsSignal
from pycde.types import Bits

from .. import contract
from ..config import AccelConfig
# the command encoding and the structure the software relies on: the contract's
from ..contract import (CMD_BITS, CMD_FIFO_DEPTH, DST_A, DST_B, DST_CMD, DST_P, DST_S, DST_X,
                        ENGINE_FIFO_DEPTH, FETCH_CHUNK, MAX_BURST, MAX_OUTSTANDING, OP_EXEC,
                        OP_LOAD, OP_STORE, OP_VEC, PERF_COUNTERS, ROUTE_FIFO_DEPTH, hw_info)
from .axi_dma import make_axi_dma
from .axil_csr import default_csr_map, make_axil_csr
from .common import NamedReg, name_module, register_slice
from .scratchpad import make_width_adapter


def check_config(config: AccelConfig) -> None:
    """Refuse a config the accelerator top cannot be built for (ConfigError): the contract's
    rules (:func:`pycde_accel.contract.check_config`)."""
    contract.check_config(config, "accelerator")


def _u(sig, w):
    return sig.as_uint(w)


def _inc(sig, w, by=1):
    return (sig.as_uint(w) + by).as_bits(w)


def _resize(sig, w):
    """Zero-extend or truncate a Bits signal to ``w`` bits."""
    sw = sig.type.width
    if sw == w:
        return sig
    if sw > w:
        return sig[0:w]
    return BitsSignal.concat([Bits(w - sw)(0), sig])


def _shl(sig, n, w):
    """``sig << n`` (n a constant) in ``w`` bits."""
    if n == 0:
        return _resize(sig, w)
    return _resize(BitsSignal.concat([sig, Bits(n)(0)]), w)


def _inst(cls, instance_name, **ports):
    """Instantiate ``cls``, zero-extending or truncating each Bits input to its port width
    (command fields are 16/32-bit words; engines declare the widths they need)."""
    widths = {p.name: p.type.width for p in cls._builder.inputs
              if hasattr(p.type, "width") and p.name not in ("clk", "rst")}
    fixed = {k: (_resize(v, widths[k]) if k in widths and v.type.width != widths[k] else v)
             for k, v in ports.items()}
    return cls(**fixed, instance_name=instance_name)


def _word(cmd, i):
    return cmd[32 * i:32 * (i + 1)]


def _field(cmd, i, w):
    return cmd[32 * i:32 * i + w]


def make_accelerator(config: AccelConfig, requant, add_kernel, max_kernel) -> type[Module]:
    """The accelerator top module class for ``config`` (ConfigError for a bad config)."""
    from .matmul_unit import make_matmul_unit
    from .store_engine import make_store_engine
    from .vector_engine import make_vector_engine

    config.validate()
    check_config(config)
    W, AW = config.axi_data_width, config.axi_addr_width
    AB = W // 8
    CMD_BEATS = CMD_BITS // W
    csr_map = default_csr_map(AW, config.axil_data_width)
    Csr = make_axil_csr(csr_map, "accel_csr")
    Dma = make_axi_dma(W, AW, MAX_BURST, MAX_OUTSTANDING, 16, 16)
    Mm = make_matmul_unit(config)
    St = make_store_engine(config, requant)
    Vec = make_vector_engine(config, add_kernel, max_kernel)
    CmdPack = make_width_adapter(W, CMD_BITS)
    ParamSplit = make_width_adapter(W, 32)

    ports = {"clk": Clock(), "rst": Reset(), "irq": Output(Bits(1))}
    for cls, skip in ((Dma, "m_axi"), (Csr, "s_axil")):
        for port in cls._builder.inputs:
            if port.name.startswith(skip):
                ports[port.name] = Input(port.type)
        for port in cls._builder.outputs:
            if port.name.startswith(skip):
                ports[port.name] = Output(port.type)

    def build(p):
        clk, rst = p.clk, p.rst
        one, zero = Bits(1)(1), Bits(1)(0)

        # ---------------------------------------------------------------- CSRs
        csr_in = {}
        w = {n: Wire(Bits(32 if n != "status" else 16), n) for n in
             ("status", "hw_info") + PERF_COUNTERS}
        events_set = Wire(Bits(2), "events_set")
        for port in Csr._builder.inputs:
            if port.name.startswith("s_axil"):
                csr_in[port.name] = getattr(p, port.name)
        csr = Csr(clk=clk, rst=rst, **csr_in, events_set=events_set,
                  **{n: w[n] for n in w}, instance_name="csr")
        for port in Csr._builder.outputs:
            if port.name.startswith("s_axil"):
                setattr(p, port.name, getattr(csr, port.name))
        start = csr.ctrl[0]
        p.irq = csr.events != Bits(2)(0)
        w["hw_info"].assign(Bits(32)(hw_info(config)))

        running = NamedReg(1, clk, rst, 0, name="running")

        # ---------------------------------------------------------------- DMA
        dma_in = {}
        rd = {n: Wire(Bits(t), f"rd_{n}") for n, t in
              (("cmd_addr", AW), ("cmd_beats", 16), ("cmd_rows", 16), ("cmd_stride", AW),
               ("cmd_valid", 1), ("out_ready", 1))}
        wr = {n: Wire(Bits(t), f"wr_{n}") for n, t in
              (("cmd_addr", AW), ("cmd_beats", 16), ("cmd_rows", 16), ("cmd_stride", AW),
               ("cmd_valid", 1), ("in_data", W), ("in_valid", 1))}
        for port in Dma._builder.inputs:
            if port.name.startswith("m_axi"):
                dma_in[port.name] = getattr(p, port.name)
        dma = Dma(clk=clk, rst=rst, **dma_in, **{f"rd_{n}": v for n, v in rd.items()},
                  **{f"wr_{n}": v for n, v in wr.items()}, instance_name="dma")
        for port in Dma._builder.outputs:
            if port.name.startswith("m_axi"):
                setattr(p, port.name, getattr(dma, port.name))

        # ---------------------------------------------------------------- fetcher
        cmdq = FIFO(Bits(CMD_BITS), CMD_FIFO_DEPTH, clk, rst)
        CW = (CMD_FIFO_DEPTH).bit_length()
        fetch_addr = NamedReg(AW, clk, rst, 0, name="fetch_addr")
        fetch_left = NamedReg(32, clk, rst, 0, name="fetch_left")
        credits_used = NamedReg(CW, clk, rst, 0, name="cmdq_credits_used")
        chunk = Mux(_u(fetch_left.q, 32) < FETCH_CHUNK, Bits(CW)(FETCH_CHUNK),
                    fetch_left.q[0:CW])
        room = _u(credits_used.q, CW) <= CMD_FIFO_DEPTH - FETCH_CHUNK
        fetch_req = running.q & (fetch_left.q != Bits(32)(0)) & room
        fetch_go = Wire(Bits(1), "fetch_go")
        cmdq_pop = Wire(Bits(1), "cmdq_pop")
        used_plus = Mux(fetch_go, credits_used.q,
                        (_u(credits_used.q, CW) + _u(chunk, CW)).as_bits(CW))
        credits_used.next(Mux(cmdq_pop, used_plus, (_u(used_plus, CW) - 1).as_bits(CW)))
        fetch_addr.next(Mux(start, Mux(fetch_go, fetch_addr.q,
                                       (_u(fetch_addr.q, AW) + _u(_shl(chunk, 5, AW), AW)).as_bits(AW)),
                            csr.cmd_base))
        fetch_left.next(Mux(start, Mux(fetch_go, fetch_left.q,
                                       (_u(fetch_left.q, 32) - _u(chunk, CW)).as_bits(32)),
                            csr.cmd_count))

        # ---------------------------------------------------------------- dispatch
        # the command FIFO's head goes through a register slice with its opcode and LOAD
        # destination decoded before it: dispatch starts from flops, not from the FIFO's
        # LUT-RAM read (that read + decode + hazard + the engine FIFO's write enable was
        # the accelerator's critical path)
        raw = cmdq.output
        r_op, r_ldst = raw[0:8], raw[16:24]
        r_is_op = [r_op == Bits(8)(k) for k in (OP_LOAD, OP_EXEC, OP_STORE, OP_VEC)]
        r_bad = ~(r_is_op[0] | r_is_op[1] | r_is_op[2] | r_is_op[3])
        r_ld_p = r_is_op[0] & (r_ldst == Bits(8)(DST_P))
        r_ld_x = r_is_op[0] & (r_ldst == Bits(8)(DST_X))
        dispatch_w = Wire(Bits(1), "dispatch")
        head_valid, dec, slice_ready = register_slice(
            clk, rst, ~cmdq.empty,
            BitsSignal.concat([r_ld_x, r_ld_p, r_bad] + list(reversed(r_is_op)) + [raw]),
            dispatch_w, "dispatch_head")
        head = dec[0:CMD_BITS]
        is_op = [dec[CMD_BITS + k] for k in range(4)]
        bad, ld_p, ld_x = dec[CMD_BITS + 4], dec[CMD_BITS + 5], dec[CMD_BITS + 6]
        engine_q = [FIFO(Bits(CMD_BITS), ENGINE_FIFO_DEPTH, clk, rst) for _ in range(4)]
        loadq, execq, storeq, vecq = engine_q
        st_busy_w = Wire(Bits(1), "store_busy")
        vec_busy_w = Wire(Bits(1), "vec_busy")
        # the two engines' idle conditions as registers (a cycle late): dispatch then starts
        # from flops. Idle in cycle t-1 with no command of that engine dispatched in t-1
        # implies idle in t (an engine turns busy only by taking a command from its FIFO)
        st_idle = NamedReg(1, clk, rst, 0, name="store_idle_q")
        vec_idle = NamedReg(1, clk, rst, 0, name="vec_idle_q")
        hazard = (ld_p & ~st_idle.q) | (ld_x & ~vec_idle.q)
        can = bad
        for k in range(4):
            can = can | (is_op[k] & ~engine_q[k].full)
        dispatch = head_valid & can & ~hazard
        dispatch_w.assign(dispatch)
        st_idle.next(storeq.empty & ~st_busy_w & ~(dispatch & is_op[2]))
        vec_idle.next(vecq.empty & ~vec_busy_w & ~(dispatch & is_op[3]))
        cmdq.pop(~cmdq.empty & slice_ready)
        # a command's credit returns when it is dispatched (not when it enters the slice): the
        # credits then cover the command FIFO and the slice, and the fetcher runs no further
        # ahead of dispatch than without the slice
        cmdq_pop.assign(dispatch)
        for k in range(4):
            engine_q[k].push(head, dispatch & is_op[k])
        dispatched = NamedReg(32, clk, rst, 0, name="dispatched")
        dispatched.next(Mux(start, Mux(dispatch, dispatched.q, _inc(dispatched.q, 32)),
                            Bits(32)(0)))
        w["perf_cmds"].assign(dispatched.q)

        # ---------------------------------------------------------------- load engine
        lh = loadq.output
        l_dst, l_flags = lh[16:24], lh[8:16]
        l_zero = l_flags[2]
        l_valid = ~loadq.empty
        route = FIFO(Bits(3 + 3 + 16 * 4), ROUTE_FIFO_DEPTH, clk, rst)
        rd_ready = dma.rd_cmd_ready
        rd["cmd_valid"].assign(~route.full & (fetch_req | (l_valid & ~l_zero)))
        rd["cmd_addr"].assign(Mux(fetch_req, _field(lh, 1, AW), fetch_addr.q))
        fetch_beats = _shl(chunk, CMD_BEATS.bit_length() - 1, 16)
        rd["cmd_beats"].assign(Mux(fetch_req, _field(lh, 2, 16), fetch_beats))
        rd["cmd_rows"].assign(Mux(fetch_req, _field(lh, 3, 16), Bits(16)(1)))
        rd["cmd_stride"].assign(Mux(fetch_req, _field(lh, 4, AW), Bits(AW)(0)))
        fg = fetch_req & ~route.full & rd_ready
        fetch_go.assign(fg)
        load_go = ~fetch_req & l_valid & ~route.full & (l_zero | rd_ready)
        loadq.pop(load_go)
        # route entry: dst(3) flags(3) index(16) word(16) beats(16) rows(16)
        l_entry = BitsSignal.concat([_field(lh, 3, 16), _field(lh, 2, 16), _field(lh, 6, 16),
                                     _field(lh, 5, 16), l_flags[0:3], l_dst[0:3]])
        f_entry = BitsSignal.concat([Bits(16)(1), fetch_beats,
                                     Bits(16)(0), Bits(16)(0), Bits(3)(0), Bits(3)(DST_CMD)])
        route.push(Mux(fg, l_entry, f_entry), fg | load_go)

        # ---------------------------------------------------------------- router
        # the route FIFO's head goes through a register slice, its destination decoded
        # (one-hot) and beats - 1 / rows - 1 (the ZERO loads' last-beat compares) computed
        # before it: the router's logic starts from flops, not from the LUT-RAM read
        DSTS = (DST_A, DST_B, DST_P, DST_X, DST_S, DST_CMD)
        rre = route.output
        r_pop_w = Wire(Bits(1), "route_pop")
        pre = BitsSignal.concat([(_u(rre[54:70], 16) - 1).as_bits(16),
                                 (_u(rre[38:54], 16) - 1).as_bits(16)]
                                + [rre[0:3] == Bits(3)(d) for d in reversed(DSTS)] + [rre])
        r_valid, re, route_ready = register_slice(clk, rst, ~route.empty, pre, r_pop_w,
                                                  "route_head")
        route.pop(~route.empty & route_ready)
        r_lanes, r_commit, r_zero = re[3], re[4], re[5]
        r_index, r_word = re[6:22], re[22:38]
        is_dst = {d: re[70 + i] for i, d in enumerate(DSTS)}
        r_beats_m1, r_rows_m1 = re[76:92], re[92:108]
        bcnt = NamedReg(16, clk, rst, 0, name="route_beat_in_row")
        rcnt = NamedReg(16, clk, rst, 0, name="route_row")
        tcnt = NamedReg(16, clk, rst, 0, name="route_beat")
        z_row_last = bcnt.q == r_beats_m1
        z_last = z_row_last & (rcnt.q == r_rows_m1)
        beat_valid = r_valid & Mux(r_zero, dma.rd_out_valid, one)
        beat_data = Mux(r_zero, dma.rd_out_data, Bits(W)(0))
        row_last = Mux(r_zero, dma.rd_out_row_last, z_row_last)
        cmd_last = Mux(r_zero, dma.rd_out_last, z_last)

        mm_a_ready = Wire(Bits(1), "a_wr_ready")
        mm_b_ready = Wire(Bits(1), "b_wr_ready")
        p_ready = Wire(Bits(1), "param_in_ready")
        x_ready = Wire(Bits(1), "x_wr_ready")
        s_ready = Wire(Bits(1), "s_ready")
        c_ready = Wire(Bits(1), "cmd_in_ready")
        dst_ready = ((is_dst[DST_A] & mm_a_ready) | (is_dst[DST_B] & mm_b_ready) |
                     (is_dst[DST_P] & p_ready) | (is_dst[DST_X] & x_ready) |
                     (is_dst[DST_S] & s_ready) | (is_dst[DST_CMD] & c_ready))
        beat_fire = beat_valid & dst_ready
        rd["out_ready"].assign(r_valid & ~r_zero & dst_ready)
        r_pop_w.assign(beat_fire & cmd_last)
        bcnt.next(Mux(beat_fire, bcnt.q, Mux(row_last, _inc(bcnt.q, 16), Bits(16)(0))))
        rcnt.next(Mux(beat_fire, rcnt.q,
                      Mux(cmd_last, Mux(row_last, rcnt.q, _inc(rcnt.q, 16)), Bits(16)(0))))
        tcnt.next(Mux(beat_fire, tcnt.q, Mux(cmd_last, _inc(tcnt.q, 16), Bits(16)(0))))
        lane = Mux(r_lanes, r_index, (_u(r_index, 16) + _u(rcnt.q, 16)).as_bits(16))
        word = (_u(r_word, 16) + _u(Mux(r_lanes, tcnt.q, bcnt.q), 16)).as_bits(16)
        commit = beat_fire & cmd_last & r_commit

        # command FIFO input: W-bit beats packed into 256-bit commands
        pack = CmdPack(clk=clk, rst=rst, in_data=beat_data, in_last=zero,
                       in_valid=beat_valid & is_dst[DST_CMD], out_ready=~cmdq.full,
                       instance_name="cmd_pack")
        c_ready.assign(pack.in_ready)
        cmdq.push(pack.out_data, pack.out_valid & ~cmdq.full)

        # parameter words: W-bit beats split into 32-bit words
        psplit = ParamSplit(clk=clk, rst=rst, in_data=beat_data, in_last=cmd_last,
                            in_valid=beat_valid & is_dst[DST_P], out_ready=one,
                            instance_name="param_split")
        p_ready.assign(psplit.in_ready)
        pword = NamedReg(16, clk, rst, 0, name="param_word")
        p_base = _shl(r_index, 2, 16)
        pfire = psplit.out_valid
        pword.next(Mux(pfire, pword.q, Mux(psplit.out_last, _inc(pword.q, 16), Bits(16)(0))))

        # ---------------------------------------------------------------- matmul unit
        eh = execq.output
        mm_c_ready = Wire(Bits(1), "c_ready")
        mm = _inst(Mm, "matmul", clk=clk, rst=rst,
                a_wr_valid=beat_valid & is_dst[DST_A], a_wr_lane=lane,
                a_wr_word=word, a_wr_data=beat_data,
                a_commit=commit & is_dst[DST_A],
                b_wr_valid=beat_valid & is_dst[DST_B], b_wr_lane=lane,
                b_wr_word=word, b_wr_data=beat_data,
                b_commit=commit & is_dst[DST_B],
                ex_k=_field(eh, 1, 16), ex_a_word=_field(eh, 2, 16),
                ex_b_word=_field(eh, 3, 16), ex_rel_a=eh[8], ex_rel_b=eh[9],
                ex_valid=~execq.empty, c_ready=mm_c_ready)
        mm_a_ready.assign(mm.a_wr_ready)
        mm_b_ready.assign(mm.b_wr_ready)
        execq.pop(~execq.empty & mm.ex_ready)

        # ---------------------------------------------------------------- store engine
        sh = storeq.output
        s_wc_ready, s_wd_ready = Wire(Bits(1), "st_wc_ready"), Wire(Bits(1), "st_wd_ready")
        st = _inst(St, "store", clk=clk, rst=rst, c_data=mm.c_data, c_last=mm.c_last, c_valid=mm.c_valid,
                p_wr_valid=pfire, p_wr_index=(_u(p_base, 16) + _u(pword.q, 16)).as_bits(16),
                p_wr_data=psplit.out_data,
                st_addr=_field(sh, 1, AW), st_rows=_field(sh, 2, 16),
                st_stride=_word(sh, 3), st_p_index=_field(sh, 4, 16),
                st_relu=sh[8], st_per_tensor=sh[9], st_valid=~storeq.empty,
                wc_ready=s_wc_ready, wd_ready=s_wd_ready)
        mm_c_ready.assign(st.c_ready)
        storeq.pop(~storeq.empty & st.st_ready)
        st_busy_w.assign(st.busy)

        # ---------------------------------------------------------------- vector engine
        vh = vecq.output
        v_wc_ready, v_wd_ready = Wire(Bits(1), "vec_wc_ready"), Wire(Bits(1), "vec_wd_ready")
        vec = _inst(Vec, "vector", clk=clk, rst=rst,
                  x_wr_valid=beat_valid & is_dst[DST_X],
                  x_wr_index=(_u(r_index, 16) + _u(tcnt.q, 16)).as_bits(16),
                  x_wr_data=beat_data, s_data=beat_data, s_valid=beat_valid & is_dst[DST_S],
                  v_n=_field(vh, 1, 16), v_x_off=_field(vh, 2, 16), v_dst=_field(vh, 3, AW),
                  v_ma=_word(vh, 4), v_mb=_word(vh, 5),
                  v_shift=_word(vh, 6),
                  v_max=vh[8], v_relu=vh[9], v_to_x=vh[10], v_valid=~vecq.empty,
                  wc_ready=v_wc_ready, wd_ready=v_wd_ready)
        x_ready.assign(vec.x_wr_ready)
        s_ready.assign(vec.s_ready)
        vecq.pop(~vecq.empty & vec.v_ready)
        vec_busy_w.assign(vec.busy)

        # ---------------------------------------------------------------- write arbiter
        own = FIFO(Bits(33), 4, clk, rst)
        s_wants = st.wc_valid
        pick_v = ~s_wants
        any_wc = s_wants | vec.wc_valid
        wr["cmd_valid"].assign(any_wc & ~own.full)
        wr["cmd_addr"].assign(Mux(pick_v, st.wc_addr, vec.wc_addr))
        wr["cmd_beats"].assign(Mux(pick_v, st.wc_beats, vec.wc_beats))
        wr["cmd_rows"].assign(Mux(pick_v, st.wc_rows, vec.wc_rows))
        wr["cmd_stride"].assign(Mux(pick_v, st.wc_stride, vec.wc_stride))
        wc_fire = any_wc & ~own.full & dma.wr_cmd_ready
        s_wc_ready.assign(~own.full & dma.wr_cmd_ready)
        v_wc_ready.assign(~own.full & dma.wr_cmd_ready & ~s_wants)
        # beats per row and rows of the command, counted apart on the data side (timing: the
        # product beats*rows was a multiplier on the command path)
        own.push(BitsSignal.concat([Mux(pick_v, st.wc_rows, vec.wc_rows),
                                    Mux(pick_v, st.wc_beats, vec.wc_beats), pick_v]), wc_fire)
        oh = own.output
        o_vec, o_bpr, o_rows = oh[0], oh[1:17], oh[17:33]
        o_valid = ~own.empty
        wbeat = NamedReg(16, clk, rst, 1, name="write_beat_in_row")  # counts from 1
        wrow = NamedReg(16, clk, rst, 1, name="write_row")            # counts from 1
        wr["in_data"].assign(Mux(o_vec, st.wd_data, vec.wd_data))
        wr["in_valid"].assign(o_valid & Mux(o_vec, st.wd_valid, vec.wd_valid))
        wfire = o_valid & Mux(o_vec, st.wd_valid, vec.wd_valid) & dma.wr_in_ready
        wb_last = wbeat.q == o_bpr
        wr_last = wrow.q == o_rows
        w_last = wb_last & wr_last
        wbeat.next(Mux(wfire, wbeat.q, Mux(wb_last, _inc(wbeat.q, 16), Bits(16)(1))))
        wrow.next(Mux(wfire & wb_last, wrow.q, Mux(wr_last, _inc(wrow.q, 16), Bits(16)(1))))
        own.pop(wfire & w_last)
        s_wd_ready.assign(o_valid & ~o_vec & dma.wr_in_ready)
        v_wd_ready.assign(o_valid & o_vec & dma.wr_in_ready)

        # ---------------------------------------------------------------- done, status, perf
        idle = ((fetch_left.q == Bits(32)(0)) & (credits_used.q == Bits(CW)(0)) &
                cmdq.empty & ~head_valid & loadq.empty & execq.empty & storeq.empty & vecq.empty &
                route.empty & ~r_valid & ~mm.busy & ~st.busy & ~vec.busy & own.empty &
                ~dma.rd_busy & ~dma.wr_busy & ~start)
        finish = running.q & idle
        running.next(Mux(start, Mux(finish, running.q, zero), one))
        err_code = BitsSignal.concat([Bits(3)(0), bad & dispatch,
                                      Bits(1)(0), mm.err, dma.wr_err, dma.rd_err])
        err_sticky = NamedReg(8, clk, rst, 0, name="err_code")
        err_sticky.next(Mux(start, err_sticky.q | err_code, Bits(8)(0)))
        w["status"].assign(BitsSignal.concat([err_sticky.q, Bits(7)(0), running.q]))
        events_set.assign(BitsSignal.concat([err_code != Bits(8)(0), finish]))

        def perf(name, inc, amount=1):
            r = NamedReg(32, clk, rst, 0, name=name)
            nxt = Mux(inc & running.q, r.q, (_u(r.q, 32) + amount).as_bits(32))
            r.next(Mux(start, nxt, Bits(32)(0)))
            w[name].assign(r.q)

        perf("perf_cycles", one)
        perf("perf_core_busy", mm.core_fire)
        perf("perf_stall", mm.stall)
        perf("perf_dma_rd_bytes", dma.rd_out_valid & rd["out_ready"], AB)
        perf("perf_dma_wr_bytes", wfire, AB)

    cls = type("PycdeAccelTop", (Module,), {**ports, "build": generator(build)})
    return name_module(cls, "pycde_accel_top")
