"""The accelerator configuration: one immutable object from which everything is generated.

Hardware (the systolic core, scratchpads, DMA), host-side descriptors and reports all read the
same :class:`AccelConfig`. It round-trips through JSON (``to_json`` / ``from_json``) and
``validate()`` refuses a config that cannot be built, with a message that names the field.
"""

from __future__ import annotations

import dataclasses
import math
import json
import re
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError

#: Dataflows the systolic core implements.
DATAFLOWS = ("output_stationary",)
#: How the post-op kernels are scheduled (``--schedule``): the CIRCT lowering route they take.
SCHEDULES = ("dynamic", "static", "calyx")
#: The DRAM the simulators and the perf model charge (``--memory``): ``board``, the target
#: preset's board memory (``fpga.devices.BoardMemory``) at ``clock_mhz``; ``ideal``, one AXI
#: beat per cycle on each of the read and write channels, whatever the board has.
MEMORIES = ("board", "ideal")


@dataclass(frozen=True)
class AccelConfig:
    """Parameters of one accelerator instance.

    rows, cols:      systolic array shape (PE rows x PE columns); rows index M, cols index N.
                     The default 8x8 is chosen from placed measurements on the ECP5-85F
                     (``fpga.fit.FMAX_POINTS``, ``bench/vs_cpu.py``): it places at 119.1-122.4
                     MHz (seeds 1-2 of one netlist, commit fc1165b; 116.8-119.9 at 2094307,
                     107.9-126.9 over the seeds placed since; 109.6-119.5 at ec24c65, 112.4-123.0 at 7a06fda, 123.2-128.3 at
                     bd973bd: the seeds of one netlist spread by up to 16 MHz).
                     16x8 with 2048-deep A/B scratchpads (128 PEs, 153 of the 156
                     DSPs with the kernels) placed at 106.7 MHz (seed 1, e8fcff2; 100.0 at
                     d1cbf2b): at 29fc67b's placed clocks it runs the CIFAR VGG
                     1.58 and the CIFAR ResNet 1.36 times faster (0.63 of the device's MAC peak
                     against 0.37), but lenet5 and mlp 8-11% slower (their layers do not fill
                     the larger tiles, the clock is lower), 1.09 times faster in geomean over
                     the vs_cpu models. It stays off the default because that gain is small
                     next to what it costs everything built at the default: twice the
                     simulation, a placement that fills the device. For large CNNs:
                     ``AccelConfig(rows=16, cols=8, spad_a_depth=2048, spad_b_depth=2048)``
                     (``--array 16x8`` on the command line keeps 1024-deep scratchpads; or
                     ``dse``); 8x16 with a 128-bit AXI port placed at 89.9 MHz (older RTL).
    data_width:      signed operand width in bits (int8 by default).
    acc_width:       signed accumulator width in bits.
    max_k:           the largest reduction length K one output tile may have, summed over the
                     EXECs that feed it (a K longer than a scratchpad bank is split into chunks
                     that accumulate in the core, ``backend/commands.py``); the generator
                     proves that ``max_k`` products of two ``data_width`` operands fit
                     ``acc_width``. The default is the largest K a 32-bit accumulator proves
                     for int8 (``max_k_for(8, 32)`` = 131071).
    dataflow:        see ``rtl_lib.systolic`` for why output-stationary.
    spad_a_depth, spad_b_depth, spad_c_depth: scratchpad depths in words (per buffer half).
    axi_data_width:  AXI4 DMA data width in bits; axi_addr_width its address width.
    axil_data_width: AXI4-Lite CSR data width in bits.
    target:          default FPGA target name for synthesis (see ``pycde_accel.fpga``).
    clock_mhz:       clock the design is constrained to in vendor scripts.
    schedule:        lowering route of the post-op kernels (``--schedule``): ``static`` (CIRCT
                     pipeline, the default: ``assemble.KERNEL_ROUTE``), ``dynamic``
                     (CIRCT handshake) or ``calyx`` (CIRCT calyx with the project's passes).
    memory:          the DRAM bandwidth the simulators and the perf model charge (``--memory``):
                     ``board`` (the default: the target's board memory, bytes per cycle =
                     its peak bytes/s / ``clock_mhz``; ``pycde_accel.perfmodel.memory``) or
                     ``ideal`` (no limit beyond one AXI beat per cycle per channel).
    store_lanes:     requantize kernels the STORE engine runs side by side (a power of two;
                     ``lanes`` below: the engine uses the largest power of two <= it that
                     divides both cols and the AXI beat, so a C tile takes R*C/lanes cycles).
                     Each lane costs the kernel's 4 MULT18X18D and 3 parameter-memory blocks
                     (``fpga.fit``); the default 4 keeps 16x8 on the ECP5-85F (141 + 12 of 156).
    """

    rows: int = 8
    cols: int = 8
    data_width: int = 8
    acc_width: int = 32
    max_k: int = 131071
    dataflow: str = "output_stationary"
    spad_a_depth: int = 1024
    spad_b_depth: int = 1024
    spad_c_depth: int = 256
    axi_data_width: int = 64
    axi_addr_width: int = 32
    axil_data_width: int = 32
    target: str = "ecp5-85f"
    clock_mhz: float = 100.0
    schedule: str = "static"
    memory: str = "board"
    store_lanes: int = 4

    # ---- derived -------------------------------------------------------------------------
    @property
    def array(self) -> str:
        return f"{self.rows}x{self.cols}"

    @property
    def lanes(self) -> int:
        """The STORE engine's lanes: the largest power of two <= ``store_lanes`` dividing both
        ``cols`` and the AXI beat (``axi_data_width / 8`` bytes)."""
        return math.gcd(1 << (max(1, self.store_lanes).bit_length() - 1), self.cols,
                        self.axi_data_width // 8)

    # ---- checks --------------------------------------------------------------------------
    def validate(self) -> "AccelConfig":
        """Return self, or raise ConfigError naming the first field that cannot be built."""
        for name in ("rows", "cols"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(f"config: {name} must be an integer >= 1, got {v!r}")
            if v > 64:
                raise ConfigError(f"config: {name}={v} is larger than the supported 64")
        for name in ("data_width", "acc_width"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 2:
                raise ConfigError(f"config: {name} must be an integer >= 2, got {v!r}")
        if self.acc_width > 64:
            raise ConfigError(f"config: acc_width={self.acc_width} is larger than the supported 64")
        if not isinstance(self.max_k, int) or self.max_k < 1:
            raise ConfigError(f"config: max_k must be an integer >= 1, got {self.max_k!r}")
        need = required_acc_width(self.data_width, self.max_k)
        if need > self.acc_width:
            raise ConfigError(
                f"config: acc_width={self.acc_width} can overflow: {self.max_k} products of two "
                f"signed {self.data_width}-bit operands need {need} bits "
                f"(raise acc_width to {need} or lower max_k to "
                f"{max_k_for(self.data_width, self.acc_width)})")
        if self.dataflow not in DATAFLOWS:
            raise ConfigError(f"config: dataflow {self.dataflow!r} is not one of {', '.join(DATAFLOWS)}")
        for name in ("spad_a_depth", "spad_b_depth", "spad_c_depth"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 2 or v & (v - 1):
                raise ConfigError(f"config: {name} must be a power of two >= 2, got {v!r}")
        if self.axi_data_width not in (32, 64, 128, 256, 512):
            raise ConfigError(f"config: axi_data_width must be 32, 64, 128, 256 or 512, got {self.axi_data_width!r}")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"config: schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.memory not in MEMORIES:
            raise ConfigError(f"config: memory must be one of {', '.join(MEMORIES)}, got {self.memory!r}")
        if not isinstance(self.clock_mhz, (int, float)) or not self.clock_mhz > 0:
            raise ConfigError(f"config: clock_mhz must be a positive number, got {self.clock_mhz!r}")
        if self.axil_data_width not in (32, 64):
            raise ConfigError(f"config: axil_data_width must be 32 or 64, got {self.axil_data_width!r}")
        v = self.store_lanes
        if not isinstance(v, int) or isinstance(v, bool) or v < 1 or v & (v - 1) or v > 64:
            raise ConfigError(f"config: store_lanes must be a power of two in 1..64, got {v!r}")
        return self

    # ---- serialization -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AccelConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"config: unknown field(s) {', '.join(unknown)}")
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> "AccelConfig":
        return cls.from_dict(json.loads(text))

    def replace(self, **changes: Any) -> "AccelConfig":
        return dataclasses.replace(self, **changes)


def required_acc_width(data_width: int, k: int) -> int:
    """Bits a signed accumulator needs for a sum of ``k`` products of signed ``data_width`` operands.

    The largest magnitude is k * (-2^(w-1))^2 = k * 2^(2w-2), which is positive, so the
    accumulator must hold +k * 2^(2w-2): that needs bit_length(k * 2^(2w-2)) + 1 bits (sign).
    """
    max_mag = k * (1 << (2 * data_width - 2))
    return max_mag.bit_length() + 1


def max_k_for(data_width: int, acc_width: int) -> int:
    """The largest K whose sum of products cannot overflow a signed acc_width accumulator."""
    return ((1 << (acc_width - 1)) - 1) // (1 << (2 * data_width - 2))


_ARRAY_RE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")


def parse_array(text: str) -> tuple[int, int]:
    """Parse ``RxC`` (e.g. ``8x8``) into (rows, cols); ConfigError if it is malformed or zero."""
    m = _ARRAY_RE.match(text or "")
    if not m:
        raise ConfigError(f"--array: expected ROWSxCOLS such as 8x8, got {text!r}")
    r, c = int(m.group(1)), int(m.group(2))
    if r < 1 or c < 1:
        raise ConfigError(f"--array {text}: rows and cols must be >= 1")
    return r, c
