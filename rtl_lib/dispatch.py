"""The accelerator top's in-order dispatch: the command FIFO's head -> four engine FIFOs
(built inside the top's generator; ``accel`` composes it), and the command field accessors.

``CommandQueue(cmd_bits, depth, clk, rst, decode, decoders)``
------------------------------------------------------------
The command FIFO (a ``queue.Queue`` named ``cmdq``, ``depth`` commands) with each command's
dispatch decode (:class:`Decode`) stored beside it: ``push(cmd, en)`` decodes on the way in (the
read router's command packer, a register, feeds it), so the head's decode bits are read from
the LUT-RAM like the command itself. Decoding the head after the LUT-RAM read (8-bit opcode
compares into the dispatch slice) was the placed 8x8's critical path on seed 3 at 45d1f20 and
on seed 1 at 541b140. ``decoders`` (engine name -> an :class:`EngineDecode`): bits an engine
wants decoded from its commands, computed here on the way in as well and carried through the
dispatch slice into that engine's queue (``EngineQueue.decoded``). Decoding them from the
dispatch slice's flops on the way into the engine's queue (the load queue's route decode:
``dispatch_head_d`` -> 16-bit compares -> a 2.85 ns route -> the load queue's LUT RAM) was the
placed 8x8's critical path on seed 2 at 3e65e81 (8.15 ns): the slice's flops fan out to all
four queues, so the decode sat far from one end or the other. ``output`` (the command),
``decoded`` (its decode bits), ``engine_decoded(e)`` (engine ``e``'s bits), ``empty``,
``full``, ``pop(en)``: the Queue's. Same latency and capacity as the Queue alone.

``Dispatcher(clk, rst, cmdq, start, credit_return, depth)``
-----------------------------------------------------------
``cmdq``: the :class:`CommandQueue`. :class:`Decode` holds the four opcodes (LOAD, EXEC,
STORE, VEC) in that order, FENCE, and the LOAD destinations of the store engine's parameter
memory (P) and of the vector engine's X buffer. A command is bits ``[0, cmd_bits)``: opcode
``[0, 8)``, flags ``[8, 16)``, a LOAD's destination ``[16, 24)``, then 32-bit words
(:func:`cmd_word`, :func:`cmd_field`).

* The FIFO's head goes through a slice: dispatch starts from flops, and the slice's input is
  the FIFO's read with no logic after it. 1 cycle from the FIFO to dispatch, one command per
  cycle. The slice is a 2-slot FIFO (``common.fifo_slice`` named ``dispatch_head``, a read
  pointer copy per ``DISPATCH_CHUNK`` bits) holding the command with its decode bits, whose
  slots load from the command FIFO's side, so the decision reaches no enable of the
  command's flops (the decision -> the enable of a register slice's data was the placed
  8x8's critical path on seed 1 at a190752, 9.72 ns, and on d3b65bf's seed 2 with nextpnr's
  placer timing weight at 40, 8.43 ns). The head's class (:class:`Decode`'s 8 one-hot class
  bits) is in flops of their own, ``dispatch_head_hot``, all zero while no head waits, and
  ANDed with each class's condition in ``dispatch_head_go`` (below): the decision is an OR
  of those 8 flops with no valid beside them. With a valid and the
  class bits from the slice's data (a register slice), the decision was 4 LUTs deep before
  the slice's flops (the placed 8x8's critical path on seed 2 at 2094307: the decode flops ->
  three LUTs of the decision with a 2.16 ns route among them -> the skid valid, 8.34 ns).
* ``queues`` (``loadq``, ``execq``, ``storeq``, ``vecq``): one :class:`EngineQueue` per engine,
  a ``queue.Queue`` of ``depth`` commands and behind it a register slice (``{engine}_head``), so
  an engine takes its command from flops and its take (``pop``) reaches only the slice: the
  FIFO's count -> empty -> the engine's intake -> the FIFO's read address was the critical
  path (83.82 MHz at 0593636) once the STORE lanes were sliced. A command reaches its engine
  2 cycles after its dispatch (1 without the slice); each queue holds ``depth`` + 2
  commands. An engine with decode bits in ``cmdq`` (its ``decoders``) stores them beside its
  commands (``EngineQueue.decoded``). The head is
  ``dispatch``-ed (pushed into its engine's FIFO) when that FIFO has
  room, or dropped when its opcode is none of the four (``bad``: the top's error bit).
* Hazards (write after read): a LOAD into P waits until every earlier STORE finished (store
  queue and its slice empty, engine idle: ``store_busy`` low), a LOAD into X until every earlier VEC did
  (``vec_busy``). The idle conditions reach dispatch a cycle late: idle in cycle t-1 with no
  command of that engine dispatched in t-1 implies idle in t (an engine turns busy only by
  taking a command from its FIFO), so a LOAD P / LOAD X goes 1 cycle after the engine is idle.
* FENCE (``fence_op``): goes to no engine; dispatched only once every earlier command has
  finished: ``drained`` (a wire the top drives: the four engine FIFOs empty, the engines
  idle, no LOAD's data still to route, the write side idle with every write response in),
  a cycle late for the same reason (nothing turns busy without a dispatch, and a cycle with a
  dispatch clears it). ``fence_go`` (out): a FENCE is dispatched on this edge (the top's
  stamp). Fetch is not held: the commands after the FENCE are fetched while it waits.
* The decision: the head's class is one of eight, one-hot in its decode bits (:class:`Decode`:
  LOAD into neither P nor X, LOAD P, LOAD X, EXEC, STORE, VEC, FENCE, bad), and each class
  but bad has a condition for such a head to go (``dispatch_ok_<class>_next``, its value for
  the next cycle): its engine queue's room (``not full``, from the Queue's ``full_next``),
  the idle condition of its hazard, ``drained``. The slice keeps the head's class AND its
  condition in flops (``dispatch_head_go``, ``fifo_slice``'s ``gate``), so the decision is an
  OR of eight flops beside the head slice, and each engine queue's push is an OR of its own
  classes' flops. The decision's inputs in three places (the head's decode, the engine
  queues' ``full`` flags beside their queues, the idle and drained registers) was the placed
  8x8's critical path on seed 1 at af39b54 (8.99 ns, 7.10 of it routing: three routes of
  1.8-1.9 ns between its LUTs); an AND-OR of the class flops and one flop per condition
  was 7193335's on seed 1 (9.02 ns, four LUTs). The same cycles as testing the queues' flags
  and the idle registers directly.
* ``credit_return`` (the fetcher's ``pop`` wire) is driven with the register
  ``credit_return_q``, set by ``dispatch``: a command's credit returns the cycle after it is
  dispatched, not when it enters the slice, so the credits cover the FIFO and the slice and
  the fetcher runs no further ahead than without the slice. The register keeps dispatch's
  decision (beside the FIFO) off the fetcher's credit adder and room compare (beside the
  read DMA): dispatch_head_d -> the decision -> the credit adder's carry chain -> the head
  slice's enable was the placed 8x8's critical path on seed 1 at a190752 (9.72 ns, 8.25 of
  it routing). A credit that returns a cycle late only delays a fetch by that cycle.
* ``store_busy``, ``vec_busy``: wires the top drives with the engines' ``busy``.
* ``dispatched`` (32 bits, register ``dispatched``): commands dispatched since ``start``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pycde.constructs import Mux, Wire
from pycde.signals import BitsSignal
from pycde.types import Bits

from ..queue import Queue
from .bits import inc
from .common import NamedReg, fifo_slice, register_slice
from .keep_ff import toggles

#: command bits whose output mux in the dispatch slice has a read pointer copy of its own
DISPATCH_CHUNK = 64


class EngineQueue:
    """One engine's command queue: a ``queue.Queue`` of ``depth`` commands, then a register slice
    named ``name`` (``common.register_slice``). The engine side has the FIFO's interface:
    ``output`` (the head, from the slice's flops), ``empty`` (no head: the slice's valid flop,
    inverted), ``pop(en)`` (the engine takes the head this cycle; ``en`` only when a head is
    there). The dispatch side: ``push(data, en)``, ``full`` (the Queue's, a flop). ``idle``: no
    command anywhere in the queue (FIFO and slice). Latency: push on edge e -> ``output`` valid
    after e + 1; one command per cycle.

    ``extra`` (optional): the width of bits decoded from each command before it reaches the
    queue (the command FIFO's ``decoders``); ``push(data, en, decoded)`` stores them beside
    the command, so the engine reads them from the slice's flops as ``decoded`` instead of
    decoding the head on its accept path."""

    def __init__(self, width: int, depth: int, clk, rst, name: str, extra: int = 0):
        self.width, self.extra = width, extra
        self.fifo = fifo = Queue(Bits(width + extra), depth, clk, rst, f"{name}_fifo")
        take = Wire(Bits(1), f"{name}_take")
        valid, out, in_ready = register_slice(clk, rst, ~fifo.empty, fifo.output, take, name)
        self.output = out[0:width]
        self.decoded = out[width:width + extra] if extra else None
        fifo_pop = ~fifo.empty & in_ready
        fifo.pop(fifo_pop)
        self._take = take
        self.empty = ~valid
        # full is the Queue's, a flop (seq.fifo's was a compare of its count, which ran into
        # dispatch's decision and from there into every queue's write enable)
        self.full = fifo.full
        self.idle = fifo.empty & ~valid              # the slice's skid entry implies valid

    def push(self, data, en, decoded=None) -> None:
        if (decoded is None) != (self.extra == 0):
            raise ValueError(f"EngineQueue: {self.extra} decode bits expected")
        if decoded is not None:
            data = BitsSignal.concat([decoded, data])
        self.fifo.push(data, en)

    def pop(self, en) -> None:
        self._take.assign(en)


@dataclass(frozen=True)
class EngineDecode:
    """Bits an engine wants decoded from its commands before they reach it: ``fn(cmd)`` gives
    ``width`` bits (see :class:`EngineQueue`)."""

    width: int
    fn: object

    def __call__(self, cmd):
        return self.fn(cmd)


def cmd_word(cmd, i: int):
    """32-bit word ``i`` of a command."""
    return cmd[32 * i:32 * (i + 1)]


def cmd_field(cmd, i: int, w: int):
    """The low ``w`` bits of word ``i`` of a command."""
    return cmd[32 * i:32 * i + w]


@dataclass(frozen=True)
class Decode:
    """What dispatch decodes from a command: ``opcodes`` (LOAD, EXEC, STORE, VEC), ``fence``
    (FENCE's opcode), ``dst_p`` / ``dst_x`` (the LOAD destinations with a hazard). ``bits(cmd)``:
    :data:`BITS` decode bits, in order: is LOAD, then the classes of :data:`CLASS_NAMES`
    (EXEC, STORE, VEC, bad: none of them and not FENCE, LOAD into P, LOAD into X, FENCE, LOAD
    into neither)."""

    opcodes: tuple[int, int, int, int]
    fence: int
    dst_p: int
    dst_x: int

    #: the decode bits from CLASS_LO on: the head's class, one-hot (every command is exactly
    #: one of these); bit 0 (is LOAD) is the union of the three LOAD classes
    CLASS_LO = 1
    CLASS_NAMES = ("exec", "store", "vec", "bad", "ld_p", "ld_x", "fence", "ld_plain")
    CLASSES = len(CLASS_NAMES)

    def bits(self, cmd):
        op, ldst = cmd[0:8], cmd[16:24]
        is_op = [op == Bits(8)(k) for k in self.opcodes]
        fence = op == Bits(8)(self.fence)
        bad = ~(is_op[0] | is_op[1] | is_op[2] | is_op[3] | fence)
        ld_p = is_op[0] & (ldst == Bits(8)(self.dst_p))
        ld_x = is_op[0] & (ldst == Bits(8)(self.dst_x))
        ld_plain = is_op[0] & ~ld_p & ~ld_x
        cls = {"exec": is_op[1], "store": is_op[2], "vec": is_op[3], "bad": bad, "ld_p": ld_p,
               "ld_x": ld_x, "fence": fence, "ld_plain": ld_plain}
        low_first = [is_op[0]] + [cls[c] for c in self.CLASS_NAMES]
        return BitsSignal.concat(low_first[::-1])


#: decode bits per command (Decode.bits)
BITS = 9


class CommandQueue:
    """The command FIFO with its commands' decode stored beside them (see the module
    docstring)."""

    def __init__(self, cmd_bits: int, depth: int, clk, rst, decode: Decode,
                 decoders: dict | None = None):
        self.cmd_bits, self.decode = cmd_bits, decode
        self.decoders = dict(decoders or {})
        self.fields = {}                 # engine -> (lo, hi) of its bits above the dispatch decode
        lo = cmd_bits + BITS
        for e, d in self.decoders.items():
            self.fields[e] = (lo, lo + d.width)
            lo += d.width
        self.fifo = fifo = Queue(Bits(lo), depth, clk, rst, "cmdq")
        self.empty, self.full = fifo.empty, fifo.full
        self.output = fifo.output[0:cmd_bits]
        self.decoded = fifo.output[cmd_bits:cmd_bits + BITS]
        self.raw = fifo.output

    def engine_decoded(self, word, engine: str):
        """Engine ``engine``'s decode bits in ``word`` (an entry laid out as ``raw``)."""
        lo, hi = self.fields[engine]
        return word[lo:hi]

    def push(self, cmd, en) -> None:
        parts = [cmd, self.decode.bits(cmd)] + [d(cmd) for d in self.decoders.values()]
        self.fifo.push(BitsSignal.concat(parts[::-1]), en)

    def pop(self, en) -> None:
        self.fifo.pop(en)


class Dispatcher:
    """In-order dispatch (see the module docstring)."""

    def __init__(self, clk, rst, cmdq: CommandQueue, start, credit_return, depth: int):
        cmd_bits = cmdq.cmd_bits
        dispatch_w = Wire(Bits(1), "dispatch")
        # the head in one 2-slot FIFO slice (fifo_slice), whose slots load from the command
        # FIFO's side and whose output mux has a read pointer copy per DISPATCH_CHUNK bits, so
        # the decision reaches pointer and fill flops only, not the enables of the command's
        # flops; the head's class (8 one-hot decode bits) is kept in flops of its own that are
        # all zero while no head waits (``dispatch_head_hot``), so the decision needs no valid
        # each class's "may go" condition for the next cycle (the module docstring's "the
        # decision"), folded into the slice's one-hot class flops (``dispatch_head_go``: class
        # AND its condition, registered together), so the decision is an OR of flops
        may = {c: Wire(Bits(1), f"dispatch_ok_{c}_next") for c in Decode.CLASS_NAMES
               if c != "bad"}
        gate = [may[c] if c != "bad" else Bits(1)(1) for c in Decode.CLASS_NAMES]
        head_valid, dec, slice_ready, go = fifo_slice(
            clk, rst, ~cmdq.empty, cmdq.raw, dispatch_w, "dispatch_head", chunk=DISPATCH_CHUNK,
            toggles=toggles, hot=(cmd_bits + Decode.CLASS_LO, Decode.CLASSES), gate=gate)
        self.head = head = dec[0:cmd_bits]
        go = {c: go[k] for k, c in enumerate(Decode.CLASS_NAMES)}
        engines = ("load", "exec", "store", "vec")
        unknown = set(cmdq.decoders) - set(engines)
        if unknown:
            raise ValueError(f"Dispatcher: decode bits for no engine: {sorted(unknown)}")
        self.queues = queues = [EngineQueue(cmd_bits, depth, clk, rst, f"{e}_head",
                                            cmdq.decoders[e].width if e in cmdq.decoders else 0)
                                for e in engines]
        self.loadq, self.execq, self.storeq, self.vecq = queues
        self.store_busy = Wire(Bits(1), "store_busy")
        self.vec_busy = Wire(Bits(1), "vec_busy")
        self.drained = Wire(Bits(1), "drained")
        own = {"load": go["ld_plain"] | go["ld_p"] | go["ld_x"], "exec": go["exec"],
               "store": go["store"], "vec": go["vec"]}
        # FENCE and a bad opcode from their own terms, not through the decision
        # (dispatch_head_d -> the decision -> fence_go -> the stamp counter's enable ->
        # stamp_we_q was the placed 8x8's critical path on seed 3 at ac8e72c, 8.13 ns)
        self.fence_go = go["fence"]
        self.bad_go = bad = go["bad"]
        # (with the class flops and one ``dispatch_ok_*`` flop per class, the decision was
        # an AND-OR of 14 flops that synthesis chained four LUTs deep: dispatch_head_hot ->
        # four LUTs -> the slice's pop -> dispatch_head_hot was the placed 8x8's critical
        # path on seed 1 at 7193335, 9.02 ns, and its fifth on seed 2 at fc1165b, 7.82 ns)
        dispatch = (own["load"] | own["exec"] | own["store"] | own["vec"] | self.fence_go
                    | self.bad_go)
        dispatch_w.assign(dispatch)
        # each queue's write enable from its own terms, not from the whole decision: equal to
        # dispatch & is_op[k], since the classes are one-hot
        for k, e in enumerate(engines):
            queues[k].push(head, own[e],
                           cmdq.engine_decoded(dec, e) if e in cmdq.decoders else None)
        # the conditions' next values with the head's own terms selecting last, between
        # candidates of the queues' flags and the pops alone (the Queue's full_next already
        # has its push request last; for LOAD P / X the classes are one-hot, so a LOAD going
        # is no STORE or VEC going): dispatch_head_hot -> own["load"] -> the load queue's
        # full_next -> the store idle AND -> dispatch_ok_load_p ran seven LUTs, the placed
        # 8x8's fifth path on seed 2 at de882f7 (7.51 ns; fpga.sta)
        room_idle = {e: ~q.fifo.full_if_idle for e, q in zip(engines, queues)}
        room_push = {e: ~q.fifo.full_if_push for e, q in zip(engines, queues)}
        st_idle = self.storeq.idle & ~self.store_busy
        vec_idle = self.vecq.idle & ~self.vec_busy
        zero = Bits(1)(0)
        may["ld_plain"].assign(~self.loadq.fifo.full_next)
        may["ld_p"].assign(Mux(own["load"], Mux(own["store"], room_idle["load"] & st_idle, zero),
                               room_push["load"] & st_idle))
        may["ld_x"].assign(Mux(own["load"], Mux(own["vec"], room_idle["load"] & vec_idle, zero),
                               room_push["load"] & vec_idle))
        for e, q in zip(engines[1:], queues[1:]):
            may[e].assign(~q.fifo.full_next)
        may["fence"].assign(self.drained & ~dispatch)
        cmdq.pop(~cmdq.empty & slice_ready)
        credit_q = NamedReg(1, clk, rst, 0, name="credit_return_q")
        credit_q.next(dispatch)
        credit_return.assign(credit_q.q)
        dispatched = NamedReg(32, clk, rst, 0, name="dispatched")
        dispatched.next(Mux(start, Mux(dispatch, dispatched.q, inc(dispatched.q, 32)),
                            Bits(32)(0)))
        self.head_valid, self.bad, self.dispatch = head_valid, bad, dispatch
        self.dispatched = dispatched.q
