"""Valid/ready streams as one type, and PyCDE modules declared from port groups.

``Stream(**fields)`` is a stream's signature: its payload fields (name -> width in bits), in
port order, plus the handshake ``valid`` and ``ready`` (1 bit each). They stand after the
payload unless the signature names them where they stand (``Stream(valid=1, index=32,
data=32, ready=1)``). Protocol (AXI-Stream style, every stream in rtl_lib): a beat moves on a
rising edge where ``valid`` and ``ready`` are both high; a sender holds the beat (payload and
``valid``) until it is taken. ``layout``: the ``(name, width)`` of every port, in order.

Ports of a stream called ``prefix`` are ``{prefix}_{field}`` (AXI's are ``{prefix}{field}``:
``sep=""``):

* ``s.sink(prefix)``: the port group of a receiver (payload and ``valid`` in, ``ready`` out);
* ``s.source(prefix)``: the port group of a sender (payload and ``valid`` out, ``ready`` in);
* ``s.forward(dst, dst_prefix, src, src_prefix)``: drives the payload and ``valid`` outputs
  of ``dst`` (a generator's port object) from the same fields of ``src`` (an instance or a
  port object); the ready goes the other way, as the instance's input.
* ``s.fields(prefix, src, src_prefix)``: ``{prefix_field: src.src_prefix_field}`` for the
  payload and ``valid``, as keyword arguments of an instance whose sink is ``prefix``.

``pack(fields)`` / ``unpack(word, widths)``: a stream's payload as one word (the first field
at the least significant bits) and back, for a register slice or a FIFO entry that carries it.

``module(name, ports, build)``: the module class with ``ports`` (a dict, in port order, e.g.
``{"clk": Clock(), "rst": Reset(), **s.sink("a")}``) and the generator ``build(ports)``, its SV
module and file named ``name`` (``common.name_module``).
"""

from __future__ import annotations

from pycde import Input, Module, Output, generator
from pycde.signals import BitsSignal
from pycde.types import Bits

from .common import name_module

HANDSHAKE = ("valid", "ready")


class Stream:
    """A valid/ready stream's signature (see the module docstring)."""

    def __init__(self, **fields: int):
        for name in HANDSHAKE:
            if fields.setdefault(name, 1) != 1:
                raise ValueError(f"stream: {name} is one bit")
        self.layout = tuple(fields.items())

    def _group(self, prefix: str, receiver: bool, sep: str) -> dict:
        ports = {}
        for name, width in self.layout:
            inward = (name == "ready") != receiver
            ports[f"{prefix}{sep}{name}"] = (Input if inward else Output)(Bits(width))
        return ports

    def sink(self, prefix: str, sep: str = "_") -> dict:
        """The ports of a receiver: payload and ``valid`` in, ``ready`` out (``sep`` between
        the prefix and the field, ``""`` for AXI's ``m_axi_arvalid``)."""
        return self._group(prefix, True, sep)

    def source(self, prefix: str, sep: str = "_") -> dict:
        """The ports of a sender: payload and ``valid`` out, ``ready`` in."""
        return self._group(prefix, False, sep)

    def fields(self, prefix: str, src, src_prefix: str | None = None) -> dict:
        """The payload and ``valid`` of ``src``'s stream ``src_prefix`` (default ``prefix``),
        keyed by the port names of the stream ``prefix``."""
        src_prefix = prefix if src_prefix is None else src_prefix
        return {f"{prefix}_{n}": getattr(src, f"{src_prefix}_{n}")
                for n, _ in self.layout if n != "ready"}

    def forward(self, dst, dst_prefix: str, src, src_prefix: str | None = None) -> None:
        """Drive ``dst``'s payload and ``valid`` outputs from ``src``'s stream."""
        for port, sig in self.fields(dst_prefix, src, src_prefix).items():
            setattr(dst, port, sig)


def pack(fields: dict) -> BitsSignal:
    """One word of ``fields`` (name -> signal, in order), the first at the least significant
    bits: the payload of a register slice or a FIFO entry. :func:`unpack` takes it apart."""
    return BitsSignal.concat(list(reversed(list(fields.values()))))


def unpack(word, widths: dict[str, int]) -> dict:
    """The fields of a word :func:`pack` made (``widths``: name -> width, in pack's order)."""
    out, lo = {}, 0
    for name, width in widths.items():
        out[name] = word[lo:lo + width]
        lo += width
    if lo != word.type.width:
        raise ValueError(f"unpack: the fields take {lo} bits of a {word.type.width}-bit word")
    return out


def module(name: str, ports: dict, build) -> type[Module]:
    """A PyCDE module class with ``ports`` and the generator ``build``, named ``name``."""
    cls = type(name, (Module,), {**ports, "build": generator(build)})
    return name_module(cls, name)
