"""A cocotb watchdog for valid/ready streams: a stalled simulation ends with the stream's name.

``Watchdog(clk, {"a": (dut.a_valid, dut.a_ready), ...}, stall_cycles=N, idle_cycles=M)``
samples every stream on each rising edge (in the ReadOnly phase, i.e. what the edge takes) and
trips when

* a stream has had ``valid`` high and ``ready`` low on ``stall_cycles`` edges since its last
  beat (its consumer stopped; the edges need not be consecutive, so a producer that drops
  ``valid`` now and then is still caught): ``stream 'a' stalled: valid high, ready low for N
  cycles since its last beat``; or
* no beat (``valid & ready``) moved on any watched stream for ``idle_cycles`` edges (a deadlock
  or a producer that stopped): ``no beat moved on any stream for M cycles``, followed by the
  last stream that moved and when, and the valid/ready state of each stream now (a stream
  whose consumer is waiting, ready high and valid low, is one whose producer stopped).

Use either

* ``wd.start()``: a background task; when it trips it raises :class:`StallError`, which ends
  the cocotb test with that message (cocotb 2 fails a test whose task raised), instead of the
  simulation hanging until a global timeout; call ``wd.stop()`` when the guarded part is done
  (e.g. before a deliberately idle phase); or
* ``await wd.watch(coro)``: runs ``coro`` and returns its result, or raises StallError as soon
  as the watchdog trips (the coroutine is cancelled).

``idle_cycles=None`` turns the idle check off; ``stall_cycles=None`` the stall check.
Signals that are X/Z count as 0. After a trip, ``wd.tripped`` holds the error.
"""

from __future__ import annotations

from typing import Any, Awaitable, Mapping, Sequence

import cocotb
from cocotb.handle import SimHandleBase
from cocotb.triggers import ReadOnly, RisingEdge


class StallError(AssertionError):
    """A watched stream stopped; the message names it."""


def _bit(h: SimHandleBase) -> int:
    try:
        return int(h.value)
    except (ValueError, TypeError):
        return 0


class Watchdog:
    def __init__(self, clk: SimHandleBase,
                 streams: Mapping[str, Sequence[SimHandleBase]], *,
                 stall_cycles: int | None = 1000, idle_cycles: int | None = None,
                 name: str = "watchdog"):
        if not streams:
            raise ValueError("watchdog: no stream to watch")
        if stall_cycles is None and idle_cycles is None:
            raise ValueError("watchdog: give stall_cycles or idle_cycles")
        self.clk = clk
        self.streams = {k: (v[0], v[1]) for k, v in streams.items()}
        self.stall_cycles, self.idle_cycles = stall_cycles, idle_cycles
        self.name = name
        self.cycle = 0
        self.beats = {k: 0 for k in self.streams}
        self.last_move: tuple[str, int] | None = None
        self._waiting = {k: 0 for k in self.streams}
        self._idle = 0
        self._task = None
        self.tripped: StallError | None = None

    def _state(self) -> str:
        parts = []
        for k, (v, r) in self.streams.items():
            vv, rr = _bit(v), _bit(r)
            what = ("waiting for ready" if vv and not rr else
                    "waiting for valid" if rr and not vv else
                    "moving" if vv and rr else "idle")
            parts.append(f"{k}: valid={vv} ready={rr} ({what}, {self.beats[k]} beats)")
        return "; ".join(parts)

    async def _run(self) -> None:
        # Values settled in the ReadOnly phase are what the next rising edge takes, so the
        # first sample comes before the first edge (a beat offered right away is counted).
        while True:
            await ReadOnly()
            self.cycle += 1
            moved = False
            for k, (v, r) in self.streams.items():
                vv, rr = _bit(v), _bit(r)
                if vv and rr:
                    moved = True
                    self.beats[k] += 1
                    self.last_move = (k, self.cycle)
                # cycles offered and refused since the stream's last beat (a producer may
                # drop valid between offers, as the random-gate drivers do)
                self._waiting[k] = 0 if vv and rr else self._waiting[k] + int(bool(vv))
            self._idle = 0 if moved else self._idle + 1
            if self.stall_cycles is not None:
                stalled = [k for k, n in self._waiting.items() if n >= self.stall_cycles]
                if stalled:
                    k = max(stalled, key=lambda s: self._waiting[s])
                    self._trip(f"{self.name}: stream '{k}' stalled: valid high, ready low for "
                               f"{self._waiting[k]} cycles since its last beat (cycle {self.cycle}); "
                               f"{self._state()}")
            if self.idle_cycles is not None and self._idle >= self.idle_cycles:
                last = (f"last beat on stream '{self.last_move[0]}' at cycle {self.last_move[1]}"
                        if self.last_move else "no beat ever moved")
                self._trip(f"{self.name}: no beat moved on any stream for {self._idle} cycles "
                           f"(cycle {self.cycle}); {last}; {self._state()}")
            await RisingEdge(self.clk)

    def _trip(self, msg: str) -> None:
        self.tripped = StallError(msg)
        raise self.tripped

    def start(self) -> "Watchdog":
        """Watch in the background; a trip raises StallError, which fails the running test."""
        if self._task is None:
            self._task = cocotb.start_soon(self._run())
        return self

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def watch(self, coro: Awaitable[Any]) -> Any:
        """Run ``coro``; return its result, or raise StallError when the watchdog trips first."""
        job = cocotb.start_soon(coro)
        dog = cocotb.start_soon(self._guard(job))
        try:
            result = await job
        except BaseException:
            if self.tripped is not None:
                raise self.tripped from None
            dog.cancel()
            raise
        dog.cancel()
        return result

    async def _guard(self, job) -> None:
        try:
            await self._run()
        except StallError:
            job.cancel()
