"""Fit check: does an accelerator config fit a device, before minutes are spent in Yosys?

``estimate(config, device)`` counts what the config needs; ``check_fit`` raises one
:class:`~pycde_accel.errors.UserError` line naming every resource that does not fit, with the
numbers, and otherwise returns the estimate.

* DSP: one hard multiplier per PE (rows x cols) when ``data_width`` fits the device's multiplier
  (18x18 on ECP5, Artix-7 and Cyclone V; 16x16 SB_MAC16 on iCE40), else ceil(w/dsp_width)^2.
* BRAM: the scratchpads, each double-buffered (two halves of ``spad_*_depth`` words):
  A words hold one operand per PE row (rows x data_width bits), B words one per PE column
  (cols x data_width), C words one accumulator per column (cols x acc_width). Each memory takes
  the fewest blocks over the block's aspect ratios (``Device.bram_shapes``).
* LUT: rough, in LUT4-equivalents: ``LUT_PER_PE_ACC_BIT`` LUTs per accumulator bit per PE
  (adder, clear/load select, drain mux) plus ``LUT_PERIPHERY`` for the DMA, CSRs, controller and
  FIFOs. Good to refuse a config several times too large, not to promise a close fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError

from .devices import Device

# Calibrated on the 8x8 int8 core (acc_width 32) on ECP5-85F: nextpnr packed it into 7444
# TRELLIS_COMB slots (LUT4 4308 + 2 x 1039 CCU2C + LUT RAM), 116 per PE, 3.6 per acc bit.
LUT_PER_PE_ACC_BIT = 4
# Not measured yet (no accelerator top): a guess for AXI DMA, AXI-Lite CSRs, controller, FIFOs.
LUT_PERIPHERY = 2500


@dataclass(frozen=True)
class FitEstimate:
    dsp: int
    bram: int
    lut: int
    scratchpad_kbit: float

    def to_dict(self) -> dict:
        return {"dsp": self.dsp, "bram": self.bram, "lut": self.lut,
                "scratchpad_kbit": round(self.scratchpad_kbit, 1)}


def blocks_for(depth: int, width: int, shapes: tuple[tuple[int, int], ...]) -> int:
    """Fewest RAM blocks holding ``depth`` words of ``width`` bits, over the block's shapes."""
    return min(math.ceil(depth / d) * math.ceil(width / w) for d, w in shapes)


def dsp_per_mac(data_width: int, device: Device) -> int:
    return 1 if data_width <= device.dsp_width else math.ceil(data_width / device.dsp_width) ** 2


def scratchpads(config: AccelConfig) -> list[tuple[str, int, int]]:
    """(name, depth, width) of every scratchpad half."""
    c = config
    one = [("A", c.spad_a_depth, c.rows * c.data_width),
           ("B", c.spad_b_depth, c.cols * c.data_width),
           ("C", c.spad_c_depth, c.cols * c.acc_width)]
    return [(f"{n}{half}", d, w) for n, d, w in one for half in (0, 1)]


def estimate(config: AccelConfig, device: Device) -> FitEstimate:
    pes = config.rows * config.cols
    mems = scratchpads(config)
    return FitEstimate(
        dsp=pes * dsp_per_mac(config.data_width, device),
        bram=sum(blocks_for(d, w, device.bram_shapes) for _, d, w in mems),
        lut=pes * config.acc_width * LUT_PER_PE_ACC_BIT + LUT_PERIPHERY,
        scratchpad_kbit=sum(d * w for _, d, w in mems) / 1024,
    )


def check_fit(config: AccelConfig, device: Device) -> FitEstimate:
    """The estimate, or UserError listing each resource the config needs more of than exists."""
    est = estimate(config, device)
    over = []
    if est.dsp > device.dsp:
        over.append(f"{est.dsp} DSP multipliers ({config.rows}x{config.cols} PEs x "
                     f"{dsp_per_mac(config.data_width, device)}) but it has {device.dsp}")
    if est.bram > device.bram:
        over.append(f"{est.bram} block RAMs for {est.scratchpad_kbit:g} kbit of scratchpads "
                    f"but it has {device.bram} ({device.bram * device.bram_kbit} kbit)")
    if est.lut > device.lut:
        over.append(f"about {est.lut} LUTs but it has {device.lut}")
    if over:
        raise UserError(f"config {config.array} does not fit {device.name} ({device.part}): "
                        f"needs " + "; ".join(over))
    return est
