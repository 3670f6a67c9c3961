"""The accelerator top: AXI4 DMA, command fetch and dispatch, the read-data router, the matmul
unit (operand scratchpads + systolic core), the store and vector engines, the write arbiter and
the AXI4-Lite CSRs.

``make_accelerator(config, requant, add_kernel, max_kernel, mul_kernel)`` -> module ``pycde_accel_top``
(``requant``/``add_kernel``/``max_kernel``: the lowered post-op kernels as streaming modules,
``lowering.stream.stream_module``; :func:`pycde_accel.assemble.emit_accelerator` lowers and imports
them).

Execution model: decoupled access / execute, commands in DRAM
-------------------------------------------------------------
The compiler (``pycde_accel.backend.commands``) turns every layer into a list of 32-byte
commands (LOAD, EXEC, STORE, VEC), all layers in one list with a FENCE between layers, in the
DRAM image. The host runs the whole list per ``start``: ``cmd_base``/``cmd_count`` CSRs,
``ctrl.start``, then ``events.done``. The accelerator:

1. *fetches* the commands by DMA, up to ``FETCH_CHUNK`` commands per read, as long as the
   command FIFO (``CMD_FIFO_DEPTH``) has room for everything requested (credits, so fetched
   data never stalls the read channel);
2. *dispatches* them strictly in order to four engine FIFOs (``ENGINE_FIFO_DEPTH`` each, each
   with a register slice behind it, so an engine takes its command from flops: a command
   reaches its engine 2 cycles after dispatch):
   LOAD -> load engine, EXEC -> matmul unit, STORE -> store engine, VEC -> vector engine.
   Two write-after-read hazards are resolved here: a LOAD into the store engine's parameter
   memory (dst P) is dispatched only once every earlier STORE has finished (store queue empty,
   engine idle), and a LOAD into the vector engine's X buffer only once every earlier VEC has;
   an unknown opcode sets ``status.err_code`` bit 4 and is dropped. The command FIFO's head
   reaches dispatch through a register slice (opcode and LOAD destination decoded before it),
   one command per cycle, 1 cycle later than straight from the FIFO; the engines' idle
   conditions reach it registered (so a LOAD P / LOAD X goes 1 cycle after the engine is idle);
3. the *load engine* issues each LOAD as one 2-D DMA read (ZERO loads: none) and records its
   destination in the *route FIFO*; the fetcher's reads share the DMA (fetch first); the
   read command reaches the DMA through a one-entry register (``rd_cmd_q``, one cycle) that
   takes a command only while the DMA's splitter is idle;
4. the *router* takes the read data in order (AXI reads are in order, ID 0) and, per the route
   FIFO's head, writes it to the A or B operand scratchpad (lane/word addressing, COMMIT after
   the last beat), the parameter memory (as 32-bit words), the X buffer, the S stream, or the
   command FIFO (the route FIFO's head comes through a register slice, its destination
   decoded: no bubble between entries). A destination that cannot take data stalls the AXI R
   channel: a LOAD into a scratchpad bank waits for the EXEC that releases it, and since that
   EXEC was dispatched earlier, an in-order program cannot deadlock;
5. the STORE and VEC engines' DMA write commands share the write DMA (STORE first); an owner
   FIFO routes each command's data beats in command order.

A FENCE (the compiler puts one between consecutive layers of the one command list of a
model) goes to no engine: dispatch holds it until every earlier command has finished (the
engine FIFOs empty, the engines idle, every LOAD's data routed, the write side idle with its
last response taken; :mod:`.dispatch`), so a layer reads from DRAM what the earlier ones wrote
without a host round trip; fetch goes on across it. On its dispatch edge the performance
counters (cycles, core busy, stall, DMA bytes, commands dispatched) are written into entry
``stamp_count`` of the stamp memory (``STAMP_DEPTH`` entries, ``seq.hlmem``, read latency 1,
read through the ``stamp_sel`` CSR and the ``stamp_*`` registers); ``stamp_count`` counts
the run's FENCEs. Per-layer figures are the differences between stamps.

``done`` (``events.done``, the ``irq`` output) rises when every command was dispatched and
every FIFO, engine and DMA engine is idle (the last write response taken), one edge after
that state was reached (the idle condition is registered, ``counters.StatusCounters``).

Parts (each its own file, its ports, protocol and latency in its docstring; this module
composes them inside one generator, so they add no module boundaries to the SV):
:mod:`.fetch` (1., the command FIFO and its credits), :mod:`.dispatch` (2.),
:mod:`.load_engine` (3., the route FIFO), :mod:`.read_router` (4.), the engines
(:mod:`.matmul_unit`, :mod:`.store_engine`, :mod:`.vector_engine`), :mod:`.write_arbiter` (5.)
and :mod:`.counters` (status, events, performance counters); :mod:`.axi_dma` and
:mod:`.axil_csr` are modules of their own.

Ports: ``clk``, ``rst`` (synchronous, active high); AXI4 master ``m_axi_*`` (data
``axi_data_width``, address ``axi_addr_width``, ID 1 bit, INCR bursts, see ``axi_dma``);
AXI4-Lite slave ``s_axil_*`` (``axil_data_width``, 12 address bits; map:
``axil_csr.default_csr_map``); ``irq`` (out: ``events`` non-zero).

Performance counters (cleared by start, counting while busy): cycles, core-busy cycles (a beat
entered the core), stall cycles (an EXEC active and no beat entered), DMA bytes read and
written, commands dispatched.
"""

