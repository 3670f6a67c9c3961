"""The hardware/software contract of the accelerator, as plain data (no pycde import).

Everything the hardware and the software must agree on is defined here once: the command
encoding (word layout, opcodes, destinations, flags and the field widths the engines decode),
the status error bits, the CSR map and its performance counters, the structural depths the
software relies on (FIFOs, credits, burst rules) and the config rules that follow from them.
``rtl_lib`` (the RTL generators), the back end (``backend.encoding``), the host driver
(:mod:`pycde_accel.host`), the generated C headers (:mod:`pycde_accel.hostgen`), the perf
model (:mod:`pycde_accel.perfmodel`) and both simulation harnesses (``sim.fast``,
``sim/native/main.cpp`` through :func:`harness_header`) read it. ``docs/accelerator-contract.md``
describes it; its tables are generated from this module (:func:`markdown_tables`) and
``tests/test_contract.py`` checks that they are current.

This module imports only :mod:`pycde_accel.config` and :mod:`pycde_accel.errors`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .config import AccelConfig
from .errors import ConfigError

# =============================================================================================
# Commands
# =============================================================================================

#: a command is CMD_WORDS little-endian 32-bit words
CMD_WORDS = 8
CMD_BYTES = 4 * CMD_WORDS
CMD_BITS = 8 * CMD_BYTES
#: word 0: (lsb, width) of the opcode, the flags and the LOAD destination
W0_OP, W0_FLAGS, W0_DST = (0, 8), (8, 8), (16, 8)
#: a field this wide is decoded as the AXI address width (``config.axi_addr_width``)
ADDR = 0


@dataclass(frozen=True)
class Field:
    """Word ``word`` (1..7) of a command: ``bits`` the engines decode (LSB-aligned;
    :data:`ADDR` = the AXI address width), ``signed`` two's complement."""

    name: str
    word: int
    bits: int
    signed: bool = False
    doc: str = ""


@dataclass(frozen=True)
class Flag:
    """A flag of a command: ``value`` is its mask in the flags byte (bit 8 + log2 of word 0)."""

    name: str
    value: int
    doc: str = ""

    @property
    def bit(self) -> int:
        """Its bit position in word 0."""
        return W0_FLAGS[0] + self.value.bit_length() - 1


@dataclass(frozen=True)
class CommandSpec:
    """One command: opcode, name, fields (words 1..7; unused words are 0), flags, and whether
    word 0 carries a destination (:data:`DESTINATIONS`)."""

    op: int
    kind: str
    fields: tuple[Field, ...]
    flags: tuple[Flag, ...]
    has_dst: bool = False
    doc: str = ""

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def flag(self, name: str) -> int:
        for f in self.flags:
            if f.name == name:
                return f.value
        raise KeyError(name)

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


@dataclass(frozen=True)
class Destination:
    """A LOAD destination (word 0 bits 16..23)."""

    name: str
    value: int
    doc: str = ""


DESTINATIONS = (
    Destination("A", 0, "A operand scratchpad of the matmul unit (lanes x words)"),
    Destination("B", 1, "B operand scratchpad of the matmul unit (lanes x words)"),
    Destination("P", 2, "the store engine's parameter memory (32-bit words, 4 per record)"),
    Destination("X", 3, "the vector engine's X buffer (beats)"),
    Destination("S", 4, "the vector engine's S stream (beats, consumed by VECs in order)"),
)
DST_A, DST_B, DST_P, DST_X, DST_S = (d.value for d in DESTINATIONS)
#: the router's destination for fetched command beats (route entries only, never in a command)
DST_CMD = 7
DST_NAMES = {d.value: d.name for d in DESTINATIONS}

LOAD = CommandSpec(1, "load", (
    Field("addr", 1, ADDR, doc="DRAM byte address of the first row (AXI-beat aligned)"),
    Field("beats", 2, 16, doc="beats per row"),
    Field("rows", 3, 16, doc="rows (2-D transfer)"),
    Field("stride", 4, ADDR, doc="bytes between rows (AXI-beat aligned when rows > 1)"),
    Field("index", 5, 16, doc="first lane (A/B), first record (P), first beat (X)"),
    Field("word", 6, 16, doc="first word of a lane (A/B)"),
), (
    Flag("lanes", 1, "A/B: row r goes to lane index + r at words word.. (clear: the rows go to "
                     "lane index, one after the other from word)"),
    Flag("commit", 2, "A/B: the bank is committed to the core after the last beat"),
    Flag("zero", 4, "no DMA read: write beats*rows zero beats"),
), has_dst=True, doc="one 2-D DMA read into a destination")

