"""cocotb testbench: the whole accelerator (``rtl_lib.accel``, top ``pycde_accel_top``) driven by
the host runtime (:class:`pycde_accel.host.Driver`) over cocotbext-axi models.

This is the ``axiram`` engine of :mod:`pycde_accel.simulate`: the only one with AXI pause
generators, but Python runs on every cycle (AxiRam's channels, the Python watchdog), ~1-6k
cycles/s. Without pauses the fast engines (:mod:`pycde_accel.sim.fast`: RTL memory and
watchdog, under cocotb or natively) run the same plan far faster.

The plan (JSON, path in ``TB_ACCEL_PLAN``), written by :mod:`pycde_accel.simulate`:

* ``image``: path of the DRAM image (bytes loaded at address 0 of an ``AxiRam`` of
  ``mem_size`` bytes: weights, parameters, commands, and the input tensors already in place);
* ``csr_map``: ``CsrMap.to_dict()``; ``hw``: ``{"rows", "cols", "axi_bytes"}``;
* ``layers``: ``[{"name", "cmd_addr", "cmd_count"}]`` run in order;
* ``runs`` (optional): ``[{"cmd_addr", "cmd_count", "layers": [index...]}]``, one start each
  (``CompiledProgram.run_groups``: the whole model per start, FENCEs between its layers);
  without it, one start per layer;
* ``reads``: ``[{"name", "addr", "size"}]`` regions read back after the last layer;
* ``axi_pause``: probability that each of the five AXI channels of the memory (and of the
  CSR master) pauses in a cycle (cocotbext-axi pause generators), ``seed``;
* ``layer_timeout_cycles``: a layer that has not raised ``irq`` by then fails the test;
* ``stall_cycles``: the watchdog's limit: a valid/ready channel that stays stalled (or no beat
  moving anywhere) that long ends the run with the channel's name (0: no watchdog, faster);
* ``result``: where to write ``{"layers": [LayerRun...], "reads": {name: file}, "cycles",
  "host_cycles"}`` (``host_cycles``: from the first ``ctrl.start`` write to the last ``irq``)
  (the read regions go to ``<result>.<name>.bin``).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import cocotb
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from pycde_accel.host import AcceleratorError, Driver
from pycde_accel.rtl_lib.axil_csr import CsrMap

from . import tb
from .fast import plan_runs
from .watchdog import StallError, Watchdog

AXI_CHANNELS = ("ar", "r", "aw", "w", "b")


def _pause(seed: int, p: float):
    rng = random.Random(seed)
    while True:
        yield rng.random() < p


def _streams(dut) -> dict:
    """The valid/ready channels the watchdog watches: the AXI port and, where the simulator
    exposes them, the engines' command and data streams."""
    s = {f"m_axi_{c}": (getattr(dut, f"m_axi_{c}valid"), getattr(dut, f"m_axi_{c}ready"))
         for c in AXI_CHANNELS}
    inner = {"dma read data": ("dma.rd_out_valid", "dma.rd_out_ready"),
             "exec command": ("matmul.ex_valid", "matmul.ex_ready"),
             "core C stream": ("matmul.c_valid", "matmul.c_ready"),
             "store command": ("store.st_valid", "store.st_ready"),
             "store write data": ("store.wd_valid", "store.wd_ready"),
             "vector command": ("vector.v_valid", "vector.v_ready"),
             "vector S stream": ("vector.s_valid", "vector.s_ready")}
    for name, (v, r) in inner.items():
        try:
            hv, hr = dut, dut
            for part in v.split("."):
                hv = getattr(hv, part)
            for part in r.split("."):
                hr = getattr(hr, part)
            s[name] = (hv, hr)
        except AttributeError:
            pass
    return s


@cocotb.test()
async def run_plan(dut):
    plan = json.loads(Path(os.environ["TB_ACCEL_PLAN"]).read_text())
    seed, pause = plan.get("seed", 0), plan.get("axi_pause", 0.0)
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=plan["mem_size"])
    master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    await tb.start(dut)
    ram.write(0, Path(plan["image"]).read_bytes())
    if pause > 0:
        chans = [ram.read_if.ar_channel, ram.read_if.r_channel, ram.write_if.aw_channel,
                 ram.write_if.w_channel, ram.write_if.b_channel,
                 master.write_if.aw_channel, master.write_if.w_channel,
                 master.write_if.b_channel, master.read_if.ar_channel, master.read_if.r_channel]
        for i, ch in enumerate(chans):
            ch.set_pause_generator(_pause(seed * 16 + i, pause))
    stall = plan.get("stall_cycles", 20000)
    dog = (Watchdog(dut.clk, _streams(dut), stall_cycles=stall, idle_cycles=stall,
                    name="accelerator watchdog") if stall else None)
    hw = plan["hw"]
    driver = Driver(tb.CocotbCsr(dut, master, plan.get("layer_timeout_cycles", 10_000_000)),
                    CsrMap.from_dict(plan["csr_map"]), rows=hw["rows"], cols=hw["cols"],
                    axi_bytes=hw["axi_bytes"])
    result_path = Path(plan["result"])
    out = {"layers": [], "reads": {}}
    try:
        await driver.check_hw()
        for group in plan_runs(plan):
            job = driver.run_group(group["cmd_addr"], group["cmd_count"],
                                   [plan["layers"][i] for i in group["layers"]])
            runs = await (dog.watch(job) if dog is not None else job)
            out["layers"] += [r.to_dict() for r in runs]
        out["host_cycles"] = driver.host_cycles
    except (AcceleratorError, StallError) as e:
        out["error"] = str(e).splitlines()[0]
        result_path.write_text(json.dumps(out, indent=1))
        raise
    for r in plan["reads"]:
        f = result_path.with_name(f"{result_path.name}.{r['name']}.bin")
        f.write_bytes(ram.read(r["addr"], r["size"]))
        out["reads"][r["name"]] = str(f)
    result_path.write_text(json.dumps(out, indent=1))