from __future__ import annotations

from pycde import Clock, Input, Module, Output, Reset
from pycde.constructs import Mux, Wire
from pycde.signals import BitsSignal
from pycde.types import Bits

from .. import contract
from ..config import AccelConfig
# the command encoding and the structure the software relies on: the contract's
from ..contract import (CMD_BITS, CMD_FIFO_DEPTH, DST_A, DST_B, DST_CMD, DST_P, DST_S, DST_X,
                        ENGINE_FIFO_DEPTH, ERR_BAD_OP, EXEC_CHAIN, EXEC_DW, ERR_CORE, ERR_DMA_RD, ERR_DMA_WR,
                        FETCH_CHUNK, MAX_BURST, MAX_OUTSTANDING, OP_EXEC, OP_FENCE, OP_LOAD,
                        OP_STORE, OP_VEC, PERF_COUNTERS, PERF_CMDS, ROUTE_FIFO_DEPTH, STAMP_DEPTH,
                        STAMP_REGS, hw_info)
from .axi_dma import command_stream, make_axi_dma
from .axil_csr import default_csr_map, make_axil_csr
from .bits import inc, resize
from .common import NamedReg, dual_port_mem
from .counters import StatusCounters
from .dispatch import CommandQueue, Decode, Dispatcher, EngineDecode, cmd_field, cmd_word
from .fetch import Fetcher
from .keep_ff import replicated
from .load_engine import LoadEngine, load_entry
from .read_router import ReadRouter, route_decode, route_decode_width
from .scratchpad import make_width_adapter
from .stream import module, pack, unpack
from .write_arbiter import WriteArbiter

def check_config(config: AccelConfig) -> None:
    """Refuse a config the accelerator top cannot be built for (ConfigError): the contract's
    rules (:func:`pycde_accel.contract.check_config`)."""
    contract.check_config(config, "accelerator")


def _inst(cls, instance_name, **ports):
    """Instantiate ``cls``, zero-extending or truncating each Bits input to its port width
    (command fields are 16/32-bit words; engines declare the widths they need)."""
    widths = {p.name: p.type.width for p in cls._builder.inputs
              if hasattr(p.type, "width") and p.name not in ("clk", "rst")}
    fixed = {k: (resize(v, widths[k]) if k in widths and v.type.width != widths[k] else v)
             for k, v in ports.items()}
    return cls(**fixed, instance_name=instance_name)


def _bus_in(p, cls, prefix: str) -> dict:
    """``cls``'s inputs named ``prefix*`` (an AXI bus), from the top's ports of those names."""
    return {port.name: getattr(p, port.name) for port in cls._builder.inputs
            if port.name.startswith(prefix)}


def _bus_out(p, cls, inst, prefix: str) -> None:
    """The top's outputs named ``prefix*``, from the instance's outputs of those names."""
    for port in cls._builder.outputs:
        if port.name.startswith(prefix):
            setattr(p, port.name, getattr(inst, port.name))