EXEC = CommandSpec(2, "exec", (
    Field("K", 1, 16, doc="reduction length: operand beats streamed into the core"),
    Field("a_word", 2, 16, doc="first word of the A lanes"),
    Field("b_word", 3, 16, doc="first word of the B lanes"),
), (
    Flag("rel_a", 1, "release the A bank after the last read"),
    Flag("rel_b", 2, "release the B bank after the last read"),
    Flag("chain", 4, "more beats of this tile follow in the next EXEC: the core keeps the "
                     "partial sums (clear: the last beat ends the tile)"),
    Flag("dw", 8, "depthwise (cols == AB only): beat k is word a_word + k of every A lane, "
                  "and column j multiplies byte j of its lane's word by B beat k (so C[i][j] = "
                  "sum_k A_i[k*AB + j] * B_j[k]); B as usual (byte k%AB of word b_word + k//AB)"),
), doc="one R x C tile on the systolic core from the committed A and B banks")

STORE = CommandSpec(3, "store", (
    Field("addr", 1, ADDR, doc="DRAM byte address of the tile's row 0"),
    Field("valid_rows", 2, 16, doc="rows written (the rest of the R rows are dropped)"),
    Field("stride", 3, 32, doc="bytes between rows"),
    Field("p_index", 4, 16, doc="parameter record of column 0 (per tensor: the record)"),
), (
    Flag("relu", 1, "ReLU after requantize"),
    Flag("per_tensor", 2, "one parameter record for every column"),
), doc="requantize the core's next tile (bias, m0, shift per column) and write it by DMA")

VEC = CommandSpec(4, "vec", (
    Field("n", 1, 16, doc="beats"),
    Field("x_off", 2, 16, doc="first beat in X"),
    Field("dst", 3, ADDR, doc="DRAM byte address of the result (TO_X: the first X beat)"),
    Field("ma", 4, 32, signed=True, doc="ADD: multiplier of x"),
    Field("mb", 5, 32, signed=True, doc="ADD: multiplier of s"),
    Field("shift", 6, 32, doc="ADD: right shift (rounding) of ma*x + mb*s"),
), (
    Flag("max", 1, "element-wise max(x, s) (clear: ADD)"),
    Flag("relu", 2, "ReLU of the result"),
    Flag("to_x", 4, "write the result back into X at dst (clear: DMA write to DRAM)"),
    Flag("lut_set", 8, "the n beats of S are the table (entry i for input code i - 128, "
                       "byte i of the beats in order); no result, X unused"),
    Flag("lut", 16, "element-wise table[s + 128] of n beats of S (X unused; the table of the "
                    "last LUT_SET)"),
    Flag("mul", 32, "element-wise sat8(RDBPOT(SRDHM(x * s, ma), shift)); X beat "
                    "x_off + (i mod mb) for mb > 0 (a vector re-read per pixel)"),
    Flag("rowred", 64, "row reduction of n beats of S (X unused) in rows of x_off beats of "
                       "mb & 0xFFFF elements: per row R = its max (mb >> 16 = 1), sum (0) or "
                       "sum of squares (2), result sat8(RDBPOT(SRDHM(R, ma), shift)) in every "
                       "byte of the row's beats"),
), doc="n beats of X (from x_off) with n beats of S, element-wise, int8")

FENCE = CommandSpec(5, "fence", (), (), doc=(
    "barrier: dispatched once every earlier command has finished (engines idle, LOAD data "
    "routed, write responses in); records the performance counters in the stamp memory"))

