"""Lattice ECP5 block RAM (DP16KD) instantiated directly, with its output register on.

Yosys's ``memory_libmap`` maps a memory to DP16KD (``share/lattice/brams_16kd.txt``) but always
with ``REGMODE NOREG``: the read data leaves the block 5.6-5.8 ns after the clock (nextpnr's
ECP5 timing), so a fabric register behind it misses 150 MHz as soon as the route to it is
longer than about 1 ns, and on the placed accelerator it was 3-4 ns (the operand scratchpads'
``lane*_rd_q``: critical on the 8x8's seed 1 and on the 16x8 at 29fc67b). With ``REGMODE
OUTREG`` the block's own output register holds the data and the clock-to-out is 0.96 ns: the
same two-edge read latency as a block RAM followed by one fabric register, without the route
between them.

``ebr_ram(clk, name, width, depth, waddr, wdata, wen, raddr)``: a simple dual-port memory of
``depth`` words of ``width`` bits built from DP16KD blocks; returns the read data.

- Write: ``wdata`` is written to word ``waddr`` on an edge where ``wen`` is high (write
  latency 1, as ``common.dual_port_mem``).
- Read: the data of word ``raddr`` presented before edge e is the return value after edge
  e + 1 (**read latency 2**: the block's address register, then its output register). A read
  of the word written on the same edge is undefined (the callers' ownership protocols never do
  it).
- Blocks: one aspect ratio for all, the widest whose depth holds ``depth`` words
  (``ebr_mode``: 512 x 36 in the pseudo-dual-port mode, then 1024 x 18, 2048 x 9, 4096 x 4,
  8192 x 2, 16384 x 1), ``ceil(width / w)`` of them side by side (the unused high bits written
  0). Depths above 16384 are refused (``ebr_supported``): the caller keeps an inferred memory.
- Pins as in Yosys's own ``brams_map_16kd.v``: port A writes (``CEA = wen``, ``WEA = 1``, the
  byte enables in ``ADA[3:0]`` / ``ADA[1:0]`` all 1), port B reads (``CEB``/``OCEB`` 1), the
  word address in ``AD[13:L]``, chip selects 0 with ``CSDECODE "0b000"``, ``RESETMODE
  "SYNC"`` with the resets tied 0, ``GSR "DISABLED"``.

Simulation: Yosys has only a blackbox for DP16KD; ``SIM_MODEL`` (``DP16KD_sim.sv``) is a
behavioral model of exactly this configuration, a *simulation-only* source like
``ecp5.SIM_MODEL`` (``filelist_sim.f``, never ``filelist.f``).
"""

from __future__ import annotations

from pathlib import Path

from pycde import Clock, Input, Module, Output
from pycde.module import modparams
from pycde.signals import BitsSignal
from pycde.types import Bits

#: the simulation-only behavioral model of the DP16KD configuration ``ebr_ram`` builds
SIM_MODEL = Path(__file__).resolve().parent / "DP16KD_sim.sv"

#: (data width, low address bits unused) of DP16KD's aspect ratios, widest first
MODES = ((36, 5), (18, 4), (9, 3), (4, 2), (2, 1), (1, 0))
#: address pins of a DP16KD port
ADDR_BITS = 14
#: data pins per port
PORT_BITS = 18


def ebr_mode(depth: int, widest: int = 36) -> tuple[int, int]:
    """(width, low address bits) of the widest DP16KD aspect ratio holding ``depth`` words,
    at most ``widest`` bits (18: the read data only on port B's pins)."""
    for w, lsb in MODES:
        if w <= widest and depth <= 1 << (ADDR_BITS - lsb):
            return w, lsb
    raise ValueError(f"a DP16KD holds at most {1 << ADDR_BITS} words, not {depth}")


def ebr_supported(depth: int) -> bool:
    """Whether ``ebr_ram`` builds a memory of ``depth`` words (one block deep)."""
    return 1 <= depth <= 1 << ADDR_BITS


