"""FPGA device presets: what each target part has, as data.

A :class:`Device` names a part and counts the resources the fit check (``fpga.fit``) and the
reports compare against. ``flow`` says how a design gets there: ``"open"`` parts are
synthesized and placed here with Yosys + nextpnr; ``"vivado"`` and ``"quartus"`` parts are
handed off as vendor project scripts (``fpga.vendor``) and never need those tools here.

Counts (each checked against the vendor's family table; for the open-flow parts also against
what nextpnr reports as ``available`` for the same chip):

* LFE5U-85F, LFE5U-25F: Lattice "ECP5 and ECP5-5G Family Data Sheet" FPGA-DS-02012, Table 1.1
  (LUTs 84k / 24k, sysMEM 18 kbit EBR blocks 208 / 56, 18x18 multipliers 156 / 28, distributed
  RAM 669 / 194 kbit; 205 / 197 user IOs in CABGA381). nextpnr-ecp5 0.11 reports TRELLIS_COMB
  83640 / 24288, DP16KD 208 / 56, MULT18X18D 156 / 28 for ``--85k`` / ``--25k``.
* iCE40UP5K: Lattice "iCE40 UltraPlus Family Data Sheet" FPGA-DS-02008, Table 1.1 (5280 LUT4,
  30 EBR of 4 kbit = 120 kbit, 4 SPRAM blocks of 256 kbit = 1024 kbit, 8 DSP blocks
  (SB_MAC16, 16x16), 39 user IOs in the SG48 package).
* xc7a100tcsg324-1: Xilinx DS180 "7 Series FPGAs Data Sheet: Overview", Table 3 (Artix-7)
  (63,400 6-input LUTs, 126,800 flip-flops, 240 DSP48E1 slices (25x18 multiplier each),
  135 RAMB36 = 4,860 kbit) and the CSG324 package row (210 user IOs).
* 5CEBA4F23C7: Intel "Cyclone V Device Overview" CV-51001, Cyclone V E table (18,480 ALMs,
  73,920 registers, 308 M10K blocks = 3,080 kbit, 66 variable-precision DSP blocks = 132 18x18
  multipliers) and the F23 (484-pin FBGA) package row (224 GPIOs). An ALM holds two adaptive LUTs,
  so ``lut`` counts 2 per ALM.

Board memory (:class:`BoardMemory`, ``Device.memory``): the external DRAM of the board each
preset assumes, as the peak bytes per second its data pins move. The simulators' AXI memory
(``sim/axi_mem.sv``) and the perf model (``pycde_accel.perfmodel.memory``) charge it at the
design's clock, so a wider AXI bus cannot buy bandwidth the board does not have. The figure is
the interface's peak (data width x transfer rate); a real controller delivers less (refresh,
row misses, read/write turnaround), so cycles charged at it are a lower bound.

* ECP5 (85F, 25F): a 16-bit DDR3 part at 800 MT/s, the ECP5 family's DDR3 limit ("ECP5 and
  ECP5-5G Family Data Sheet" FPGA-DS-02012, features: DDR3 memory interfaces up to 800 Mb/s),
  as on boards of the OrangeCrab / ECP5 Versa class (one x16 DDR3(L) chip): 16 bit x 800 MT/s
  = 1.6 GB/s.
* xc7a100t: the Digilent Arty A7-100T, 256 MB DDR3L on a 16-bit bus (MT41K128M16JT-125), run by
  the MIG at 333.33 MHz, i.e. 666.67 MT/s (Digilent "Arty A7 Reference Manual", "DDR3L
  Memory"): 16 bit x 666.67 MT/s = 1.33 GB/s.
* 5ceba4 (5CEBA4F23C7): the Terasic DE0-CV, 64 MB SDR SDRAM on a 16-bit bus (32M x 16, -7 speed
  grade, rated 143 MHz; Terasic "DE0-CV User Manual", "Using SDRAM"): 16 bit x 143 MT/s =
  286 MB/s.
* ice40-up5k: an iCEBreaker-class board has no DRAM; its data memory is one QSPI PSRAM on a
  Pmod (APS6404L, 4 bits at 133 MHz SDR; AP Memory APS6404L-3SQR data sheet): 66.5 MB/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pycde_accel.errors import UserError

#: Block-RAM aspect ratios as (depth, width) pairs: the shapes one block can take.
ECP5_EBR_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
ICE40_EBR_SHAPES = ((2048, 2), (1024, 4), (512, 8), (256, 16))
XILINX_RAMB36_SHAPES = ((32768, 1), (16384, 2), (8192, 4), (4096, 9), (2048, 18), (1024, 36),
                        (512, 72))
INTEL_M10K_SHAPES = ((8192, 1), (4096, 2), (2048, 4), (1024, 10), (512, 20), (256, 40))


@dataclass(frozen=True)
class BoardMemory:
    """The external memory a target preset assumes (see the module docstring for the sources).

    board:       the board the figure is taken from.
    kind:        the memory and its interface, in words.
    width_bits:  data pins; mt_s: million transfers per second on each.
    source:      where the figure comes from.
    """

    board: str
    kind: str
    width_bits: int
    mt_s: float
    source: str

    @property
    def bytes_per_s(self) -> float:
        """Peak bytes per second: data width x transfer rate."""
        return self.width_bits / 8 * self.mt_s * 1e6

    def to_dict(self) -> dict:
        return {"board": self.board, "kind": self.kind, "width_bits": self.width_bits,
                "mt_s": self.mt_s, "peak_gb_s": round(self.bytes_per_s / 1e9, 4),
                "source": self.source}


#: ECP5's DDR3 limit on a x16 part (FPGA-DS-02012); the 85F and 25F presets share it
ECP5_DDR3 = BoardMemory(
    board="ECP5 board with one x16 DDR3 chip (OrangeCrab / ECP5 Versa class)",
    kind="16-bit DDR3 at 800 MT/s", width_bits=16, mt_s=800.0,
    source="Lattice FPGA-DS-02012 (ECP5 family data sheet), DDR3 up to 800 Mb/s per pin")
ARTY_A7_DDR3 = BoardMemory(
    board="Digilent Arty A7-100T", kind="16-bit DDR3L at 666.67 MT/s (MIG at 333.33 MHz)",
    width_bits=16, mt_s=2000.0 / 3,
    source="Digilent Arty A7 Reference Manual, DDR3L Memory")
DE0_CV_SDRAM = BoardMemory(
    board="Terasic DE0-CV", kind="16-bit SDR SDRAM at 143 MHz", width_bits=16, mt_s=143.0,
    source="Terasic DE0-CV User Manual, Using SDRAM (32M x 16, -7 speed grade)")
ICEBREAKER_PSRAM = BoardMemory(
    board="iCEBreaker with a QSPI PSRAM Pmod", kind="4-bit QSPI PSRAM at 133 MHz (APS6404L)",
    width_bits=4, mt_s=133.0, source="AP Memory APS6404L-3SQR data sheet (133 MHz, quad SPI)")


@dataclass(frozen=True)
class Device:
    """One target part.

    name:        the short name users type (``--target``).
    part:        the vendor's part number.
    family:      ``ecp5``, ``ice40``, ``artix7`` or ``cyclonev``.
    flow:        ``open`` (Yosys + nextpnr here), ``vivado`` or ``quartus`` (handoff scripts).
    lut:         logic LUTs (LUT4 on Lattice parts, LUT6 on Xilinx, ALUTs on Intel).
    ff:          flip-flops.
    dsp:         hard multipliers, counted in units of ``dsp_width`` x ``dsp_width``.
    dsp_width:   the widest signed operand one multiplier takes (both inputs).
    dsp_cell:    the cell name the multiplier maps to.
    bram:        block RAMs of ``bram_kbit`` each; ``bram_shapes`` are their (depth, width) modes.
    io:          user IO pins of the package (nextpnr-ice40 has no out-of-context mode, so the
                 top's ports must fit these there).
    spram_kbit:  single-port RAM (iCE40 UltraPlus SPRAM), not used for dual-ported scratchpads.
    yosys_synth: the Yosys synthesis command (open flow only).
    nextpnr:     the nextpnr executable and device arguments (open flow only).
    memory:      the board memory the preset assumes (:class:`BoardMemory`).
    """

    name: str
    part: str
    family: str
    flow: str
    lut: int
    ff: int
    dsp: int
    dsp_width: int
    dsp_cell: str
    bram: int
    bram_kbit: int
    bram_shapes: tuple[tuple[int, int], ...]
    io: int
    package: str
    spram_kbit: int = 0
    yosys_synth: str = ""
    nextpnr: tuple[str, ...] = field(default_factory=tuple)
    memory: BoardMemory | None = None

    @property
    def open_flow(self) -> bool:
        return self.flow == "open"

    def to_dict(self) -> dict:
        return {"name": self.name, "part": self.part, "family": self.family, "flow": self.flow,
                "lut": self.lut, "ff": self.ff, "dsp": self.dsp, "bram": self.bram,
                "bram_kbit": self.bram_kbit, "io": self.io, "package": self.package}


DEVICES: dict[str, Device] = {d.name: d for d in (
    Device(name="ecp5-85f", part="LFE5U-85F-6BG381C", family="ecp5", flow="open",
           lut=83640, ff=83640, dsp=156, dsp_width=18, dsp_cell="MULT18X18D",
           bram=208, bram_kbit=18, bram_shapes=ECP5_EBR_SHAPES, io=205, package="CABGA381",
           yosys_synth="synth_ecp5",
           nextpnr=("nextpnr-ecp5", "--85k", "--package", "CABGA381", "--out-of-context"),
           memory=ECP5_DDR3),
    Device(name="ecp5-25f", part="LFE5U-25F-6BG381C", family="ecp5", flow="open",
           lut=24288, ff=24288, dsp=28, dsp_width=18, dsp_cell="MULT18X18D",
           bram=56, bram_kbit=18, bram_shapes=ECP5_EBR_SHAPES, io=197, package="CABGA381",
           yosys_synth="synth_ecp5",
           nextpnr=("nextpnr-ecp5", "--25k", "--package", "CABGA381", "--out-of-context"),
           memory=ECP5_DDR3),
    Device(name="ice40-up5k", part="iCE40UP5K-SG48", family="ice40", flow="open",
           lut=5280, ff=5280, dsp=8, dsp_width=16, dsp_cell="SB_MAC16",
           bram=30, bram_kbit=4, bram_shapes=ICE40_EBR_SHAPES, io=39, package="sg48",
           spram_kbit=1024, yosys_synth="synth_ice40 -dsp",
           nextpnr=("nextpnr-ice40", "--up5k", "--package", "sg48"), memory=ICEBREAKER_PSRAM),
    Device(name="xc7a100t", part="xc7a100tcsg324-1", family="artix7", flow="vivado",
           lut=63400, ff=126800, dsp=240, dsp_width=18, dsp_cell="DSP48E1",
           bram=135, bram_kbit=36, bram_shapes=XILINX_RAMB36_SHAPES, io=210, package="csg324",
           memory=ARTY_A7_DDR3),
    Device(name="5ceba4", part="5CEBA4F23C7", family="cyclonev", flow="quartus",
           lut=36960, ff=73920, dsp=132, dsp_width=18, dsp_cell="cyclonev_mac (18x18)",
           bram=308, bram_kbit=10, bram_shapes=INTEL_M10K_SHAPES, io=224, package="F23",
           memory=DE0_CV_SDRAM),
)}


def known_targets() -> list[str]:
    return sorted(DEVICES)


def get_device(name: str) -> Device:
    """The preset called ``name`` (case-insensitive); UserError listing the known ones otherwise."""
    key = (name or "").strip().lower()
    if key in DEVICES:
        return DEVICES[key]
    for d in DEVICES.values():  # the vendor part number works too
        if key == d.part.lower():
            return d
    raise UserError(f"unknown target {name!r}; known targets: {', '.join(known_targets())}")