COMMANDS = (LOAD, EXEC, STORE, VEC, FENCE)
#: the commands that go to an engine FIFO (in the order of the four FIFOs)
ENGINE_COMMANDS = (LOAD, EXEC, STORE, VEC)
BY_OP = {c.op: c for c in COMMANDS}
OP_LOAD, OP_EXEC, OP_STORE, OP_VEC, OP_FENCE = (c.op for c in COMMANDS)
LOAD_LANES, LOAD_COMMIT, LOAD_ZERO = (LOAD.flag(n) for n in ("lanes", "commit", "zero"))
EXEC_REL_A, EXEC_REL_B = EXEC.flag("rel_a"), EXEC.flag("rel_b")
EXEC_CHAIN = EXEC.flag("chain")
EXEC_DW = EXEC.flag("dw")
STORE_RELU, STORE_PER_TENSOR = STORE.flag("relu"), STORE.flag("per_tensor")
VEC_MAX, VEC_RELU, VEC_TO_X = (VEC.flag(n) for n in ("max", "relu", "to_x"))
VEC_LUT_SET, VEC_LUT, VEC_MUL = VEC.flag("lut_set"), VEC.flag("lut"), VEC.flag("mul")
VEC_ROWRED = VEC.flag("rowred")
#: ROWRED operations (bits 16-17 of mb)
ROW_SUM, ROW_MAX, ROW_SUMSQ = 0, 1, 2
#: entries of the vector engine's function table (LUT_SET / LUT): one per int8 code
LUT_ENTRIES = 256


def fields_out_of_range(spec: CommandSpec, values: dict, config: AccelConfig | None = None):
    """(name, value, bits) of every field of ``values`` that the engines cannot decode: the
    16-bit fields always, address fields when ``config`` is given."""
    out = []
    for f in spec.fields:
        bits = f.bits if f.bits != ADDR else (config.axi_addr_width if config else 0)
        if bits and bits < 32 and not f.signed and not 0 <= values[f.name] < 1 << bits:
            out.append((f.name, values[f.name], bits))
    return out


# =============================================================================================
# Post-op parameter records (LOAD P -> the store engine)
# =============================================================================================

#: bytes of one record: int32 words bias, m0, shift, 0 (one record per output column)
PARAM_RECORD_BYTES = 16
PARAM_RECORD_WORDS = ("bias", "m0", "shift", "zero")


# =============================================================================================
# Errors (status.err_code)
# =============================================================================================

@dataclass(frozen=True)
class ErrorBit:
    name: str
    value: int
    message: str


ERRORS = (
    ErrorBit("dma_rd", 1, "AXI read error response"),
    ErrorBit("dma_wr", 2, "AXI write error response"),
    ErrorBit("core", 4, "systolic core: a_last/b_last mismatch"),
    ErrorBit("bad_op", 16, "unknown command opcode"),
)
ERR_DMA_RD, ERR_DMA_WR, ERR_CORE, ERR_BAD_OP = (e.value for e in ERRORS)
ERR_MESSAGES = {e.value: e.message for e in ERRORS}


def describe_error(code: int) -> str:
    return ", ".join(e.message for e in ERRORS if code & e.value) or f"code {code:#x}"


# =============================================================================================
# CSR map
# =============================================================================================

CSR_ACCESS = ("rw", "ro", "w1c", "pulse")


@dataclass(frozen=True)
class CsrField:
    """A named bit field of a register (documentation and host headers only)."""

    name: str
    lsb: int
    width: int = 1
    doc: str = ""

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb

    def get(self, value: int) -> int:
        return value >> self.lsb & ((1 << self.width) - 1)


@dataclass(frozen=True)
class CsrReg:
    """One register: name (also its port name), byte offset, access, width, reset value."""

    name: str
    offset: int
    access: str
    width: int = 32
    reset: int = 0
    doc: str = ""
    fields: tuple[CsrField, ...] = ()

    def field(self, name: str) -> CsrField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