def make_accelerator(config: AccelConfig, requant, add_kernel, max_kernel,
                     mul_kernel=None, row_reduce=None) -> type[Module]:
    """The accelerator top module class for ``config`` (ConfigError for a bad config).
    ``row_reduce``: the vector engine's ROWRED unit (``rtl_lib.row_reduce``), or None."""
    from .matmul_unit import make_matmul_unit
    from .store_engine import make_store_engine, row_mask as st_row_mask
    from .vector_engine import make_vector_engine

    config.validate()
    check_config(config)
    W, AW = config.axi_data_width, config.axi_addr_width
    R, C = config.rows, config.cols
    AB = W // 8
    CMD_BEATS = CMD_BITS // W
    csr_map = default_csr_map(AW, config.axil_data_width)
    Csr = make_axil_csr(csr_map, "accel_csr")
    Dma = make_axi_dma(W, AW, MAX_BURST, MAX_OUTSTANDING, 16, 16)
    Mm = make_matmul_unit(config)
    St = make_store_engine(config, requant)
    Vec = make_vector_engine(config, add_kernel, max_kernel, mul_kernel, row_reduce)
    CmdPack = make_width_adapter(W, CMD_BITS, whole=True)   # a command is whole beats
    ParamSplit = make_width_adapter(W, 32)
    # the DMA's command ports (valid and payload; its ready is an output)
    dma_cmd = [(f"cmd_{n}", w) for n, w in command_stream(AW).layout if n != "ready"]

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

        # ---------------------------------------------------------------- CSRs
        status = StatusCounters(csr_map)
        csr = Csr(clk=clk, rst=rst, **_bus_in(p, Csr, "s_axil"), **status.csr_ports(),
                  instance_name="csr")
        _bus_out(p, Csr, csr, "s_axil")
        start = csr.ctrl[0]
        p.irq = csr.events != Bits(2)(0)
        status.csr["hw_info"].assign(Bits(32)(hw_info(config)))
        running = status.run_flag(clk, rst)

        # ---------------------------------------------------------------- DMA
        rd = {n: Wire(Bits(t), f"rd_{n}") for n, t in dma_cmd + [("out_ready", 1)]}
        wr = {n: Wire(Bits(t), f"wr_{n}") for n, t in
              dma_cmd + [("in_data", W), ("in_valid", 1)]}
        dma = Dma(clk=clk, rst=rst, **_bus_in(p, Dma, "m_axi"),
                  **{f"rd_{n}": v for n, v in rd.items()},
                  **{f"wr_{n}": v for n, v in wr.items()}, instance_name="dma")
        _bus_out(p, Dma, dma, "m_axi")

        # ---------------------------------------------------------------- fetch, dispatch
        fetch = Fetcher(clk, rst, running, start, csr.cmd_base, csr.cmd_count, AW, CMD_BITS,
                        CMD_FIFO_DEPTH, FETCH_CHUNK)
        # a VEC's n != 0 and n == 1 are decoded on the way into the vector queue: the engine's
        # accept sets its token and "reads left" flags from them (vec_head_d -> the 16-bit
        # compares -> mb_tok_valid was the placed 8x8's critical path on seed 2 at a190752)
        def vec_n_flags(cmd):
            n = cmd_field(cmd, 1, 16)
            return BitsSignal.concat([n == Bits(16)(1), n != Bits(16)(0)])

        # a STORE's row mask (bit r: row r is written) likewise: the store engine's intake
        # pushes it into its output queue as it is (see store_engine's ``st_row_mask``)
        # a LOAD's route entry is decoded (``route_decode``) on its way into the command FIFO
        # and carried into the load queue: the load engine stores the decode from the queue's
        # slice flops into the route FIFO
        route_dsts = (DST_A, DST_B, DST_P, DST_X, DST_S, DST_CMD)
        route_dec = EngineDecode(route_decode_width(route_dsts, max(R, C)),
                                 lambda e: route_decode(e, route_dsts, max(R, C)))
        cmdq = CommandQueue(CMD_BITS, CMD_FIFO_DEPTH, clk, rst,
                            Decode((OP_LOAD, OP_EXEC, OP_STORE, OP_VEC), OP_FENCE, DST_P, DST_X),
                            {"vec": EngineDecode(2, vec_n_flags),
                             "store": EngineDecode(R, lambda cmd: st_row_mask(
                                 cmd_field(cmd, 2, 16), R)),
                             "load": EngineDecode(route_dec.width,
                                                  lambda cmd: route_dec(load_entry(cmd)))})
        disp = Dispatcher(clk, rst, cmdq, start, fetch.pop, ENGINE_FIFO_DEPTH)
        loadq, execq, storeq, vecq = disp.queues
        status.csr["perf_cmds"].assign(disp.dispatched)

        # ---------------------------------------------------------------- loads, read data
        # the read command reaches the DMA through a one-entry register (rd_cmd_q): fetch and
        # the load engine see its ready (flops: the register is empty and the splitter idle)
        # and the splitter takes its command from flops. Fetch's request -> the load engine's
        # issue -> the splitter's cmd_fire -> its next-state muxes was the placed 8x8's
        # critical path at fd39ae6 (seed 1, 9.53 ns). The register takes a command only while
        # the splitter is idle, so commands reach the DMA in the order the port was free for
        # them, as without it (a 2-entry slice let LOADs queue ahead of fetch's reads: their
        # data then waited on busy scratchpad banks in front of the commands that free them,
        # +7% on the 4x8's resblock). One cycle more per read command (perfmodel.dma.ReadDma)
        le_rd = {n: Wire(Bits(t), f"le_rd_{n}") for n, t in dma_cmd}
        fields = [n for n, _ in dma_cmd if n != "cmd_valid"]
        q_v = NamedReg(1, clk, rst, 0, name="rd_cmd_q_v")
        q_ready = ~q_v.q & dma.rd_cmd_ready
        q_d = NamedReg(sum(le_rd[n].type.width for n in fields), clk, None, None, ce=q_ready,
                       name="rd_cmd_q_d")
        q_d.next(pack({n: le_rd[n] for n in fields}))
        # empty: takes a valid command while the splitter is idle; full: held until taken
        q_v_next = Mux(q_v.q, le_rd["cmd_valid"] & dma.rd_cmd_ready, ~dma.rd_cmd_ready)
        q_v.next(q_v_next)
        # the splitter sees a kept copy of the valid flop (rtl_lib.keep_ff), free to sit
        # beside it: the top's rd_cmd_q_v (62,5) -> a 2.52 ns route -> the splitter's
        # cmd_fire -> next_row_q's enable (25,6) was the placed 8x8's critical path on seed
        # 3 at ade49bc; rd_cmd_q_v itself stays with fetch and the load engine's ready
        rd["cmd_valid"].assign(replicated(clk, rst, q_v_next, 1, "rd_cmd_q_v_dma")[0])
        for n, sig in unpack(q_d.q, {n: le_rd[n].type.width for n in fields}).items():
            rd[n].assign(sig)
        load = LoadEngine(clk, rst, loadq, fetch, le_rd, q_ready, AW, CMD_BEATS,
                          ROUTE_FIFO_DEPTH, DST_CMD, route_dec)
        route = load.route
        rt = ReadRouter(clk, rst, route, dma, rd["out_ready"], cmdq, CmdPack, ParamSplit,
                        route_dsts, W, max(R, C))

        # ---------------------------------------------------------------- matmul unit
        eh = execq.output
        mm_c_ready = Wire(Bits(1), "c_ready")
        mm = _inst(Mm, "matmul", clk=clk, rst=rst, **rt.spad_write(DST_A, "a", R),
                   **rt.spad_write(DST_B, "b", C),
                   ex_k=cmd_field(eh, 1, 16), ex_a_word=cmd_field(eh, 2, 16),
                   ex_b_word=cmd_field(eh, 3, 16), ex_rel_a=eh[8], ex_rel_b=eh[9],
                   ex_chain=eh[8 + (EXEC_CHAIN.bit_length() - 1)],
                   ex_dw=eh[8 + (EXEC_DW.bit_length() - 1)],
                   ex_valid=~execq.empty, c_ready=mm_c_ready)
        rt.ready[DST_A].assign(mm.a_wr_ready)
        rt.ready[DST_B].assign(mm.b_wr_ready)
        execq.pop(~execq.empty & mm.ex_ready)

        # ---------------------------------------------------------------- store engine
        arb = WriteArbiter("st", "vec")
        sh = storeq.output
        st = _inst(St, "store", clk=clk, rst=rst, c_data=mm.c_data, c_last=mm.c_last,
                   c_valid=mm.c_valid, p_wr_valid=rt.p_valid, p_wr_index=rt.param_index(),
                   p_wr_data=rt.p_data,
                   st_addr=cmd_field(sh, 1, AW), st_rows=cmd_field(sh, 2, 16),
                   st_row_mask=storeq.decoded,
                   st_stride=cmd_word(sh, 3), st_p_index=cmd_field(sh, 4, 16),
                   st_relu=sh[8], st_per_tensor=sh[9], st_valid=~storeq.empty,
                   **arb.ports("st"))
        mm_c_ready.assign(st.c_ready)
        storeq.pop(~storeq.empty & st.st_ready)
        disp.store_busy.assign(st.busy)

        # ---------------------------------------------------------------- vector engine
        vh = vecq.output
        vec = _inst(Vec, "vector", clk=clk, rst=rst,
                    x_wr_valid=rt.to(DST_X), x_wr_index=rt.x_index(), x_wr_data=rt.beat_data,
                    s_data=rt.beat_data, s_valid=rt.to(DST_S),
                    v_n=cmd_field(vh, 1, 16), v_x_off=cmd_field(vh, 2, 16),
                    v_dst=cmd_field(vh, 3, AW), v_ma=cmd_word(vh, 4), v_mb=cmd_word(vh, 5),
                    v_shift=cmd_word(vh, 6),
                    v_max=vh[8], v_relu=vh[9], v_to_x=vh[10], v_valid=~vecq.empty,
                    v_lut_set=vh[11], v_lut=vh[12], v_mul=vh[13],
                    v_n_nz=vecq.decoded[0], v_n_one=vecq.decoded[1],
                    **({"v_rowred": vh[14]} if row_reduce is not None else {}),
                    **arb.ports("vec"))
        rt.ready[DST_X].assign(vec.x_wr_ready)
        rt.ready[DST_S].assign(vec.s_ready)
        vecq.pop(~vecq.empty & vec.v_ready)
        disp.vec_busy.assign(vec.busy)

        # ---------------------------------------------------------------- write arbiter
        arb.build(clk, rst, st, vec, wr, dma.wr_cmd_ready, dma.wr_in_ready)

        # ---------------------------------------------------------------- FENCE: drained
        # LOADs issued whose data is not yet all delivered (the route FIFO, its slice, the DMA,
        # the router's output slice)
        inflight = NamedReg(5, clk, rst, 0, name="loads_in_flight")
        inflight.next(Mux(load.load_go,
                          Mux(rt.load_done, inflight.q, (inflight.q.as_uint(5) - 1).as_bits(5)),
                          Mux(rt.load_done, inc(inflight.q, 5), inflight.q)))
        disp.drained.assign(loadq.idle & execq.idle & storeq.idle & vecq.idle &
                            (inflight.q == Bits(5)(0)) & ~rt.p_pending & ~mm.busy &
                            ~st.busy & ~vec.busy &
                            arb.own_empty & ~dma.wr_busy)

        # ---------------------------------------------------------------- done, status, perf
        # (by where its terms are: each group is registered on its own, counters.finish)
        idle = {"fetch": fetch.left_zero & fetch.credits_zero & cmdq.empty & ~disp.head_valid
                & ~start,
                "queues": loadq.idle & execq.idle & storeq.idle & vecq.idle,
                "route": load.route_empty & ~rt.r_valid & ~rt.rd_valid & ~rt.out_valid
                & ~rt.p_pending,
                "matmul": ~mm.busy, "store": ~st.busy, "vector": ~vec.busy,
                "write": arb.idle & ~dma.rd_busy & ~dma.wr_busy}
        status.finish(clk, rst, start, idle)
        status.close(clk, rst, start,
                     {ERR_BAD_OP: disp.bad_go, ERR_CORE: mm.err,
                      ERR_DMA_WR: dma.wr_err, ERR_DMA_RD: dma.rd_err},
                     (("perf_cycles", Bits(1)(1), 1), ("perf_core_busy", mm.core_fire, 1),
                      ("perf_stall", mm.stall, 1),
                      ("perf_dma_rd_bytes", dma.rd_out_valid & rd["out_ready"], AB),
                      ("perf_dma_wr_bytes", arb.wfire, AB)))

        # ---------------------------------------------------------------- stamps
        # each FENCE: the counters as they stand on its dispatch edge, into entry stamp_count
        # of the stamp memory (the first STAMP_DEPTH of a run); read through stamp_sel
        stamp_n = NamedReg(32, clk, rst, 0, name="stamp_count")
        stamp_n.next(Mux(start, Mux(disp.fence_go, stamp_n.q, inc(stamp_n.q, 32)),
                         Bits(32)(0)))
        sw = max(1, (STAMP_DEPTH - 1).bit_length())
        room = stamp_n.q.as_uint(32) < STAMP_DEPTH
        vals = [disp.dispatched if n == PERF_CMDS else status.perf_q[n] for n in PERF_COUNTERS]
        # the write is registered (enable, address, counters) and lands one edge after the
        # FENCE's dispatch, with the values of the dispatch edge: the dispatch decision into
        # the block RAMs' write enables was a placed critical path
        st_we = (disp.fence_go & room).reg(clk, rst, rst_value=0, name="stamp_we_q")
        st_wa = stamp_n.q[0:sw].reg(clk, name="stamp_waddr_q")
        st_wd = BitsSignal.concat(list(reversed(vals))).reg(clk, name="stamp_wdata_q")
        stamp_rd = dual_port_mem(clk, rst, "stamp_mem", 32 * len(vals), STAMP_DEPTH,
                                 st_wa, st_wd, st_we, csr.stamp_sel[0:sw])
        status.csr["stamp_count"].assign(stamp_n.q)
        for i, n in enumerate(STAMP_REGS):
            status.csr[n].assign(stamp_rd[32 * i:32 * (i + 1)])

    return module("pycde_accel_top", ports, build)
