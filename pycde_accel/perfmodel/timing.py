"""Latencies of the perf model, fitted against Verilator runs, and the few structural figures
of the RTL that are not part of the contract (register slices, start/done latency).

The depths, credits and burst rules are the contract's (:mod:`pycde_accel.contract`); the
matmul unit's read-to-core latency and the core's output FIFO depth come from the RTL
generators (``rtl_lib.matmul_unit.ISSUE_TO_CORE``, ``rtl_lib.systolic.out_fifo_depth``), read
when a layer is modelled.
"""

from __future__ import annotations

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
#: cycles for ADD, one cycle for MAX: its AB lane kernels take a beat per cycle), and the
#: requantize kernel's cycles between tiles (its restart per run)
SCHEDULE_TIMING = {
    "dynamic": {"store_latency": 5, "vec_startup": 6, "add_bubble": 1, "add_drain": -2,
                "max_drain": 0, "store_bubble": 2},
    "static": {"store_latency": 33, "vec_startup": 6, "add_bubble": 0, "add_drain": 18,
               "max_drain": 3, "store_bubble": 0},
}
#: register slices (rtl_lib.common.register_slice, 2 entries, latency 1) in front of dispatch
#: (the command FIFO's head), of the router (the route FIFO's head) and of the vector engine's
#: S input
SLICE = 2
#: the write arbiter's skid buffer on each engine's write data (rtl_lib.skid_buffer, latency
#: 1): a beat an engine offers reaches the arbiter's data slice one cycle later
WD_SKID = 1
DONE_LATENCY = 1        # everything idle -> done seen by the cycle counter
START_LATENCY = 1       # start -> first fetch request
#: the core: a tile's first result row this many cycles after its last beat, beyond rows + cols
#: (3 in the core, 1 in the matmul unit's C register slice, ``c_out_q``)
CORE_RESULT_EXTRA = 4
#: an operand scratchpad's commit (with the last beat) -> the bank readable: the write stage
#: delays the commit by one edge (``rtl_lib.operand_spad``)
SPAD_COMMIT_LATENCY = 2
#: the vector engine: an S beat's X read to the element serializer
VEC_S_TO_START = 3

INF = float("inf")


def timing(config: AccelConfig) -> dict:
    """The :data:`SCHEDULE_TIMING` entry of ``config``'s kernel route."""
    return SCHEDULE_TIMING[getattr(config, "schedule", "dynamic")]