@dataclass(frozen=True)
class CsrMap:
    """An ordered register map; ``validate()`` refuses a bad one (ConfigError)."""

    regs: tuple[CsrReg, ...]
    data_width: int = 32
    addr_width: int = 12

    def validate(self) -> "CsrMap":
        if self.data_width not in (32, 64):
            raise ConfigError(f"csr map: data_width must be 32 or 64, got {self.data_width}")
        nbytes = self.data_width // 8
        names, offsets = set(), set()
        for r in self.regs:
            if r.access not in CSR_ACCESS:
                raise ConfigError(f"csr {r.name}: access {r.access!r} is not one of {CSR_ACCESS}")
            if not r.name.isidentifier() or r.name.startswith("s_axil") or r.name in ("clk", "rst"):
                raise ConfigError(f"csr {r.name!r}: not a usable port name")
            if r.name in names:
                raise ConfigError(f"csr {r.name}: duplicate name")
            if r.offset % nbytes or r.offset < 0 or r.offset >= (1 << self.addr_width):
                raise ConfigError(f"csr {r.name}: offset {r.offset:#x} is not a word offset "
                                  f"inside the {1 << self.addr_width}-byte space")
            if r.offset in offsets:
                raise ConfigError(f"csr {r.name}: offset {r.offset:#x} used twice")
            if not 1 <= r.width <= self.data_width:
                raise ConfigError(f"csr {r.name}: width {r.width} not in 1..{self.data_width}")
            if r.reset >> r.width or r.reset < 0:
                raise ConfigError(f"csr {r.name}: reset {r.reset:#x} does not fit {r.width} bits")
            names.add(r.name)
            offsets.add(r.offset)
        return self

    def by_name(self, name: str) -> CsrReg:
        for r in self.regs:
            if r.name == name:
                return r
        raise KeyError(name)

    def offsets(self) -> dict[str, int]:
        return {r.name: r.offset for r in self.regs}

    def to_dict(self) -> dict:
        return {"data_width": self.data_width, "addr_width": self.addr_width,
                "regs": [asdict(r) for r in self.regs]}

    @classmethod
    def from_dict(cls, d: dict) -> "CsrMap":
        regs = tuple(CsrReg(**{**r, "fields": tuple(CsrField(**f) for f in r.get("fields", ()))})
                     for r in d["regs"])
        return cls(regs, d.get("data_width", 32), d.get("addr_width", 12))

    def c_header(self, prefix: str = "ACCEL") -> str:
        """A C header of offsets, access kinds and field positions (deterministic text)."""
        lines = [f"/* Generated from the pycde-accel CSR map; do not edit. */",
                 f"#ifndef {prefix}_CSR_H", f"#define {prefix}_CSR_H", ""]
        lines += self._c_defines(prefix)
        lines += ["", f"#endif /* {prefix}_CSR_H */", ""]
        return "\n".join(lines)

    def _c_defines(self, prefix: str) -> list[str]:
        lines = []
        for r in self.regs:
            n = f"{prefix}_{r.name.upper()}"
            lines.append(f"#define {n}_OFFSET 0x{r.offset:03x}u /* {r.access}, {r.width} bits"
                         f"{': ' + r.doc if r.doc else ''} */")
            for f in r.fields:
                lines.append(f"#define {n}_{f.name.upper()}_LSB {f.lsb}u")
                lines.append(f"#define {n}_{f.name.upper()}_WIDTH {f.width}u")
        return lines


#: the accelerator's CSR address space: 12 bits of byte address
CSR_ADDR_WIDTH = 12


#: the performance counters (register names), in the host's read order; the stamp registers
#: follow them from STAMP_OFFSET in the same order
_PERF_NAMES = ("perf_cycles", "perf_core_busy", "perf_stall", "perf_dma_rd_bytes",
               "perf_dma_wr_bytes", "perf_cmds")
STAMP_OFFSET = 0x80
#: entries of the stamp memory: the counters of the first STAMP_DEPTH FENCEs of a run
STAMP_DEPTH = 16


