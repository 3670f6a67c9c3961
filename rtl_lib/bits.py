"""Bit-width arithmetic shared by the rtl_lib generators: widths of counters and addresses, and
fixed-width unsigned arithmetic on PyCDE ``Bits`` signals.

Widths (Python ints): ``log2(n)``: address bits of ``n`` entries (ceil(log2 n); 0 for n = 1);
``index_width(n)``: the same, at least 1 (a register that indexes ``n`` things);
``count_width(n)``: bits that hold the value ``n`` itself (at least 1).

Signals: every function returns ``Bits`` of the width it is given and wraps (two's complement):
``add(a, b, w)``, ``sub(a, b, w)``, ``inc(sig, w=None, by=1)`` (``w`` defaults to ``sig``'s
width), ``resize(sig, w)`` (zero-extend or truncate), ``shl(sig, n, w)`` (``sig << n`` for a
constant ``n``), ``up_down(q, up, down, w)`` (a counter's next value).
"""

from __future__ import annotations

from pycde.signals import BitsSignal
from pycde.types import Bits


def log2(n: int) -> int:
    """ceil(log2(n)): the address bits of ``n`` entries (0 for ``n == 1``)."""
    return (n - 1).bit_length()


def index_width(n: int) -> int:
    """The width of a register that indexes ``n`` things: ``log2(n)``, at least 1."""
    return max(1, log2(n))


def count_width(n: int) -> int:
    """The width of a register that holds the value ``n``, at least 1."""
    return max(1, int(n).bit_length())


def add(a, b, w: int):
    """``a + b`` in ``w`` bits."""
    return (a.as_uint(w) + b.as_uint(w)).as_bits(w)


def sub(a, b, w: int):
    """``a - b`` in ``w`` bits."""
    return (a.as_uint(w) - b.as_uint(w)).as_bits(w)


def inc(sig, w: int | None = None, by: int = 1):
    """``sig + by`` in ``w`` bits (default: the width of ``sig``)."""
    w = sig.type.width if w is None else w
    return (sig.as_uint(w) + by).as_bits(w)


def resize(sig, w: int):
    """``sig`` zero-extended or truncated to ``w`` bits."""
    sw = sig.type.width
    if sw == w:
        return sig
    if sw > w:
        return sig[0:w]
    return BitsSignal.concat([Bits(w - sw)(0), sig])


def shl(sig, n: int, w: int):
    """``sig << n`` (``n`` a constant) in ``w`` bits."""
    if n == 0:
        return resize(sig, w)
    return resize(BitsSignal.concat([sig, Bits(n)(0)]), w)


def up_down(q, up, down, w: int | None = None):
    """The next value of a counter ``q`` that goes up by one on ``up`` and down by one on
    ``down`` (both: unchanged), in ``w`` bits. ``q + 1`` and ``q - 1`` are computed from
    ``q`` alone and ``up`` / ``down`` select last, so late enables reach the register through
    muxes, not through a carry chain (an enable -> mux -> decrement was the placed 8x8's
    critical path in the vector engine's reads-in-flight count)."""
    from pycde.constructs import Mux

    w = q.type.width if w is None else w
    return Mux(up, Mux(down, q, (q.as_uint(w) - 1).as_bits(w)), Mux(down, inc(q, w), q))
