"""cocotb drivers and monitors for valid/ready streams, with seeded random back-pressure.

A beat moves on a rising edge where valid and ready are both high (AXI-Stream rules: a source
holds its beat until it is taken; ``ready`` may depend on ``valid``). Every beat is recorded
with the index of the edge it moved on (edges counted from the clock's start, see
:func:`edge_index`), so tests can check cycle counts exactly.

* :class:`RandomGate`: a seeded random on/off pattern (probability ``p`` of on per cycle;
  ``p=1`` is always on), used for ``valid`` of drivers and ``ready`` of sinks.
* :class:`StreamDriver`: drives beats (dicts of field -> int) onto a stream.
* :class:`StreamSink`: takes beats from a stream with a random ``ready``.
* :class:`StreamMonitor`: passive, records every beat that moves (drives nothing).

Fields are given as ``{"data": dut.a_data, "last": dut.a_last}``; valid/ready as handles.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Mapping, Sequence

from cocotb.handle import SimHandleBase
from cocotb.simtime import get_sim_time
from cocotb.triggers import ReadOnly, RisingEdge


class RandomGate:
    """A seeded random on/off sequence: ``next()`` is True with probability ``p``."""

    def __init__(self, p: float = 1.0, seed: int | None = 0):
        if not 0.0 < p <= 1.0:
            raise ValueError(f"p must be in (0, 1], got {p}")
        self.p = p
        self._rng = random.Random(seed)

    def next(self) -> bool:
        return self.p >= 1.0 or self._rng.random() < self.p


def edge_index(period_ns: float) -> int:
    """Index of the current rising edge for a clock of ``period_ns`` started at time 0."""
    return int(round(get_sim_time("ns") / period_ns))


@dataclass
class Beat:
    """A beat that moved: its fields and the edge index it moved on."""

    fields: dict[str, int]
    edge: int


def _read(handle: SimHandleBase) -> int:
    v = handle.value
    try:
        return v.to_unsigned()
    except AttributeError:
        return int(v)


class StreamDriver:
    """Drive beats onto a valid/ready stream, ``valid`` gated by a :class:`RandomGate`."""

    def __init__(self, clk: SimHandleBase, fields: Mapping[str, SimHandleBase],
                 valid: SimHandleBase, ready: SimHandleBase, period_ns: float,
                 gate: RandomGate | None = None):
        self.clk, self.fields, self.valid, self.ready = clk, dict(fields), valid, ready
        self.period_ns = period_ns
        self.gate = gate or RandomGate(1.0)
        self.queue: deque[dict[str, int]] = deque()
        self.sent: list[Beat] = []
        self.valid.value = 0

    def idle(self) -> bool:
        return not self.queue

    async def send(self, beats: Sequence[Mapping[str, int]]) -> None:
        """Queue ``beats`` and drive them; returns when all have been taken.

        Call right after a rising edge (e.g. after ``await RisingEdge(clk)``).
        """
        self.queue.extend(dict(b) for b in beats)
        while self.queue:
            beat = self.queue[0]
            on = self.gate.next()
            if on:
                for k, h in self.fields.items():
                    h.value = beat[k]
            self.valid.value = int(on)
            await ReadOnly()
            moved = on and _read(self.ready) == 1
            await RisingEdge(self.clk)
            if moved:
                self.sent.append(Beat(self.queue.popleft(), edge_index(self.period_ns)))
        self.valid.value = 0


class StreamSink:
    """Take beats from a valid/ready stream, ``ready`` gated by a :class:`RandomGate`."""

    def __init__(self, clk: SimHandleBase, fields: Mapping[str, SimHandleBase],
                 valid: SimHandleBase, ready: SimHandleBase, period_ns: float,
                 gate: RandomGate | None = None):
        self.clk, self.fields, self.valid, self.ready = clk, dict(fields), valid, ready
        self.period_ns = period_ns
        self.gate = gate or RandomGate(1.0)
        self.received: list[Beat] = []
        self.ready.value = 0

    async def receive(self, n: int) -> list[Beat]:
        """Take ``n`` beats; return them. Call right after a rising edge."""
        got: list[Beat] = []
        while len(got) < n:
            on = self.gate.next()
            self.ready.value = int(on)
            await ReadOnly()
            beat = None
            if on and _read(self.valid) == 1:
                beat = {k: _read(h) for k, h in self.fields.items()}
            await RisingEdge(self.clk)
            if beat is not None:
                b = Beat(beat, edge_index(self.period_ns))
                got.append(b)
                self.received.append(b)
        self.ready.value = 0
        return got


class StreamMonitor:
    """Record every beat that moves on a stream (valid and ready high at a rising edge).

    Passive: drives nothing, so it can watch a stream between two DUT blocks. Start it with
    ``cocotb.start_soon(mon.run())``; beats collect in ``mon.beats``.
    """

    def __init__(self, clk: SimHandleBase, fields: Mapping[str, SimHandleBase],
                 valid: SimHandleBase, ready: SimHandleBase, period_ns: float):
        self.clk, self.fields, self.valid, self.ready = clk, dict(fields), valid, ready
        self.period_ns = period_ns
        self.beats: list[Beat] = []

    async def run(self) -> None:
        while True:
            await ReadOnly()
            beat = None
            if _read(self.valid) == 1 and _read(self.ready) == 1:
                beat = {k: _read(h) for k, h in self.fields.items()}
            await RisingEdge(self.clk)
            if beat is not None:
                self.beats.append(Beat(beat, edge_index(self.period_ns)))
