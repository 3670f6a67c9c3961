"""Start-up shared by the cocotb testbenches: clock, idle inputs, synchronous reset."""

from __future__ import annotations

from typing import Iterable

from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

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
