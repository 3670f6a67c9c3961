"""Start-up shared by the cocotb testbenches: clock, idle inputs, synchronous reset; and the
host driver's CSR transport over cocotbext-axi's AXI4-Lite master (:class:`CocotbCsr`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from cocotb.clock import Clock
from cocotb.triggers import First, RisingEdge, Timer

from pycde_accel.host import AcceleratorError

if TYPE_CHECKING:
    from cocotbext.axi import AxiLiteMaster

#: clock period of every testbench (the designs are cycle-based; the value is only for waves)
PERIOD_NS = 10


async def start(dut, *, idle: Iterable[str] = (), reset_cycles: int = 3,
                period_ns: float = PERIOD_NS) -> None:
    """Start ``dut.clk``, drive each input named in ``idle`` to 0, hold ``dut.rst`` high for
    ``reset_cycles`` rising edges, release it, and return one edge later (out of reset)."""
    Clock(dut.clk, period_ns, unit="ns").start(start_high=True)
    for name in idle:
        getattr(dut, name).value = 0
    dut.rst.value = 1
    for _ in range(reset_cycles):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    await RisingEdge(dut.clk)


class CocotbCsr:
    """The host driver's transport: AXI4-Lite CSR accesses and the irq pin."""

    def __init__(self, dut, master: AxiLiteMaster, timeout_cycles: int):
        self.dut, self.m, self.timeout = dut, master, timeout_cycles

    async def write_csr(self, offset: int, value: int) -> None:
        await self.m.write_dword(offset, value & 0xFFFFFFFF)

    async def read_csr(self, offset: int) -> int:
        return await self.m.read_dword(offset)

    def now(self) -> int:
        """The current clock cycle (simulated time / the period)."""
        from cocotb.utils import get_sim_time
        return int(get_sim_time("ns")) // PERIOD_NS

    async def wait_irq(self) -> None:
        if int(self.dut.irq.value):
            return
        # a timer, not ClockCycles (which wakes Python on every edge)
        limit = Timer(self.timeout * PERIOD_NS, unit="ns")
        got = await First(RisingEdge(self.dut.irq), limit)
        if got is limit and not int(self.dut.irq.value):
            raise AcceleratorError(f"no irq within {self.timeout} cycles")
