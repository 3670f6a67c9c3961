"""Fit check: does an accelerator config fit a device, before minutes are spent in Yosys?

``estimate(config, device)`` counts what the whole accelerator (``rtl_lib.accel``) for the config
needs; ``check_fit`` raises one :class:`~pycde_accel.errors.UserError` line naming every resource
that does not fit, with the numbers, and otherwise returns the estimate.

* DSP: one hard multiplier per PE (rows x cols) when ``data_width`` fits the device's multiplier
  (18x18 on ECP5, Artix-7 and Cyclone V; 16x16 SB_MAC16 on iCE40), else ceil(w/dsp_width)^2;
  plus the post-op kernels' ``KERNEL_DSP``: their wide multiplies are split into 16x16 limb
  products (``lowering.split_mul``): 4 for requantize's 32x32 product, 3 for each of
  residual_add's two 32-bit products.
* BRAM: the accelerator's memories (``memories``), each the fewest blocks over the block's
  aspect ratios (``Device.bram_shapes``): the A and B operand scratchpads (one memory per lane,
  R lanes for A and C for B, of ``2 * spad_*_depth / AB`` words of ``axi_data_width`` bits: both
  banks), the store engine's parameter memories (bias, m0, shift: ``spad_c_depth`` x 32 bits
  each) and the vector engine's X buffer (``spad_c_depth`` beats of ``axi_data_width`` bits).
* LUT: rough, in LUT4-equivalents: ``LUT_PER_PE_ACC_BIT`` LUTs per accumulator bit per PE
  (adder, clear/load select, drain mux) plus ``LUT_PERIPHERY`` for the rest (DMA, fetch and
  dispatch, router, engines, kernels, CSRs, FIFOs). Good to refuse a config several times too
  large, not to promise a close fit.

Calibration (8x8 int8, acc_width 32, axi_data_width 64, spad_a/b 1024, spad_c 256; Yosys
synth_ecp5 + nextpnr on ECP5-85F): the estimate gives 74 DSP, 37 BRAM and 18192 LUTs; the
placed accelerator has 73 MULT18X18D (Yosys folds one limb product), 37 DP16KD and 17973
TRELLIS_COMB (LUT4 + carry + LUT RAM slots).
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
# Everything but the PEs in the 8x8 accelerator (see the module docstring), in LUT4-equivalents.
LUT_PERIPHERY = 10000
#: hard multipliers of the post-op kernels (requantize 4, residual_add 2 x 3; maxpool none)
KERNEL_DSP = 4 + 2 * 3


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


def memories(config: AccelConfig) -> list[tuple[str, int, int]]:
    """(name, depth, width) of every block-RAM memory of the accelerator."""
    c = config
    ab = c.axi_data_width // 8
    w = c.axi_data_width
    a_words, b_words = 2 * max(1, c.spad_a_depth // ab), 2 * max(1, c.spad_b_depth // ab)
    return ([(f"A{i}", a_words, w) for i in range(c.rows)] +
            [(f"B{j}", b_words, w) for j in range(c.cols)] +
            [(f"P_{nm}", c.spad_c_depth, 32) for nm in ("bias", "m0", "shift")] +
            [("X", c.spad_c_depth, w)])


def estimate(config: AccelConfig, device: Device) -> FitEstimate:
    pes = config.rows * config.cols
    mems = memories(config)
    return FitEstimate(
        dsp=pes * dsp_per_mac(config.data_width, device) + KERNEL_DSP,
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
                     f"{dsp_per_mac(config.data_width, device)} + {KERNEL_DSP} in the post-op "
                     f"kernels) but it has {device.dsp}")
    if est.bram > device.bram:
        over.append(f"{est.bram} block RAMs for {est.scratchpad_kbit:g} kbit of memories "
                    f"but it has {device.bram} ({device.bram * device.bram_kbit} kbit)")
    if est.lut > device.lut:
        over.append(f"about {est.lut} LUTs but it has {device.lut}")
    if over:
        raise UserError(f"config {config.array} does not fit {device.name} ({device.part}): "
                        f"needs " + "; ".join(over))
    return est
