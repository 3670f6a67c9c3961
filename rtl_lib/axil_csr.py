"""AXI4-Lite slave CSR block generated from a data description of its registers.

The register map is data (:class:`CsrReg` / :class:`CsrMap`), so the same object that generates
the RTL also goes into ``design.json`` (``CsrMap.to_dict()``) and into host headers
(``CsrMap.c_header()``), Gemmini style. :func:`default_csr_map` is the accelerator's map.

Registers (each at a word-aligned byte offset, ``width <= data_width`` bits, LSB-aligned)
----------------------------------------------------------------------------------------
* ``rw``:    read/write; output port ``<name>`` (Bits(width)) holds the value; ``reset`` value
             after reset. Byte strobes select which bytes a write changes.
* ``ro``:    read-only; input port ``<name>`` (Bits(width)) is sampled when the read is accepted.
             A write is answered SLVERR and changes nothing.
* ``w1c``:   sticky status: input port ``<name>_set`` (Bits(width)) sets bits (any cycle, one
             cycle is enough); a write of 1 to a bit (in a strobed byte) clears it; output port
             ``<name>`` holds the value. A set and a clear of the same bit in one cycle: set wins.
* ``pulse``: write-only command: output port ``<name>`` is ``wdata & strobe-mask`` for exactly
             the one cycle after the write is performed, 0 otherwise; reads return 0.

AXI4-Lite slave port ``s_axil_*`` (``awaddr awprot awvalid awready wdata wstrb wvalid wready
bresp bvalid bready araddr arprot arvalid arready rdata rresp rvalid rready``; cocotbext-axi's
``AxiLiteBus.from_prefix(dut, "s_axil")`` maps onto it as is). ``clk``, ``rst`` (synchronous,
active high).

Protocol and latency
--------------------
* Write: AW and W are independent one-entry holding registers (``aw_full``/``w_full``):
  ``awready = !aw_full``, ``wready = !w_full``; either may arrive first, any number of cycles
  apart. On the first edge where both are held and the B register is free (or being emptied),
  the write is performed and ``bvalid`` rises (1 cycle after the later of AW/W if B is free).
  ``bvalid`` is held until ``bready``. Throughput: one write per 2 cycles.
* Read: ``arready = !rvalid``; the read data is registered on the AR handshake edge, so
  ``rvalid`` rises one cycle after AR; held until ``rready``. One read per 2 cycles.
* Responses: OKAY; SLVERR for a write to an ``ro`` register; DECERR for an address that
  matches no register (read data 0). Only the word address (``addr >> log2(data_width/8)``,
  ``addr_width`` bits of the bus) is decoded; ``awprot``/``arprot`` are ignored.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from pycde import Clock, Input, Module, Output, Reset, generator
from pycde.constructs import Mux
from pycde.signals import BitsSignal
from pycde.types import Bits

from ..errors import ConfigError
from .common import NamedReg, name_module

ACCESS = ("rw", "ro", "w1c", "pulse")
OKAY, SLVERR, DECERR = 0, 2, 3


@dataclass(frozen=True)
class CsrField:
    """A named bit field of a register (documentation and host headers only)."""

    name: str
    lsb: int
    width: int = 1
    doc: str = ""


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


@dataclass(frozen=True)
class CsrMap:
    """An ordered register map; ``validate(data_width, addr_width)`` refuses a bad one."""

    regs: tuple[CsrReg, ...]
    data_width: int = 32
    addr_width: int = 12

    def validate(self) -> "CsrMap":
        if self.data_width not in (32, 64):
            raise ConfigError(f"csr map: data_width must be 32 or 64, got {self.data_width}")
        nbytes = self.data_width // 8
        names, offsets = set(), set()
        for r in self.regs:
            if r.access not in ACCESS:
                raise ConfigError(f"csr {r.name}: access {r.access!r} is not one of {ACCESS}")
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
        for r in self.regs:
            n = f"{prefix}_{r.name.upper()}"
            lines.append(f"#define {n}_OFFSET 0x{r.offset:03x}u /* {r.access}, {r.width} bits"
                         f"{': ' + r.doc if r.doc else ''} */")
            for f in r.fields:
                lines.append(f"#define {n}_{f.name.upper()}_LSB {f.lsb}u")
                lines.append(f"#define {n}_{f.name.upper()}_WIDTH {f.width}u")
        lines += ["", f"#endif /* {prefix}_CSR_H */", ""]
        return "\n".join(lines)


def default_csr_map(addr_width: int = 32, data_width: int = 32) -> CsrMap:
    """The accelerator's CSR map (``cmd_base`` is ``addr_width`` bits, i.e. config.axi_addr_width).

    The host runs one layer per start: it writes ``cmd_base`` (DRAM byte address of the
    layer's first command) and ``cmd_count``, writes 1 to ``ctrl``, and waits for ``events.done``
    (or polls ``status.busy``). The performance counters are cleared by ``start`` and count
    while the layer runs, so after ``done`` they hold that layer's figures.

    0x00 ``ctrl`` pulse: bit 0 start.  0x04 ``status`` ro: busy, error bits.
    0x08 ``events`` w1c: bit 0 done, bit 1 error (sticky, host clears).
    0x0C ``hw_info`` ro: rows | cols << 8 | AXI bytes << 16 (the host checks it against its
    program). 0x10 ``cmd_base``, 0x14 ``cmd_count``. 0x40.. performance counters.
    """
    aw = addr_width
    regs = (
        CsrReg("ctrl", 0x00, "pulse", 1, doc="write 1 to start the commands at cmd_base",
               fields=(CsrField("start", 0),)),
        CsrReg("status", 0x04, "ro", 16, doc="live status",
               fields=(CsrField("busy", 0), CsrField("err_code", 8, 8))),
        CsrReg("events", 0x08, "w1c", 2, doc="sticky events; write 1 to clear",
               fields=(CsrField("done", 0), CsrField("error", 1))),
        CsrReg("hw_info", 0x0C, "ro", 32, doc="rows | cols << 8 | AXI data bytes << 16",
               fields=(CsrField("rows", 0, 8), CsrField("cols", 8, 8),
                       CsrField("axi_bytes", 16, 8))),
        CsrReg("cmd_base", 0x10, "rw", aw, doc="DRAM byte address of the first command"),
        CsrReg("cmd_count", 0x14, "rw", 32, doc="number of commands to run"),
        CsrReg("perf_cycles", 0x40, "ro", 32, doc="cycles from start to done"),
        CsrReg("perf_core_busy", 0x44, "ro", 32, doc="cycles the systolic core took a beat"),
        CsrReg("perf_stall", 0x48, "ro", 32,
               doc="cycles an EXEC was active but the core took no beat"),
        CsrReg("perf_dma_rd_bytes", 0x4C, "ro", 32, doc="bytes the DMA read"),
        CsrReg("perf_dma_wr_bytes", 0x50, "ro", 32, doc="bytes the DMA wrote"),
        CsrReg("perf_cmds", 0x54, "ro", 32, doc="commands dispatched"),
    )
    return CsrMap(regs, data_width, 12).validate()


def make_axil_csr(csr_map: CsrMap, name: str = "axil_csr") -> type[Module]:
    """The CSR slave module class for ``csr_map`` (ConfigError if the map is invalid)."""
    csr_map.validate()
    dw, aw = csr_map.data_width, csr_map.addr_width
    nb = dw // 8
    lsb = (nb - 1).bit_length()  # address bits below the word address
    ww = aw - lsb                # word-address width
    regs = csr_map.regs

    ports = {
        "clk": Clock(), "rst": Reset(),
        "s_axil_awaddr": Input(Bits(aw)), "s_axil_awprot": Input(Bits(3)),
        "s_axil_awvalid": Input(Bits(1)), "s_axil_awready": Output(Bits(1)),
        "s_axil_wdata": Input(Bits(dw)), "s_axil_wstrb": Input(Bits(nb)),
        "s_axil_wvalid": Input(Bits(1)), "s_axil_wready": Output(Bits(1)),
        "s_axil_bresp": Output(Bits(2)), "s_axil_bvalid": Output(Bits(1)),
        "s_axil_bready": Input(Bits(1)),
        "s_axil_araddr": Input(Bits(aw)), "s_axil_arprot": Input(Bits(3)),
        "s_axil_arvalid": Input(Bits(1)), "s_axil_arready": Output(Bits(1)),
        "s_axil_rdata": Output(Bits(dw)), "s_axil_rresp": Output(Bits(2)),
        "s_axil_rvalid": Output(Bits(1)), "s_axil_rready": Input(Bits(1)),
    }
    for r in regs:
        if r.access == "ro":
            ports[r.name] = Input(Bits(r.width))
        elif r.access == "w1c":
            ports[f"{r.name}_set"] = Input(Bits(r.width))
            ports[r.name] = Output(Bits(r.width))
        else:
            ports[r.name] = Output(Bits(r.width))

    def pad(v, width):
        return v if width == dw else BitsSignal.concat([Bits(dw - width)(0), v])

    def build(p):
        clk, rst = p.clk, p.rst
        one, zero = Bits(1)(1), Bits(1)(0)

        # -- write address / data holding registers ------------------------------------------
        aw_full = NamedReg(1, clk, rst, 0, name="aw_full")
        w_full = NamedReg(1, clk, rst, 0, name="w_full")
        b_valid = NamedReg(1, clk, rst, 0, name="b_valid")
        aw_fire = p.s_axil_awvalid & ~aw_full.q
        w_fire = p.s_axil_wvalid & ~w_full.q
        aw_word = NamedReg(ww, clk, None, None, ce=aw_fire, name="aw_word")
        aw_word.next(p.s_axil_awaddr[lsb:aw])
        w_data = NamedReg(dw, clk, None, None, ce=w_fire, name="w_data")
        w_data.next(p.s_axil_wdata)
        w_strb = NamedReg(nb, clk, None, None, ce=w_fire, name="w_strb")
        w_strb.next(p.s_axil_wstrb)
        b_free = ~b_valid.q | p.s_axil_bready
        do_write = aw_full.q & w_full.q & b_free
        aw_full.next(Mux(do_write, aw_full.q | aw_fire, zero))
        w_full.next(Mux(do_write, w_full.q | w_fire, zero))
        b_valid.next(do_write | (b_valid.q & ~p.s_axil_bready))
        p.s_axil_awready = ~aw_full.q
        p.s_axil_wready = ~w_full.q
        bmask = BitsSignal.concat([BitsSignal.concat([w_strb.q[i]] * 8)
                                   for i in reversed(range(nb))])

        # -- read address -> registered read data ----------------------------------------------
        r_valid = NamedReg(1, clk, rst, 0, name="r_valid")
        ar_fire = p.s_axil_arvalid & ~r_valid.q
        r_valid.next(ar_fire | (r_valid.q & ~p.s_axil_rready))
        p.s_axil_arready = ~r_valid.q
        ar_word = p.s_axil_araddr[lsb:aw]

        w_hit_any, w_ro_hit = zero, zero
        r_hit_any = zero
        rdata = Bits(dw)(0)
        for r in regs:
            word = Bits(ww)(r.offset >> lsb)
            w_hit = (aw_word.q == word) & do_write
            r_hit = ar_word == word
            w_hit_any = w_hit_any | w_hit
            r_hit_any = r_hit_any | r_hit
            m = bmask[0:r.width]
            d = w_data.q[0:r.width]
            if r.access == "ro":
                w_ro_hit = w_ro_hit | w_hit
                value = getattr(p, r.name)
            elif r.access == "rw":
                reg = NamedReg(r.width, clk, rst, r.reset, name=f"{r.name}_q")
                merged = (reg.q & ~m) | (d & m)
                reg.next(Mux(w_hit, reg.q, merged))
                setattr(p, r.name, reg.q)
                value = reg.q
            elif r.access == "w1c":
                reg = NamedReg(r.width, clk, rst, r.reset, name=f"{r.name}_q")
                clr = Mux(w_hit, Bits(r.width)(0), d & m)
                reg.next((reg.q & ~clr) | getattr(p, f"{r.name}_set"))
                setattr(p, r.name, reg.q)
                value = reg.q
            else:  # pulse
                reg = NamedReg(r.width, clk, rst, 0, name=f"{r.name}_pulse")
                reg.next(Mux(w_hit, Bits(r.width)(0), d & m))
                setattr(p, r.name, reg.q)
                value = None
            if value is not None:
                rdata = rdata | Mux(r_hit, Bits(dw)(0), pad(value, r.width))

        b_resp = NamedReg(2, clk, rst, 0, ce=do_write, name="b_resp")
        b_resp.next(Mux(w_hit_any, Bits(2)(DECERR), Mux(w_ro_hit, Bits(2)(OKAY), Bits(2)(SLVERR))))
        p.s_axil_bresp = b_resp.q
        p.s_axil_bvalid = b_valid.q
        r_data = NamedReg(dw, clk, rst, 0, ce=ar_fire, name="r_data")
        r_data.next(rdata)
        r_resp = NamedReg(2, clk, rst, 0, ce=ar_fire, name="r_resp")
        r_resp.next(Mux(r_hit_any, Bits(2)(DECERR), Bits(2)(OKAY)))
        p.s_axil_rdata = r_data.q
        p.s_axil_rresp = r_resp.q
        p.s_axil_rvalid = r_valid.q

    cls = type("AxilCsr", (Module,), {**ports, "build": generator(build)})
    return name_module(cls, name)
