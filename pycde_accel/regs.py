"""Registers shared by the PyCDE modules of ``rtl_lib`` and the kernels' stream wrappers of
``lowering`` (neither imports the other): a register with an exact SV name (``NamedReg``) and
three full-rate slices with one handshake: ``register_slice``, ``fifo_slice`` (the receiver's
ready reaches no data enable) and ``held_slice`` (also holds the last beat taken); and
``thermometer_step``, the next value of a count kept as a thermometer code."""

from __future__ import annotations

from pycde.constructs import Wire
from pycde.types import Bits


class NamedReg:
    """A register whose SV name is exactly ``name`` (PyCDE's ``Reg`` appends ``__reg1``).

    ``r = NamedReg(Bits(8), clk, rst, 0, "count")``; read ``r.q``; assign ``r.next(value)`` once.
    """

    def __init__(self, width: int, clk, rst=None, rst_value: int | None = None, ce=None,
                 name: str = "r"):
        self._d = Wire(Bits(width), f"{name}_next")
        if rst is not None and rst_value is None:
            rst_value = 0
        self.q = self._d.reg(clk, rst, rst_value=rst_value, ce=ce, name=name)

    def next(self, value) -> None:
        self._d.assign(value)


def thermometer_step(bits, up, down) -> list:
    """The next value, bit by bit, of a count kept as a thermometer code (``bits[k]``: the
    count is more than k): shifted up on ``up`` alone, down on ``down`` alone, held otherwise
    (``up`` and ``down`` together, or neither). Each bit is a mux of itself and its two
    neighbours, so "more than k after the edge" is one LUT of flops and the two events, not
    an add and a compare."""
    from pycde.constructs import Mux

    n = len(bits)
    one, zero = Bits(1)(1), Bits(1)(0)
    return [Mux(down, Mux(up, bits[k], bits[k - 1] if k > 0 else one),
                bits[k + 1] if k + 1 < n else zero) for k in range(n)]


def register_slice(clk, rst, valid, data, ready, name: str, next_valid: bool = False,
                   next_data: bool = False):
    """A full-rate valid/ready register slice (2-entry skid buffer) between a sender
    (``valid``, ``data``) and a receiver (``ready``): returns ``(out_valid, out_data,
    in_ready)``. ``out_valid``/``out_data`` and ``in_ready`` are registers, so neither the
    sender's logic nor the receiver's reaches the other side in one cycle. Latency 1 (a beat
    taken on edge e is offered after e), 1 beat per cycle, order kept. Registers
    ``{name}_v``/``{name}_d`` (the output) and ``{name}_skid_v``/``{name}_skid_d``.

    ``next_valid=True`` also returns ``out_valid``'s next value (a 4-tuple): a receiver that
    joins several slices can register the AND of their valids, so that its own decisions start
    at one flop instead of an AND tree of the slices' flops.

    ``next_data=True`` also returns ``(load, entering)`` after those: ``load`` is high on an
    edge where the output register loads (it is empty or taken) and ``entering`` is what it
    loads (the skid's beat if one is held, else ``data``). A receiver can keep a register of
    its own about the head (a decision it would otherwise decode from ``out_data``) that
    takes its value from ``entering`` on ``load``."""
    from pycde.constructs import Mux

    w = data.type.width
    main_v = NamedReg(1, clk, rst, 0, name=f"{name}_v")
    skid_v = NamedReg(1, clk, rst, 0, name=f"{name}_skid_v")
    in_ready = ~skid_v.q
    load = ~main_v.q | ready                     # the output register is empty or taken
    skid_d = NamedReg(w, clk, None, None, ce=in_ready, name=f"{name}_skid_d")
    skid_d.next(data)
    main_d = NamedReg(w, clk, None, None, ce=load, name=f"{name}_d")
    entering = Mux(skid_v.q, data, skid_d.q)
    main_d.next(entering)
    main_v_next = Mux(load, main_v.q, skid_v.q | valid)
    main_v.next(main_v_next)
    skid_v.next(Mux(load, skid_v.q | (valid & in_ready), Bits(1)(0)))
    out = (main_v.q, main_d.q, in_ready)
    if next_valid:
        out += (main_v_next,)
    if next_data:
        out += (load, entering)
    return out


