"""cocotb testbench for the fast wrapper ``accel_sim_top`` (:mod:`pycde_accel.sim.fast`): the
DRAM (``sim_axi_mem``) and the stream watchdog (``sim_watchdog``) are RTL, and Python wakes only for the CSR accesses (cocotbext-axi
``AxiLiteMaster``) and when ``irq`` or ``wd_trip`` rises. The clock is the wrapper's own
(an SV ``always #5``), so the simulator runs edges without calling into cocotb.

Same plan and result JSON as ``sim/tb_accel.py`` (``axi_pause`` must be 0: this memory has no
pause generators). Extra plan key: ``dram_out`` (the file the memory model writes the read
back words to, as image bytes; the image is loaded from the ``+DRAM_IN`` plusarg the runner
passes, in :func:`~pycde_accel.sim.fast.image_to_mem`'s layout).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
from cocotb.triggers import First, RisingEdge, Timer
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from pycde_accel.contract import CsrMap
from pycde_accel.host import AcceleratorError, Driver

from . import tb
from .fast import STREAMS, dump_range, plan_runs, trip_message
from .watchdog import StallError


def _trip(dut) -> StallError:
    n = len(STREAMS)
    beats_v = int(dut.wd_beats.value)
    return StallError(trip_message(
        int(dut.wd_kind.value), int(dut.wd_stream.value), int(dut.wd_count.value),
        int(dut.wd_cycle.value), int(dut.wd_last_stream.value), int(dut.wd_last_cycle.value),
        bool(int(dut.wd_moved.value)), int(dut.wd_valid.value), int(dut.wd_ready.value),
        [beats_v >> (32 * k) & 0xFFFFFFFF for k in range(n)]))


class FastCsr(tb.CocotbCsr):
    """The host driver's transport: :class:`~pycde_accel.sim.tb.CocotbCsr`, whose ``wait_irq``
    also ends on the RTL watchdog's trip: it sleeps on one trigger set (irq edge, watchdog trip
    edge, a timer) instead of counting cycles."""

    async def wait_irq(self) -> None:
        dut = self.dut
        if int(dut.wd_trip.value):
            raise _trip(dut)
        if int(dut.irq.value):
            return
        limit = Timer(self.timeout * tb.PERIOD_NS, unit="ns")
        got = await First(RisingEdge(dut.irq), RisingEdge(dut.wd_trip), limit)
        if int(dut.wd_trip.value):
            raise _trip(dut)
        if got is limit and not int(dut.irq.value):
            raise AcceleratorError(f"no irq within {self.timeout} cycles")


@cocotb.test()
async def run_plan(dut):
    plan = json.loads(Path(os.environ["TB_ACCEL_PLAN"]).read_text())
    if plan.get("axi_pause", 0.0):
        raise ValueError("the fast testbench has no AXI pauses: use sim/tb_accel.py")
    master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    stall = int(plan.get("stall_cycles", 20000))
    dut.mem_dump.value = 0
    dut.mem_dump_lo.value = 0
    dut.mem_dump_hi.value = 0
    dut.wd_stall_limit.value = stall
    dut.wd_idle_limit.value = stall
    # the wrapper toggles clk itself (fast.wrapper_sv rtl_clock): only the reset is ours
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    hw = plan["hw"]
    driver = Driver(FastCsr(dut, master, plan.get("layer_timeout_cycles", 10_000_000)),
                    CsrMap.from_dict(plan["csr_map"]), rows=hw["rows"], cols=hw["cols"],
                    axi_bytes=hw["axi_bytes"])
    result_path = Path(plan["result"])
    out = {"layers": [], "reads": {}}
    try:
        await driver.check_hw()
        for group in plan_runs(plan):
            runs = await driver.run_group(group["cmd_addr"], group["cmd_count"],
                                          [plan["layers"][i] for i in group["layers"]])
            out["layers"] += [r.to_dict() for r in runs]
        out["host_cycles"] = driver.host_cycles
    except (AcceleratorError, StallError) as e:
        out["error"] = str(e).splitlines()[0]
        result_path.write_text(json.dumps(out, indent=1))
        raise
    if plan["reads"]:
        ab = hw["axi_bytes"]
        lo, hi = dump_range(plan["reads"], ab)
        dut.mem_dump_lo.value = lo
        dut.mem_dump_hi.value = hi
        dut.mem_dump.value = 1
        await RisingEdge(dut.clk)
        dut.mem_dump.value = 0
        await RisingEdge(dut.clk)
        data = Path(plan["dram_out"]).read_bytes()
        for r in plan["reads"]:
            f = result_path.with_name(f"{result_path.name}.{r['name']}.bin")
            start = r["addr"] - lo * ab
            f.write_bytes(data[start:start + r["size"]])
            out["reads"][r["name"]] = str(f)
    result_path.write_text(json.dumps(out, indent=1))