def ebr_blocks(width: int, depth: int, widest: int = 36) -> int:
    """DP16KD blocks of an ``ebr_ram`` of ``depth`` words of ``width`` bits."""
    w, _ = ebr_mode(depth, widest)
    return -(-width // w)


@modparams
def Dp16kd(DATA_WIDTH_A: int = 18, DATA_WIDTH_B: int = 18, REGMODE_A: str = "NOREG",
           REGMODE_B: str = "NOREG", RESETMODE: str = "SYNC", CSDECODE_A: str = "0b000",
           CSDECODE_B: str = "0b000", GSR: str = "DISABLED"):
    """Extern DP16KD with the parameters ``ebr_ram`` sets (names as in Yosys's
    ``share/lattice/cells_bb_ecp5.v``)."""
    attrs = {}
    for port in "AB":
        for i in range(PORT_BITS):
            attrs[f"DI{port}{i}"] = Input(Bits(1))
            attrs[f"DO{port}{i}"] = Output(Bits(1))
        for i in range(ADDR_BITS):
            attrs[f"AD{port}{i}"] = Input(Bits(1))
        for name in ("CE", "OCE", "WE", "RST"):
            attrs[f"{name}{port}"] = Input(Bits(1))
        for c in range(3):
            attrs[f"CS{port}{c}"] = Input(Bits(1))
        attrs[f"CLK{port}"] = Clock()
    cls = type("DP16KD", (Module,), attrs)
    cls.module_name = "DP16KD"
    return cls


def ebr_ram(clk, name: str, width: int, depth: int, waddr: BitsSignal, wdata: BitsSignal,
            wen: BitsSignal, raddr: BitsSignal, widest: int = 36) -> BitsSignal:
    """``depth`` x ``width`` bits of DP16KD with the output register on: read latency 2
    (see the module docstring). Instances ``{name}_ebr{j}``, block j holding bits
    ``[j*w, (j+1)*w)``. ``widest``: the widest aspect ratio to use (18 keeps the read on port
    B's pins and registers alone: only ``OCEB`` enables the output register)."""
    if not ebr_supported(depth):
        raise ValueError(f"ebr_ram {name}: {depth} words do not fit one DP16KD deep")
    w, lsb = ebr_mode(depth, widest)
    aw = raddr.type.width
    zero, one = Bits(1)(0), Bits(1)(1)

    def addr_pins(addr: BitsSignal, port: str, low: list) -> dict:
        pins = {}
        for i in range(ADDR_BITS):
            if i < lsb:
                pins[f"AD{port}{i}"] = low[i] if i < len(low) else zero
            else:
                j = i - lsb
                pins[f"AD{port}{i}"] = addr[j] if j < aw else zero
        return pins

    # the byte enables of a write: ADA[3:0] in the 36-bit mode, ADA[1:0] in the 18-bit one
    bes = [one] * 4 if w == 36 else [one, one] if w == 18 else []
    out = []
    for j in range(ebr_blocks(width, depth, widest)):
        lo, hi = j * w, min((j + 1) * w, width)
        d = [wdata[b] for b in range(lo, hi)] + [zero] * (w - (hi - lo))
        ports = {"CLKA": clk, "CLKB": clk, "CEA": wen, "WEA": one, "OCEA": zero, "RSTA": zero,
                 "CEB": one, "OCEB": one,
                 "WEB": zero, "RSTB": zero}
        for port in "AB":
            for c in range(3):
                ports[f"CS{port}{c}"] = zero
        for i in range(PORT_BITS):
            ports[f"DIA{i}"] = d[i] if i < w else zero
            ports[f"DIB{i}"] = d[PORT_BITS + i] if w == 36 else zero
        ports.update(addr_pins(waddr, "A", bes))
        ports.update(addr_pins(raddr, "B", []))
        inst = Dp16kd(DATA_WIDTH_A=w, DATA_WIDTH_B=w, REGMODE_A="OUTREG",
                      REGMODE_B="OUTREG")(instance_name=f"{name}_ebr{j}", **ports)
        if w == 36:
            bits = [getattr(inst, f"DOA{i}") for i in range(PORT_BITS)] + \
                   [getattr(inst, f"DOB{i}") for i in range(PORT_BITS)]
        else:
            bits = [getattr(inst, f"DOB{i}") for i in range(w)]
        out.extend(bits[:hi - lo])
    return BitsSignal.concat(list(reversed(out))) if len(out) > 1 else out[0]