def _fill_flags(clk, rst, valid, ready, name: str):
    """The fill of a 2-beat slice as two flops, ``{name}_v`` (not empty) and ``{name}_full``:
    returns ``(nonempty, in_ready, push, pop, full)``, with ``push = valid & in_ready`` and
    ``pop = nonempty & ready``; ``in_ready`` is ``~full``, a flop."""
    from pycde.constructs import Mux

    nonempty = NamedReg(1, clk, rst, 0, name=f"{name}_v")
    full = NamedReg(1, clk, rst, 0, name=f"{name}_full")
    in_ready = ~full.q
    push = valid & in_ready
    pop = nonempty.q & ready
    # fill after the edge: 2 if full and no pop, or one held, a push and no pop; 0 if one
    # held (not full), a pop and no push, or none held and no push
    full.next((full.q & ~pop) | (nonempty.q & ~full.q & push & ~pop))
    nonempty.next(Mux(nonempty.q, push, ~(~full.q & pop & ~push)))
    return nonempty.q, in_ready, push, pop, full.q


def fifo_slice(clk, rst, valid, data, ready, name: str, chunk: int | None = None,
               toggles=None, hot: tuple[int, int] | None = None, gate: list | None = None):
    """The handshake of :func:`register_slice` (``(out_valid, out_data, in_ready)``, latency 1,
    1 beat per cycle, order kept, ``in_ready`` high while it holds fewer than 2 beats at the
    cycle's start) built as a 2-slot FIFO, so that the receiver's ``ready`` reaches only its
    pointer and fill flops, never the data registers' enables: a slot loads on ``valid &
    in_ready`` with the write pointer on it (flops of the sender's side), and ``out_data`` is
    the slot under the read pointer (one mux after the flops). For a wide slice whose
    receivers' readies come from across the die. Registers ``{name}_slot0``/``{name}_slot1``,
    ``{name}_wr``/``{name}_rd`` (pointers), ``{name}_v`` (not empty) and ``{name}_full``.

    ``chunk`` and ``toggles`` (``toggles(clk, rst, flip, n, name)`` -> ``n`` copies of a
    register that flips on ``flip``, which synthesis keeps apart, ``rtl_lib.keep_ff.toggles``):
    the output mux of every ``chunk`` data bits has a read pointer copy of its own
    (``{name}_rd_<i>``, each with its next value beside it), so no pointer drives more than
    ``chunk`` mux selects (one pointer before the whole output was a net of ~200 loads).

    ``hot`` = ``(lo, n)``: ``data[lo:lo + n]`` is a one-hot field (a destination): a 4th
    output, ``head_hot``, is that field of the beat offered, all zero while none is, from
    flops of its own (``{name}_hot``): a receiver's valid and a ready that depends on the
    destination (``ready = OR(head_hot[d] & ready_d)``) then start at flops, not at the
    slot mux. ``ready`` selects between the two next values last.

    ``gate`` (with ``hot``): ``n`` signals, each the next value of a condition of its own (the
    receiver's "may take a beat of destination d" for the next cycle): ``head_hot[d]`` is then
    the field bit AND gate d as it was on the previous edge, one flop each
    (``{name}_go``, the field's own flops ``{name}_hot`` kept for a head that stays), so a
    ready ``OR(head_hot[d] & ok_d)`` whose ``ok_d`` flops were set from those next values is
    ``OR(head_hot[d])``: an OR of flops, with no AND beside it."""
    from pycde.constructs import Mux
    from pycde.signals import BitsSignal

    w = data.type.width
    wr = NamedReg(1, clk, rst, 0, name=f"{name}_wr")
    rd = NamedReg(1, clk, rst, 0, name=f"{name}_rd")
    nonempty, in_ready, push, pop, full_q = _fill_flags(clk, rst, valid, ready, name)
    slots = []
    for i in range(2):
        s = NamedReg(w, clk, None, None, ce=push & (wr.q == Bits(1)(i)), name=f"{name}_slot{i}")
        s.next(data)
        slots.append(s.q)
    wr.next(Mux(push, wr.q, ~wr.q))
    rd.next(Mux(pop, rd.q, ~rd.q))
    extra = ()
    if hot is not None:
        lo, n = hot
        hot_q = NamedReg(n, clk, rst, 0, name=f"{name}_hot")
        none = Bits(n)(0)
        entering = Mux(push, none, data[lo:lo + n])
        other = Mux(rd.q, slots[1][lo:lo + n], slots[0][lo:lo + n])   # the slot not offered
        # no pop: the head stays, or (none held) the beat entering; a pop: the other slot's
        # beat if both were held, else the beat entering
        hot_next = Mux(pop, Mux(nonempty, entering, hot_q.q), Mux(full_q, entering, other))
        hot_q.next(hot_next)
        extra = (hot_q.q,)
        if gate is not None:
            assert len(gate) == n
            go = NamedReg(n, clk, rst, 0, name=f"{name}_go")
            go.next(hot_next & BitsSignal.concat(list(reversed(gate))))
            extra = (go.q,)
    if chunk is None or toggles is None or w <= chunk:
        return (nonempty, Mux(rd.q, *slots), in_ready) + extra

    bounds = [(lo, min(lo + chunk, w)) for lo in range(0, w, chunk)]
    # (``rd`` itself stays: it feeds the one-hot head's other-slot mux, or nothing)
    rds = toggles(clk, rst, pop, len(bounds), f"{name}_rd")
    parts = [Mux(r, slots[0][lo:hi], slots[1][lo:hi]) for r, (lo, hi) in zip(rds, bounds)]
    return (nonempty, BitsSignal.concat(list(reversed(parts))), in_ready) + extra


