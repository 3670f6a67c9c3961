"""Latencies of the perf model, fitted against Verilator runs, and the few structural figures
of the RTL that are not part of the contract (register slices, start/done latency).

The depths, credits and burst rules are the contract's (:mod:`pycde_accel.contract`); the
matmul unit's read-to-core latency and the core's output FIFO depth come from the RTL
generators (``rtl_lib.matmul_unit.ISSUE_TO_CORE``, ``rtl_lib.systolic.out_fifo_depth``), read
when a layer is modelled.
"""

from __future__ import annotations

from functools import lru_cache

from ..config import AccelConfig

#: memory models of the simulation engines: (read latency: AR accepted -> first R beat,
#: write latency: last W beat -> B response taken). ``rtl``: sim/axi_mem.sv (the native and
#: cocotb engines); ``axiram``: cocotbext-axi's AxiRam (the axiram engine). The bandwidth is
#: not a latency: :mod:`.memory` charges it.
MEMORIES = {"rtl": (3, 2), "axiram": (3, 2)}
READ_LATENCY, WRITE_LATENCY = MEMORIES["rtl"]
#: per kernel route (config.schedule): store engine latency (a row taken -> its last beat out,
#: beyond the row's C cycles of one element each), VEC start-up per command, VEC ADD cycles per
#: beat beyond AB (the handshake kernel's restart bubble per run; the static pipeline has none),
#: and the ADD / MAX kernels' drain (last element in -> last result out, beyond one beat's AB
#: cycles for ADD, one cycle for MAX: its AB lane kernels take a beat per cycle), the
#: requantize kernel's cycles between tiles (its restart per run), the MUL kernel's drain
#: beyond ADD's and the row-reduction unit's drain (a row's last S beat -> its first result
#: beat). The static route's entries are its kernels' pipeline latencies (:func:`timing`) plus
#: the fixed cycles around them below.
SCHEDULE_TIMING = {
    "dynamic": {"store_latency": 6, "vec_startup": 6, "add_bubble": 1, "add_drain": -2,
                "max_drain": 0, "store_bubble": 2, "mul_extra_drain": 16, "rowred_drain": 44},
    "static": {"vec_startup": 6, "add_bubble": 0, "store_bubble": 0},
}
#: the static route: each entry = the sum of these kernels' latencies (``lowering.schedule``:
#: "-" subtracts one) + the cycles around them (fitted against Verilator runs: the store
#: engine's S1/S2 stages, lane queues and register slices, the vector engine's pair FIFO and result
#: register, the row unit's accumulator and broadcast)
STATIC_AROUND = {
    "store_latency": (("requant",), 6),
    "add_drain": (("add",), 0),
    "max_drain": (("max",), 1),
    "mul_extra_drain": (("mul", "-add"), 4),
    "rowred_drain": (("row_lanes", "row_rq"), 6),
}


def kernel_latencies(ab: int) -> dict:
    """The static-route pipeline latency of each accelerator kernel, by role (as
    ``pycde_accel.assemble.accel_kernels`` builds them; a latency does not depend on the
    element count, only the lane tree's on ``ab``)."""
    return dict(_latencies(ab))


@lru_cache(maxsize=None)
def _latencies(ab: int) -> tuple:
    from ..lowering import kernels
    from ..lowering.schedule import kernel_latency
    from ..lowering.split_mul import split_wide_muls

    ks = {"requant": kernels.requantize(8, per_channel=True), "add": kernels.residual_add(ab),
          "max": kernels.maxpool(8, k=2), "mul": kernels.mul_requantize(ab),
          "row_lanes": kernels.row_lanes(8, ab), "row_rq": kernels.requantize(8, per_channel=True)}
    return tuple((role, kernel_latency(split_wide_muls(k))) for role, k in ks.items())


#: register slices (rtl_lib.common.register_slice, 2 entries, latency 1) in front of dispatch
#: (the command FIFO's head), of the router (the route FIFO's head) and of the vector engine's
#: S input
SLICE = 2
#: the read DMA's R register slice (rtl_lib.axi_dma, ``r_q``, latency 1): a beat the memory
#: returns leaves the DMA one cycle later
RD_SLICE = 1
#: the router's own slice on the DMA's beats (rtl_lib.read_router, ``route_rd``): latency 1,
#: 2 entries, takes a beat while it held fewer than 2 at the cycle's start (``in_ready`` is a
#: flop); the DMA's outstanding burst is released when its last beat enters it
ROUTE_RD_SLICE = 2
#: the router's slice on its output (rtl_lib.read_router, ``route_out``): latency 1, 2 entries,
#: takes a beat while it held fewer than 2 at the cycle's start; the destinations take the
#: beats from it
ROUTE_OUT_SLICE = 2
#: the write arbiter's skid buffer on each engine's write data (rtl_lib.skid_buffer, latency
#: 1): a beat an engine offers reaches the arbiter's data slice one cycle later
WD_SKID = 1
#: the write DMA's W register slice (rtl_lib.axi_dma, ``w_q``, latency 1): a beat the DMA takes
#: reaches the memory one cycle later, and so does its burst's B response
W_SLICE = 1
#: the write DMA's command register slice (rtl_lib.axi_dma, ``wr_cmd_q``, latency 1): a
#: command's bursts reach the splitter one cycle later
WR_CMD_SLICE = 1
#: the write DMA's burst-length FIFO and the register slice on its head (``lens_q``): a
#: burst's first W beat can be taken this many cycles after its AW
AW_TO_W = 2
DONE_LATENCY = 2        # everything idle -> done seen by the cycle counter (idle registered)
START_LATENCY = 1       # start -> first fetch request
#: the core: a tile's first result row this many cycles after its last beat, beyond rows + cols
#: (``rtl_lib.pe.PE_LATENCY`` = 4 in the core, 1 in the matmul unit's C register slice,
#: ``c_out_q``; ``tests/test_perfmodel.py`` checks the sum against the RTL's constants)
CORE_RESULT_EXTRA = 5
#: an operand scratchpad's commit (with the last beat) -> the bank readable: the write stage
#: delays the commit by one edge (``rtl_lib.operand_spad``)
SPAD_COMMIT_LATENCY = 2
#: the vector engine: an S beat's X read to the element serializer
VEC_S_TO_START = 3
#: the vector engine's slice on its DRAM-bound result beats (``rtl_lib.vector_engine``,
#: ``wd_out``, latency 1; the engine finishes once it drained): TO_X beats do not pass it
VEC_WD_SLICE = 1

INF = float("inf")


def timing(config: AccelConfig) -> dict:
    """The :data:`SCHEDULE_TIMING` entry of ``config``'s kernel route; for the static route
    with the terms that follow its kernels' latencies (:data:`STATIC_AROUND`)."""
    route = getattr(config, "schedule", "dynamic")
    tm = dict(SCHEDULE_TIMING[route])
    if route == "static":
        lat = kernel_latencies(config.axi_data_width // 8)
        for key, (roles, extra) in STATIC_AROUND.items():
            tm[key] = extra + sum(-lat[r[1:]] if r[0] == "-" else lat[r] for r in roles)
    return tm
