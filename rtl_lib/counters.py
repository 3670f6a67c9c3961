"""The accelerator top's status, events and performance counters: what its read-only and
sticky CSRs show (built inside the top's generator; ``accel`` composes it).

``StatusCounters(csr_map)``, then ``.run_flag(clk, rst)``, ``.finish(...)``, ``.close(...)``
-----------------------------------------------------------------------------------------------
* ``csr_ports()``: the CSR block's inputs, one wire per ``ro`` register of ``csr_map``
  (``status``, ``hw_info``, ``perf_*``, each its register's width and name) and the ``w1c``
  register's ``events_set``; ``csr[name]`` is the wire of register ``name``.
* ``run_flag(clk, rst)``: the ``running`` register (``status.busy``): set by ``start``,
  cleared on the edge where the top is idle (``finish``).
* ``finish(clk, rst, start, idle)``: ``idle`` maps a group name to its part of the top's
  all-idle condition (their AND holds once it holds, until the next ``start``); each part is
  registered (``idle_<group>_q``) and ``idle_q``, their AND, is the whole condition one edge
  late, so ``finish = running & idle_q & ~start`` (the ``done`` event) ends the run one edge
  after the top went idle.
* ``close(clk, rst, start, errors, perf)``: ``errors`` maps each error bit (a power of two,
  the ``ERR_*`` of ``accel``) to its source; ``perf`` lists ``(register name, increment,
  amount)`` per counter. Then:

  - ``events_set`` = {any error this cycle, ``finish``} (the
    ``events`` register is sticky: ``done`` and ``error`` stay until the host clears them);
  - ``status`` = {``err_code`` (8 bits: the errors since ``start``, sticky, register
    ``err_code``), 0, ``running``};
  - each performance counter (32 bits, a register of the counter's name) is cleared by
    ``start`` and adds ``amount`` for every cycle its increment is high while running (not
    the ``start`` cycle), one edge later (the increment is registered, ``{name}_hit``), so
    from one cycle after ``done`` it holds the run's figure; ``perf_q[name]`` is its register
    (the stamps').
"""

from __future__ import annotations

from pycde.constructs import Mux, Wire
from pycde.signals import BitsSignal
from pycde.types import Bits

from .common import NamedReg

ERR_BITS = 8


def _bit_vector(bits: dict, width: int):
    """``width`` bits with ``bits[1 << i]`` at bit i and 0 elsewhere (runs of zero bits as one
    constant)."""
    parts, zeros = [], 0
    for i in reversed(range(width)):
        sig = bits.get(1 << i)
        if sig is None:
            zeros += 1
            continue
        if zeros:
            parts.append(Bits(zeros)(0))
            zeros = 0
        parts.append(sig)
    if zeros:
        parts.append(Bits(zeros)(0))
    return BitsSignal.concat(parts)


class StatusCounters:
    """Status, events and performance counters (see the module docstring)."""

    def __init__(self, csr_map):
        self.csr = {r.name: Wire(Bits(r.width), r.name) for r in csr_map.regs
                    if r.access == "ro"}
        (events,) = (r for r in csr_map.regs if r.access == "w1c")
        self.events_set = Wire(Bits(events.width), f"{events.name}_set")

    def csr_ports(self) -> dict:
        return {self.events_set.name: self.events_set, **self.csr}

    def run_flag(self, clk, rst):
        """The ``running`` register."""
        self._running = NamedReg(1, clk, rst, 0, name="running")
        return self._running.q

    def finish(self, clk, rst, start, idle: dict):
        """``running`` ends on the edge after the one where the top was idle (every part of
        ``idle``, a dict group name -> condition); returns ``finish``. The idle condition is
        an AND of every engine's state, spread over the die; registered, it is flops next to
        ``running`` (the store head's FIFO -> the write side's idle -> ``running`` was the
        placed 8x8's critical path on seed 2 at f317b6c). Sound because idle holds until a
        start: nothing moves without a command. Each group is registered on its own, so no
        AND of the whole die sits before one flop (the store queue's ``fifo_empty`` -> two
        LUTs -> a 3.22 ns route -> the AND -> ``idle_q`` was the placed 8x8's fourth path on
        seed 1 at fc1165b, 7.89 ns); their AND is the same value as registering the whole."""
        running = self._running
        idle_q = None
        for name, cond in idle.items():
            q = cond.reg(clk, rst, rst_value=0, name=f"idle_{name}_q")
            idle_q = q if idle_q is None else idle_q & q
        self._finish = finish = running.q & idle_q & ~start
        running.next(Mux(start, Mux(finish, running.q, Bits(1)(0)), Bits(1)(1)))
        return finish

    def close(self, clk, rst, start, errors: dict, perf):
        running, finish = self._running, self._finish
        err_code = _bit_vector(errors, ERR_BITS)
        err_sticky = NamedReg(ERR_BITS, clk, rst, 0, name="err_code")
        err_sticky.next(Mux(start, err_sticky.q | err_code, Bits(ERR_BITS)(0)))
        self.csr["status"].assign(BitsSignal.concat([err_sticky.q, Bits(7)(0), running.q]))
        self.events_set.assign(BitsSignal.concat([err_code != Bits(ERR_BITS)(0), finish]))
        self.perf_q = {}
        for name, inc, amount in perf:
            r = NamedReg(32, clk, rst, 0, name=name)
            self.perf_q[name] = r.q
            # the increment is registered before the adder (the engines' handshakes, e.g.
            # the core's admission behind perf_stall, are a cycle away from the CSR block)
            hit = (inc & running.q & ~start).reg(clk, rst, rst_value=0, name=f"{name}_hit")
            nxt = Mux(hit, r.q, (r.q.as_uint(32) + amount).as_bits(32))
            r.next(Mux(start, nxt, Bits(32)(0)))
            self.csr[name].assign(r.q)