def csr_regs(addr_width: int = 32) -> tuple[CsrReg, ...]:
    """The accelerator's registers (``cmd_base`` is ``addr_width`` bits: config.axi_addr_width).

    The host runs a command list per start (the whole model, layers separated by FENCEs): it
    writes ``cmd_base`` (DRAM byte address of the first command) and ``cmd_count``, writes 1
    to ``ctrl``, and waits for ``events.done`` (or polls ``status.busy``). The performance
    counters are cleared by ``start`` and count while the run runs; each FENCE records them
    into the stamp memory (``stamp_count`` FENCEs, the first ``STAMP_DEPTH`` of them readable
    through ``stamp_sel`` and the ``stamp_*`` registers), so per-layer figures are the
    differences between stamps.
    """
    return (
        CsrReg("ctrl", 0x00, "pulse", 1, doc="write 1 to start the commands at cmd_base",
               fields=(CsrField("start", 0),)),
        CsrReg("status", 0x04, "ro", 16, doc="live status",
               fields=(CsrField("busy", 0), CsrField("err_code", 8, 8))),
        CsrReg("events", 0x08, "w1c", 2, doc="sticky events; write 1 to clear",
               fields=(CsrField("done", 0), CsrField("error", 1))),
        CsrReg("hw_info", 0x0C, "ro", 32, doc="rows | cols << 8 | AXI data bytes << 16",
               fields=(CsrField("rows", 0, 8), CsrField("cols", 8, 8),
                       CsrField("axi_bytes", 16, 8))),
        CsrReg("cmd_base", 0x10, "rw", addr_width, doc="DRAM byte address of the first command"),
        CsrReg("cmd_count", 0x14, "rw", 32, doc="number of commands to run"),
        CsrReg("stamp_count", 0x18, "ro", 32,
               doc="FENCEs dispatched since start (the first STAMP_DEPTH are stamped)"),
        CsrReg("stamp_sel", 0x1C, "rw", 8, doc="the stamp the stamp_* registers show"),
        CsrReg("perf_cycles", 0x40, "ro", 32, doc="cycles from start to done"),
        CsrReg("perf_core_busy", 0x44, "ro", 32, doc="cycles the systolic core took a beat"),
        CsrReg("perf_stall", 0x48, "ro", 32,
               doc="cycles an EXEC was active but the core took no beat"),
        CsrReg("perf_dma_rd_bytes", 0x4C, "ro", 32, doc="bytes the DMA read"),
        CsrReg("perf_dma_wr_bytes", 0x50, "ro", 32, doc="bytes the DMA wrote"),
        CsrReg("perf_cmds", 0x54, "ro", 32, doc="commands dispatched"),
    ) + tuple(
        CsrReg("stamp_" + n.removeprefix("perf_"), STAMP_OFFSET + 4 * i, "ro", 32,
               doc=f"{n} when FENCE number stamp_sel was dispatched")
        for i, n in enumerate(_PERF_NAMES))


def csr_map(addr_width: int = 32, data_width: int = 32) -> CsrMap:
    """The accelerator's CSR map (validated)."""
    return CsrMap(csr_regs(addr_width), data_width, CSR_ADDR_WIDTH).validate()


_REGS = {r.name: r for r in csr_regs()}
#: performance counters, in the order the host reads them (their CSRs are ``ro``, 32 bits,
#: cleared by start, counting while the layer runs)
PERF_COUNTERS = _PERF_NAMES
assert PERF_COUNTERS == tuple(n for n in _REGS if n.startswith("perf_"))
#: the stamp registers, in PERF_COUNTERS order
STAMP_REGS = tuple("stamp_" + n.removeprefix("perf_") for n in PERF_COUNTERS)
#: the last one: commands dispatched (the host checks it against cmd_count)
PERF_CMDS = "perf_cmds"
CTRL_START = _REGS["ctrl"].field("start").mask
STATUS_BUSY = _REGS["status"].field("busy")
STATUS_ERR_CODE = _REGS["status"].field("err_code")
EVENTS_DONE = _REGS["events"].field("done").mask
EVENTS_ERROR = _REGS["events"].field("error").mask
HW_INFO_FIELDS = _REGS["hw_info"].fields


