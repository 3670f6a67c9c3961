"""Fit check: does an accelerator config fit a device, before minutes are spent in Yosys?

``estimate(config, device)`` counts what the whole accelerator (``rtl_lib.accel``) for the config
needs; ``check_fit`` raises one :class:`~pycde_accel.errors.UserError` line naming every resource
that does not fit, with the numbers, and otherwise returns the estimate.

* DSP: one hard multiplier per PE (rows x cols) when ``data_width`` fits the device's multiplier
  (18x18 on ECP5, Artix-7 and Cyclone V; 16x16 SB_MAC16 on iCE40), else ceil(w/dsp_width)^2;
  plus the post-op kernels' ``KERNEL_DSP``: their wide multiplies are split into 16x16 limb
  products (``lowering.split_mul``), counted as the MULT18X18D cells Yosys leaves of them in the
  placed accelerator (``KERNEL_DSP_BY_KERNEL``): 4 in requantize (store engine, once per store
  lane: ``config.lanes``), 4 in
  residual_add (two 32-bit products; Yosys narrows two limb products into fabric) and 5 in
  mul_requantize (vector engine: one 16x16 product before the 32x32 requantize product).
* BRAM: the accelerator's memories (``memories``), each the fewest blocks over the block's
  aspect ratios (``Device.bram_shapes``): the A and B operand scratchpads (one memory per lane,
  R lanes for A and C for B, of ``2 * spad_*_depth / AB`` words of ``axi_data_width`` bits: both
  banks), the store engine's parameter memories (bias, m0, shift: ``spad_c_depth`` x 32 bits
  each, one copy per store lane) and the vector engine's X buffer (``spad_c_depth`` beats of
  ``axi_data_width`` bits).
* Fmax (``predict_fmax``): a model fitted to placed whole accelerators (``FMAX_POINTS``, each
  with where it came from): the clock period as a straight line in the array's accumulator
  bits (rows x cols x acc_width), slope never negative, at most the PE array's own Fmax. The
  DSE divides predicted cycles by it; ``dse --synth`` places the best candidates for real.
* LUT: rough, in LUT4-equivalents: ``LUT_PER_PE_ACC_BIT`` LUTs per accumulator bit per PE
  (adder, clear/load select, drain mux) plus ``LUT_PERIPHERY`` for the rest (DMA, fetch and
  dispatch, router, engines, kernels, CSRs, FIFOs). Good to refuse a config several times too
  large, not to promise a close fit.

Calibration (8x8 int8, acc_width 32, axi_data_width 64, spad_a/b 1024, spad_c 256; Yosys
synth_ecp5 + nextpnr on ECP5-85F): the estimate gives 77 DSP, 37 BRAM and 18192 LUTs; the
placed accelerator has 77 MULT18X18D (64 in the PEs, 4 requantize_pc, 4 vec_residual_add, 5
vec_mul_requantize: counted by cell in Yosys' netlist.json), 37 DP16KD and 20832 TRELLIS_COMB
(LUT4 + carry + LUT RAM slots). The kernel count was 10 before the mul_requantize kernel
joined the vector engine (an undercount of 3 against that netlist).
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
#: hard multipliers of each post-op kernel: on ECP5 one MULT18X18D instance per multiply of its
#: static-route body (lowering.split_mul's products, pycde-accel-ecp5-dsp-mul; maxpool has none;
#: tests/lowering/test_ecp5_dsp_mul.py counts them)
KERNEL_DSP_BY_KERNEL = {"requantize": 4, "residual_add": 4, "mul_requantize": 5}
KERNEL_DSP = sum(KERNEL_DSP_BY_KERNEL.values())


def kernel_dsp(config: AccelConfig) -> int:
    """The post-op kernels' multipliers: ``KERNEL_DSP`` with the requantize kernel once per
    store lane (``config.lanes``)."""
    return KERNEL_DSP + (config.lanes - 1) * KERNEL_DSP_BY_KERNEL["requantize"]


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
            [(f"P_{nm}" + (f"_{l}" if c.lanes > 1 else ""), c.spad_c_depth, 32)
             for l in range(c.lanes)
             for nm in ("bias", "m0", "shift")] +
            [("X", c.spad_c_depth, w)])


def estimate(config: AccelConfig, device: Device) -> FitEstimate:
    pes = config.rows * config.cols
    mems = memories(config)
    return FitEstimate(
        dsp=pes * dsp_per_mac(config.data_width, device) + kernel_dsp(config),
        bram=sum(blocks_for(d, w, device.bram_shapes) for _, d, w in mems),
        lut=pes * config.acc_width * LUT_PER_PE_ACC_BIT + LUT_PERIPHERY,
        scratchpad_kbit=sum(d * w for _, d, w in mems) / 1024,
    )


def fit_store_lanes(config: AccelConfig, device: Device) -> AccelConfig:
    """``config`` with ``store_lanes`` halved until the DSP multipliers fit ``device`` (each
    lane is a requantize kernel's multipliers), down to 1; unchanged when it fits already.
    The CLI and the DSE build what a target can hold: 4 lanes for 8x8 on the ECP5-85F, 2 for
    2x4 on the ECP5-25F."""
    while (config.store_lanes > 1 and estimate(config, device).dsp > device.dsp):
        config = config.replace(store_lanes=config.store_lanes // 2)
    return config


def check_fit(config: AccelConfig, device: Device) -> FitEstimate:
    """The estimate, or UserError listing each resource the config needs more of than exists."""
    est = estimate(config, device)
    over = overruns(config, device)
    if over:
        raise UserError(f"config {config.array} does not fit {device.name} ({device.part}): "
                        f"needs " + "; ".join(over))
    return est


def overruns(config: AccelConfig, device: Device) -> list[str]:
    """Every resource ``config`` needs more of than ``device`` has, one phrase each (empty
    when it fits)."""
    est = estimate(config, device)
    over = []
    if est.dsp > device.dsp:
        over.append(f"{est.dsp} DSP multipliers ({config.rows}x{config.cols} PEs x "
                    f"{dsp_per_mac(config.data_width, device)} + {kernel_dsp(config)} in the post-op "
                    f"kernels) but it has {device.dsp}")
    if est.bram > device.bram:
        over.append(f"{est.bram} block RAMs for {est.scratchpad_kbit:g} kbit of memories "
                    f"but it has {device.bram} ({device.bram * device.bram_kbit} kbit)")
    if est.lut > device.lut:
        over.append(f"about {est.lut} LUTs but it has {device.lut}")
    return over


# ---- Fmax model -------------------------------------------------------------------------------
# Cycles alone rank a large array that closes timing at a low clock too well: the DSE divides
# them by a clock predicted from placed designs. The model is fitted to the whole accelerators
# below (each placed by ``python -m pycde_accel synth``: Yosys synth_ecp5 + nextpnr-ecp5 out of
# context on LFE5U-85F, nextpnr seed 1, --freq 100, static kernel route). Its one feature is the
# accumulator bits of the array (rows x cols x acc_width, the fabric that grows with the
# array: adders, drain chain, operand forwarding); the clock period is a straight line in it,
# least squares over the points, with a slope that is never negative (a larger array is never
# predicted faster). Add a point when a design is placed (the RTL of every point is the
# commit named in its source); the fit follows.


@dataclass(frozen=True)
class FmaxPoint:
    """One placed design: its config fields and the Fmax nextpnr reported."""

    rows: int
    cols: int
    acc_width: int
    axi_data_width: int
    spad_a_depth: int
    spad_c_depth: int
    fmax_mhz: float
    source: str

    @property
    def acc_bits(self) -> int:
        return self.rows * self.cols * self.acc_width


#: The family the placed points come from; other families get no model (their constraint clock).
FMAX_FAMILY = "ecp5"
FMAX_POINTS: tuple[FmaxPoint, ...] = (
    FmaxPoint(8, 8, 32, 64, 1024, 256, 119.12,
              "the whole default accelerator, Yosys once and nextpnr towards 150 MHz on seeds "
              "1-2 (as bench/fmax.py's measure_accel), RTL of commit fc1165b: 122.43 / 119.12; "
              "seed 3 was not run (the session's two cores), so the minimum is over two seeds. "
              "Before: 7193335 110.82 / 116.23; a428892 107.92 on seed 1; de882f7 126.94 on "
              "seed 2; 2094307 116.80 / 119.93 on seeds 1-2 (seed 3 stopped in router1's tail "
              "after 71 minutes); ec24c65 (81c84f4 plus a C "
              "slice reverted since) 115.42 / 109.57 / 119.53, every seed's path the core's "
              "output FIFO read into c_out_q; 88383df 123.67 and 4ebabeb 120.21 on seed 2 "
              "(their seeds 1 and 3 stopped in router1's tail). 7a06fda (614cbf2's RTL) "
              "gave 123.02 / 119.52 / 112.36 on seeds 1-3, 113.53 / 128.65 on seeds 4-5; "
              "1af1302 103.98 on seed 1 (seeds 2-3 stopped in the router); bd973bd "
              "123.23 / 124.04 / 128.30; ac8e72c 128.06 / 122.71 / 123.00; 32abc82 125.11 / "
              "120.31 / 124.22; af39b54 111.22 / 119.02 / 125.08; ade49bc 114.26 / 122.76 / "
              "118.53; a8b3ab2 117.91 / 118.67 / 120.89; d3b65bf 119.76 / 120.44 on seeds 2-3 "
              "(seed 1: router2 77.42, not fitted); 3e65e81 120.19 / 122.74 / 121.14, c423a1a "
              "110.66 / 115.63 / 122.59, 82013b3 117.11 / 112.82 / 120.32. The seeds of one "
              "netlist spread by up to 16 MHz (docs/timing.md)"),
    FmaxPoint(16, 8, 32, 64, 2048, 256, 106.68,
              "bench/fmax.py's measure_accel of AccelConfig(rows=16, cols=8, spad_a_depth=2048, "
              "spad_b_depth=2048), towards 140 MHz, RTL of commit e8fcff2, seed 1, 153 DSPs "
              "(critical path: the operand FIFO's read pointer matmul.fifo_rd -> a 7.62 ns "
              "route across the die -> the A skew registers of lane 12); 42d677a (per-chunk "
              "pointer copies, since reverted) gave 102.65, d1cbf2b 100.03, 48bed3a 99.02, "
              "29fc67b 100.95, 13de4fd 87.39, de26887 94.19, 45d1f20 88.66, a5fb480 102.56"),
    FmaxPoint(8, 16, 32, 128, 1024, 256, 89.93,
              "bench/fmax.py's measure_accel of AccelConfig(rows=8, cols=16, "
              "axi_data_width=128), towards 150 MHz, RTL of commit 8278460, seed 1 (153 of 156 "
              "DSPs; the router needed 75 minutes)"),
)
# The critical paths of these placements and of every earlier one: docs/timing.md.
#: The 8x8 int8 PE array alone (``bench/fmax.py``'s array, DSP-registered PEs: 173.1 MHz,
#: docs of the toolchain facts): no whole accelerator is predicted faster than its array.
ARRAY_CEILING_MHZ = 173.1


@dataclass(frozen=True)
class FmaxFit:
    """period_ns = a_ns + b_ns_per_kbit * (rows x cols x acc_width / 1024), Fmax = 1000 / period,
    capped at ``ARRAY_CEILING_MHZ``."""

    a_ns: float
    b_ns_per_kbit: float
    points: tuple[FmaxPoint, ...]

    def mhz_for_bits(self, acc_bits: int) -> float:
        period = self.a_ns + self.b_ns_per_kbit * acc_bits / 1024
        return min(ARRAY_CEILING_MHZ, 1000.0 / period)

    def mhz(self, config: AccelConfig) -> float:
        return self.mhz_for_bits(config.rows * config.cols * config.acc_width)

    def residuals_pct(self) -> list[float]:
        """(model - placed) / placed in percent, per point."""
        return [100.0 * (self.mhz_for_bits(p.acc_bits) - p.fmax_mhz) / p.fmax_mhz
                for p in self.points]


def fit_fmax(points: tuple[FmaxPoint, ...] = FMAX_POINTS) -> FmaxFit:
    """Least-squares line of the clock period over the points' accumulator bits (slope >= 0;
    one point, or points of one size, give a flat line through their mean period)."""
    if not points:
        raise ValueError("fit_fmax: no placed points")
    xs = [p.acc_bits / 1024 for p in points]
    ys = [1000.0 / p.fmax_mhz for p in points]
    n = len(points)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0
    b = max(0.0, b)
    return FmaxFit(a_ns=my - b * mx, b_ns_per_kbit=b, points=tuple(points))


_FIT: FmaxFit | None = None


def predict_fmax(config: AccelConfig, device: Device) -> float | None:
    """The model's Fmax in MHz for ``config`` on ``device``; None for a family without placed
    points (the caller then uses ``config.clock_mhz`` and says so)."""
    global _FIT
    if device.family != FMAX_FAMILY:
        return None
    if _FIT is None:
        _FIT = fit_fmax()
    return _FIT.mhz(config)
