"""The matmul unit: the operand scratchpads, EXEC and the systolic core's admission.

* :class:`Spad`: two banks per operand passed producer -> consumer by COMMIT (1 cycle after a
  LOAD's last beat) and back by release (1 cycle after the EXEC's last read).
* :class:`MatmulUnit`: one operand beat per cycle once both banks are committed, against
  ``EXEC_CREDITS`` beats of credit to the core (a beat enters the core ``ISSUE_TO_CORE`` cycles
  after its read); the next EXEC starts the cycle its predecessor's last read issues. The core
  takes one beat per cycle; a tile's last beat is admitted ``rows`` cycles after the previous
  tile's at the earliest and only with room for ``rows`` rows in the output FIFO (an EXEC with
  CHAIN marks no last beat: a CHAIN run is one tile of the summed K); its results
  leave ``rows + cols + 4`` cycles after its last beat, one row per cycle, to the store engine.
"""

from __future__ import annotations

from collections import deque

from ..contract import DST_A, DST_B, EXEC_CHAIN, EXEC_CREDITS, EXEC_REL_A, EXEC_REL_B
from .timing import CORE_RESULT_EXTRA


class Spad:
    """Two banks passed producer -> consumer by commit and back by release."""

    __slots__ = ("full", "pending")

    def __init__(self):
        self.full = 0
        self.pending = []  # (time, delta)

    def tick(self, now) -> None:
        if self.pending:
            keep = []
            for tt, d in self.pending:
                if tt <= now:
                    self.full += d
                else:
                    keep.append((tt, d))
            self.pending = keep


class MatmulUnit:
    __slots__ = ("cmds", "R", "C", "out_fifo", "issue_to_core", "q", "spad", "banks", "active",
                 "beats", "last", "credit_used", "prev_last", "out_rows", "out_held")

    def __init__(self, cmds, rows: int, cols: int, queue: deque):
        from ..rtl_lib.matmul_unit import ISSUE_TO_CORE
        from ..rtl_lib.systolic import out_fifo_depth

        self.cmds, self.R, self.C = cmds, rows, cols
        self.out_fifo = out_fifo_depth(rows, cols)
        self.issue_to_core = ISSUE_TO_CORE
        self.q = queue                          # the EXEC FIFO (Dispatch.engq[1])
        self.spad = {DST_A: Spad(), DST_B: Spad()}
        self.banks = (self.spad[DST_A], self.spad[DST_B])
        self.active = None        # [reads left, flags]
        self.beats = deque()      # times beats reach the core input (issue + ISSUE_TO_CORE)
        self.last = deque()       # flags: is this beat a tile's last
        self.credit_used = 0
        self.prev_last = -float("inf")
        self.out_rows = deque()   # times rows of C become valid in the output FIFO
        self.out_held = 0         # rows reserved in the output FIFO

    def tick(self, t) -> None:
        a, b = self.banks
        if a.pending:
            a.tick(t)
        if b.pending:
            b.tick(t)

    def _take(self) -> None:
        c = self.cmds[self.q.popleft()[1]]
        self.active = [c.K, c.flags]

    def exec_step(self, t) -> bool:
        """EXEC: operand reads into the core."""
        q = self.q
        if self.active is None:
            if q and q[0][0] <= t:
                self._take()
                return True
            return False
        a, b = self.spad[DST_A], self.spad[DST_B]
        if a.full > 0 and b.full > 0 and self.credit_used < EXEC_CREDITS:
            act = self.active
            act[0] -= 1
            self.credit_used += 1
            self.beats.append(t + self.issue_to_core)
            self.last.append(act[0] == 0 and not act[1] & EXEC_CHAIN)   # CHAIN: the tile goes on
            if act[0] == 0:
                if act[1] & EXEC_REL_A:
                    a.pending.append((t + 1, -1))
                if act[1] & EXEC_REL_B:
                    b.pending.append((t + 1, -1))
                self.active = None
                if q and q[0][0] <= t:
                    self._take()
            return True
        return False

    def core_step(self, t) -> bool:
        """The core input: one beat per cycle; a tile's last beat waits for admission."""
        if not (self.beats and self.beats[0] <= t):
            return False
        R = self.R
        if self.last[0] and not (t - self.prev_last >= R and self.out_held + R <= self.out_fifo):
            return False
        self.beats.popleft()
        self.credit_used -= 1
        if self.last.popleft():
            self.prev_last = t
            self.out_held += R
            first = t + R + self.C + CORE_RESULT_EXTRA
            self.out_rows.extend(first + r for r in range(R))
        return True

    def idle(self) -> bool:
        return self.active is None and not self.beats and not self.out_rows

    def wakes(self, out: list) -> None:
        if self.beats:
            out.append(self.beats[0])
            out.append(self.prev_last + self.R)
        for sp in self.spad.values():
            out.extend(tt for tt, _ in sp.pending)