def held_slice(clk, rst, valid, data, ready, name: str):
    """The handshake of :func:`register_slice` (latency 1, 1 beat per cycle, order kept,
    ``in_ready`` a flop: high while it holds fewer than 2 beats not yet taken) that also holds
    the last beat taken (``held``) until the next is: returns ``(out_valid, in_ready,
    held)``. The same as a register slice followed by a register loaded on ``out_valid &
    ready``, with the receiver's ``ready`` reaching only pointer and fill flops, never the data
    registers' enables: a 3-slot ring whose slots load on ``valid & in_ready`` (the sender's
    side) and ``held`` is the slot under the taken pointer (one mux after the flops).

    For a receiver that decides late to take the next beat and then uses its data for a while
    (a kernel's scalars for a run: the run's last element decides the take). Registers
    ``{name}_slot0..2``, ``{name}_wr``/``{name}_held`` (one-hot pointers), ``{name}_v`` (a
    beat waits) and ``{name}_full`` (two wait). ``held`` is undefined until the first take."""
    from pycde.constructs import Mux

    ring = Ring3(clk, rst, name)
    held = NamedReg(3, clk, rst, 0b100, name=f"{name}_held")   # the slot before slot 0
    # the waiting beats (0, 1 or 2) as fifo_slice counts them, with take as its pop
    nonempty, in_ready, push, take, _ = _fill_flags(clk, rst, valid, ready, name)
    slots = ring.load(data, push)
    held.next(Mux(take, held.q, rotate3(held.q)))
    return nonempty, in_ready, pick3(held.q, slots)


def rotate3(oh):
    """A one-hot pointer over 3 slots, advanced: bit i -> bit i + 1 (mod 3)."""
    from pycde.signals import BitsSignal

    return BitsSignal.concat([oh[1], oh[0], oh[2]])


def pick3(oh, slots):
    """The slot a one-hot pointer over 3 slots points at (one mux level after the flops)."""
    from pycde.constructs import Mux

    return Mux(oh[1], Mux(oh[0], slots[2], slots[0]), slots[1])


class Ring3:
    """The 3 data slots of a ring (registers ``{name}_slot0..2``, no reset) and its one-hot
    write pointer (``{name}_wr``, from slot 0, made first): :meth:`load` on ``push`` loads
    ``data`` into the slot under the pointer and advances it, so each slot's enable is the
    push and one pointer bit (the sender's side); read the slots with :func:`pick3`."""

    def __init__(self, clk, rst, name: str):
        self.clk, self.name = clk, name
        self.wr = NamedReg(3, clk, rst, 0b001, name=f"{name}_wr")

    def load(self, data, push, free=None) -> list:
        """The slots' outputs (call once). ``free`` (optional, made of flops): high when the
        slot under the pointer holds no beat. Then that slot takes ``data`` on every edge
        while it is free, and a push keeps it by moving the pointer on, so a slot's enable
        is one pointer bit and ``free``, with no push (the sender's valid, from across the
        die) in it."""
        from pycde.constructs import Mux

        slots = []
        for i in range(3):
            en = (free if free is not None else push) & self.wr.q[i]
            s = NamedReg(data.type.width, self.clk, None, None, ce=en,
                         name=f"{self.name}_slot{i}")
            s.next(data)
            slots.append(s.q)
        self.wr.next(Mux(push, self.wr.q, rotate3(self.wr.q)))
        return slots