def hw_info(config: AccelConfig) -> int:
    """What the ``hw_info`` register reads for ``config`` (rows | cols << 8 | AB << 16)."""
    vals = {"rows": config.rows, "cols": config.cols, "axi_bytes": config.axi_data_width // 8}
    out = 0
    for f in HW_INFO_FIELDS:
        out |= vals[f.name] << f.lsb
    return out


def decode_hw_info(value: int) -> tuple[int, int, int]:
    """(rows, cols, axi_bytes) of a ``hw_info`` value."""
    return tuple(f.get(value) for f in HW_INFO_FIELDS)


# =============================================================================================
# Structure: depths and rules the software relies on
# =============================================================================================

#: commands fetched per DMA read (at most)
FETCH_CHUNK = 4
#: the command FIFO between fetch and dispatch (the fetcher's credits)
CMD_FIFO_DEPTH = 8
#: each engine's command FIFO (LOAD, EXEC, STORE, VEC)
ENGINE_FIFO_DEPTH = 4
#: the route FIFO: destinations of the read bursts in flight, in order
ROUTE_FIFO_DEPTH = 8
#: AXI bursts in flight per direction
MAX_OUTSTANDING = 4
#: the longest AXI burst (beats); no burst crosses a BURST_BOUNDARY-byte boundary
MAX_BURST = 256
BURST_BOUNDARY = 4096
#: the matmul unit's operand FIFO in front of the core (= its read credits): a read's round
#: trip is the scratchpad's read latency (3) + the FIFO's push-to-pop and the credit's
#: register (2) cycles, so 5 keep one read per cycle
EXEC_CREDITS = 5
#: STORE commands queued inside the store engine
STORE_QUEUE = 4
#: beat pairs {X, S} buffered in the vector engine
VEC_PAIR_FIFO_DEPTH = 4
#: rows and cols are 8-bit fields of ``hw_info``
MAX_ARRAY_DIM = 255


def beat_bytes(config: AccelConfig) -> int:
    """Bytes of one AXI beat (AB)."""
    return config.axi_data_width // 8


def check_beat_alignment(config: AccelConfig, who: str = "config") -> None:
    """A row of a C tile (cols int8) must be whole AXI beats: ``cols % AB == 0``."""
    ab = beat_bytes(config)
    if config.cols % ab:
        raise ConfigError(f"{who}: cols={config.cols} is not a multiple of the AXI beat ({ab} "
                          f"bytes at axi_data_width={config.axi_data_width}): the accelerator "
                          f"requires cols % (axi_data_width/8) == 0 so that a C-tile row of int8 "
                          f"is whole beats")


def check_config(config: AccelConfig, who: str = "accelerator") -> None:
    """Every rule of this contract on ``config`` (ConfigError): beat alignment, at most one
    command per beat, rows and cols that fit ``hw_info``."""
    if config.axi_data_width > CMD_BITS:
        raise ConfigError(f"{who}: axi_data_width must be <= {CMD_BITS} (one command per "
                          f"beat at most), got {config.axi_data_width}")
    check_beat_alignment(config, who)
    if config.rows > MAX_ARRAY_DIM or config.cols > MAX_ARRAY_DIM:
        raise ConfigError(f"{who}: rows and cols must be <= {MAX_ARRAY_DIM}")


# =============================================================================================
# Generated text: the simulation harness's header, the doc's tables
# =============================================================================================

def harness_header() -> str:
    """``accel_contract.h`` for ``sim/native/main.cpp``: the CSR map (offsets, fields), the
    performance counters in the host's read order, the error and event bits."""
    m = csr_map()
    L = ["/* Generated from pycde_accel.contract; do not edit. */",
         "#ifndef ACCEL_CONTRACT_H", "#define ACCEL_CONTRACT_H", ""]
    L += m._c_defines("ACCEL")
    L += ["", f"#define ACCEL_CTRL_START 0x{CTRL_START:x}u",
          f"#define ACCEL_EVENTS_DONE 0x{EVENTS_DONE:x}u",
          f"#define ACCEL_EVENTS_ERROR 0x{EVENTS_ERROR:x}u",
          f"#define ACCEL_NUM_PERF {len(PERF_COUNTERS)}",
          "#define ACCEL_PERF_OFFSETS {" + ", ".join(
              f"ACCEL_{n.upper()}_OFFSET" for n in PERF_COUNTERS) + "}",
          f"#define ACCEL_PERF_CMDS_INDEX {PERF_COUNTERS.index(PERF_CMDS)}",
          "#define ACCEL_STAMP_OFFSETS {" + ", ".join(
              f"ACCEL_{n.upper()}_OFFSET" for n in STAMP_REGS) + "}",
          f"#define ACCEL_STAMP_DEPTH {STAMP_DEPTH}"]
    for e in ERRORS:
        L.append(f"#define ACCEL_ERR_{e.name.upper()} 0x{e.value:02x}u /* {e.message} */")
    L += ["", "#endif /* ACCEL_CONTRACT_H */", ""]
    return "\n".join(L)


def _table(head: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def markdown_tables() -> dict[str, str]:
    """The doc's generated tables, by name (``<!-- contract:NAME -->`` blocks of
    docs/accelerator-contract.md)."""
    t = {}
    rows = [[f"{c.op}", f"`{c.kind.upper()}`", c.doc] for c in COMMANDS]
    t["opcodes"] = _table(["op", "command", "what it does"], rows)
    rows = []
    for c in COMMANDS:
        rows.append([f"`{c.kind.upper()}`", "0", "op, flags" + (", dst" if c.has_dst else ""),
                     "8, 8" + (", 8" if c.has_dst else ""), "bits 0-7 op, 8-15 flags"
                     + (", 16-23 destination" if c.has_dst else "")])
        for f in c.fields:
            bits = "address width" if f.bits == ADDR else str(f.bits)
            rows.append(["", str(f.word), f"`{f.name}`", bits + (" (signed)" if f.signed else ""),
                         f.doc])
    t["fields"] = _table(["command", "word", "field", "bits decoded", "meaning"], rows)
    rows = [[f"`{c.kind.upper()}`", f"`{f.name.upper()}`", f"{f.value}", f"{f.bit}", f.doc]
            for c in COMMANDS for f in c.flags]
    t["flags"] = _table(["command", "flag", "mask", "bit of word 0", "meaning"], rows)
    rows = [[f"`{d.name}`", d.value, d.doc] for d in DESTINATIONS]
    t["destinations"] = _table(["dst", "value", "destination"], rows)
    rows = []
    for r in csr_regs():
        width = "axi_addr_width" if r.name == "cmd_base" else str(r.width)
        fields = ", ".join(f"{f.name} [{f.lsb + f.width - 1}:{f.lsb}]" if f.width > 1
                           else f"{f.name} [{f.lsb}]" for f in r.fields)
        rows.append([f"0x{r.offset:02X}", f"`{r.name}`", r.access, width, fields, r.doc])
    t["csr"] = _table(["offset", "register", "access", "bits", "fields", "meaning"], rows)
    rows = [[f"`{n}`", f"0x{_REGS[n].offset:02X}", _REGS[n].doc] for n in PERF_COUNTERS]
    rows += [[f"`{n}`", f"0x{_REGS[n].offset:02X}", _REGS[n].doc] for n in STAMP_REGS]
    t["perf"] = _table(["counter", "offset", "counts"], rows)
    rows = [[f"0x{e.value:02X}", f"`{e.name}`", e.message] for e in ERRORS]
    t["errors"] = _table(["err_code bit", "name", "meaning"], rows)
    rows = [[n, v, d] for n, v, d in (
        ("FETCH_CHUNK", FETCH_CHUNK, "commands fetched per DMA read, at most"),
        ("CMD_FIFO_DEPTH", CMD_FIFO_DEPTH, "command FIFO (fetch credits)"),
        ("ENGINE_FIFO_DEPTH", ENGINE_FIFO_DEPTH, "command FIFO of each engine"),
        ("ROUTE_FIFO_DEPTH", ROUTE_FIFO_DEPTH, "read bursts' destinations in flight"),
        ("MAX_OUTSTANDING", MAX_OUTSTANDING, "AXI bursts in flight per direction"),
        ("MAX_BURST", MAX_BURST, "beats of the longest AXI burst"),
        ("BURST_BOUNDARY", BURST_BOUNDARY, "bytes: no burst crosses such a boundary"),
        ("EXEC_CREDITS", EXEC_CREDITS, "operand beats in flight to the core"),
        ("STORE_QUEUE", STORE_QUEUE, "STORE commands queued in the store engine"),
        ("VEC_PAIR_FIFO_DEPTH", VEC_PAIR_FIFO_DEPTH, "{X, S} beat pairs in the vector engine"),
        ("PARAM_RECORD_BYTES", PARAM_RECORD_BYTES, "bytes of a post-op parameter record"),
        ("STAMP_DEPTH", STAMP_DEPTH, "FENCEs per run whose counters are recorded"),
    )]
    t["depths"] = _table(["name", "value", "what"], rows)
    return {k: "\n".join(v) for k, v in t.items()}


_BLOCK_OPEN, _BLOCK_CLOSE = "<!-- contract:{} -->", "<!-- /contract -->"


def render_doc(text: str) -> str:
    """``text`` with every ``<!-- contract:NAME -->`` ... ``<!-- /contract -->`` block replaced
    by the current :func:`markdown_tables` entry NAME (KeyError for an unknown NAME)."""
    tables = markdown_tables()
    out, pos = [], 0
    while True:
        i = text.find("<!-- contract:", pos)
        if i < 0:
            out.append(text[pos:])
            return "".join(out)
        j = text.index("-->", i)
        name = text[i + len("<!-- contract:"):j].strip()
        k = text.index(_BLOCK_CLOSE, j)
        out.append(text[pos:i])
        out.append(f"{_BLOCK_OPEN.format(name)}\n{tables[name]}\n{_BLOCK_CLOSE}")
        pos = k + len(_BLOCK_CLOSE)


if __name__ == "__main__":      # python -m pycde_accel.contract docs/accelerator-contract.md
    import sys
    from pathlib import Path

    for p in sys.argv[1:]:
        Path(p).write_text(render_doc(Path(p).read_text()))
