"""AXI4-Lite slave CSR block generated from a data description of its registers.

The register map is data (:class:`CsrReg` / :class:`CsrMap`, defined in
:mod:`pycde_accel.contract`), so the same object that generates the RTL also goes into
``design.json`` (``CsrMap.to_dict()``) and into host headers (``CsrMap.c_header()``), Gemmini
style. :func:`default_csr_map` is the accelerator's map (the contract's).

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
  apart. On the first edge where both are held and the B register is empty, the write is
  performed and ``bvalid`` rises (1 cycle after the later of AW/W if B is empty). ``bvalid``
  is held until ``bready``. The write decision and each register's write enable are logic of
  flops only (``bready`` is not in them, and the address compare is registered with AW,
  ``aw_hit_*``, and so is the response it gives, ``aw_resp``): a write's CE fans out to
  registers all over the design. Throughput: one
  write per 2 cycles while ``bready`` is high.
* Read: ``arready = !rvalid``; the read data is registered on the AR handshake edge, so
  ``rvalid`` rises one cycle after AR; held until ``rready``. One read per 2 cycles.
* Responses: OKAY; SLVERR for a write to an ``ro`` register; DECERR for an address that
  matches no register (read data 0). Only the word address (``addr >> log2(data_width/8)``,
  ``addr_width`` bits of the bus) is decoded; ``awprot``/``arprot`` are ignored.
"""

from __future__ import annotations

from pycde import Clock, Input, Module, Output, Reset, generator
from pycde.constructs import Mux
from pycde.signals import BitsSignal
from pycde.types import Bits

from ..contract import CSR_ACCESS as ACCESS, CsrField, CsrMap, CsrReg, csr_map
from .common import NamedReg, name_module

__all__ = ["ACCESS", "CsrField", "CsrMap", "CsrReg", "default_csr_map", "make_axil_csr"]

OKAY, SLVERR, DECERR = 0, 2, 3


def default_csr_map(addr_width: int = 32, data_width: int = 32) -> CsrMap:
    """The accelerator's CSR map: :func:`pycde_accel.contract.csr_map` (``cmd_base`` is
    ``addr_width`` bits, i.e. config.axi_addr_width; the registers and what they hold are in
    docs/accelerator-contract.md)."""
    return csr_map(addr_width, data_width)


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
        w_data = NamedReg(dw, clk, None, None, ce=w_fire, name="w_data")
        w_data.next(p.s_axil_wdata)
        w_strb = NamedReg(nb, clk, None, None, ce=w_fire, name="w_strb")
        w_strb.next(p.s_axil_wstrb)
        # the B register empty (a flop), not "empty or being emptied": the bready pin stays
        # out of every register's write enable (csr.aw_full -> the bready LUT -> the write
        # decode -> stamp_sel's CE was the placed 8x8's critical path on seed 2 at 82013b3)
        do_write = aw_full.q & w_full.q & ~b_valid.q
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

        aw_any, aw_ro = zero, zero       # the write's response, decoded from the address
        r_hit_any = zero
        rdata = Bits(dw)(0)
        for r in regs:
            word = Bits(ww)(r.offset >> lsb)
            # the address compare is made as AW is taken, into a flop per register
            aw_hit = NamedReg(1, clk, None, None, ce=aw_fire, name=f"aw_hit_{r.name}")
            aw_match = p.s_axil_awaddr[lsb:aw] == word
            aw_hit.next(aw_match)
            w_hit = aw_hit.q & do_write
            r_hit = ar_word == word
            aw_any = aw_any | aw_match
            r_hit_any = r_hit_any | r_hit
            m = bmask[0:r.width]
            d = w_data.q[0:r.width]
            if r.access == "ro":
                aw_ro = aw_ro | aw_match
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

        # the response is decoded from the address as AW is taken, into a register beside B's:
        # from the per-register hits (each beside its register, all over the design) it was
        # csr.w_full -> a 2.48 ns route -> the hits' OR -> a 2.64 ns route -> b_resp, the
        # placed 8x8's critical path on seed 3 at 32abc82 (8.05 ns, 6.58 routing)
        aw_resp = NamedReg(2, clk, None, None, ce=aw_fire, name="aw_resp")
        aw_resp.next(Mux(aw_any, Bits(2)(DECERR), Mux(aw_ro, Bits(2)(OKAY), Bits(2)(SLVERR))))
        b_resp = NamedReg(2, clk, rst, 0, ce=do_write, name="b_resp")
        b_resp.next(aw_resp.q)
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
