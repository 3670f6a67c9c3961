"""The static route's schedule: which pipeline stage each arith op of a kernel body sits in.

One model of combinational delay, used twice: by ``pycde-accel-scf-to-pipeline`` (on the
kernel's scf ops) to place every op, and by the perf model (:func:`kernel_latency`, on the
kernel's linalg body text) to know each kernel's latency without lowering it. A test checks
that both give the same latency for every accelerator kernel.

Schedule (as soon as possible, chained): an op sits in the latest stage of its operands; its
start delay is the largest delay of those operands produced in that same stage (an operand
from an earlier stage comes from a stage register: delay 0). If start + its own delay exceeds
:data:`BUDGET` it moves to the next stage (start 0). An op whose delay alone exceeds the budget
(a DSP multiply) therefore has a stage to itself, fed from registers. The kernel's result is
registered once more, so latency = the result's stage + 1.

A multiply is one registered MULT18X18D on ECP5 (``pycde-accel-ecp5-dsp-mul`` moves the stage
registers around it into the block): its operands are registered at the end of the stage that
computes them, with the route into the DSP column (:data:`DSP_ROUTE`) in that stage's budget
(else one more fabric register first), the multiply has the next stage to itself, and its
product leaves the block's output register with the route out of the column
(:data:`DSP_ROUTE`) as its start delay in the stage after. So a multiply at stage ``s`` reads
registers only and its product is registered at the end of ``s``, as on any other target.

Delays, in ns on ECP5 with the route each level needs (on the placed accelerator routing is
three quarters of the critical path, so a LUT level costs its route, not its cell delay);
:data:`BUDGET` is a stage that closes at 150 MHz:

* wiring, no logic (0): ``extsi``/``extui``/``trunci``, shifts by a constant, ``andi``/
  ``ori``/``xori`` with a constant operand, ``cmpi slt/sge x, 0`` (the sign bit);
* one LUT level (:data:`LUT`): ``select`` (none between two constants),
  ``andi``/``ori``/``xori`` of two variables;
* ``cmpi eq/ne``: a LUT tree, ``ceil(log4 W)`` levels;
* ``addi``/``subi``/ordered ``cmpi``: a W-bit carry chain, ``CARRY0 + CARRY_BIT * W``;
* ``maxsi``/``minsi``/...: a carry chain and a mux level;
* a shift by a variable amount: one mux level per bit the amount can have (a constant mask
  ``andi e, m`` limits them, as ``lowering.split_mul`` splits wide shifts), at most
  ``log2 W`` plus one for amounts past the width;
* ``muli`` (the static route's multiplies are 16x16 limbs, one MULT18X18D each): a stage of
  its own between registers, as above; anything else: :data:`MUL`, more than the budget.

A scalar input (one per run: requantize's ``m0``/``shift``, residual_add's ``ma``/``mb``/``s``)
is one register in the stream wrapper that fans out to every stage using it, wherever the
placer puts them; it enters stage 0 with the route :data:`SCALAR_ROUTE` as its start delay
(``schedule(..., inputs=...)``), so the logic a stage computes from it, such as
RoundingDivideByPOT's mask ``(1 << s) - 1``, moves to the next stage behind a pipeline
register of the scalar itself when it does not fit after that route. A value computed from
scalars alone is one per run too, and a 1-bit one that chooses a wide select (``select c, x,
y``, not between two constants, ``W >= FANOUT_WIDTH`` bits) reaches each of its W bits with
the route :data:`SCALAR_FANOUT` more when it is computed in the same stage
(``schedule(..., per_run=...)`` names the scalars); the select then moves to the next stage,
behind a register of the decision. A stream input (one
element per cycle, the wrapper's element register) enters stage 0 likewise with
:data:`STREAM_ROUTE`: the placer does not keep a lane kernel's first stage beside its input
register either.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

#: the delay one stage may hold, ns: a 150 MHz cycle (6.67 ns) less clock-to-out, setup and
#: skew (about 1.2 ns on ECP5)
BUDGET = 5.5
#: one LUT4 level with its route to the next, as placed on the LFE5U-85F (a 32-bit barrel
#: shifter, 5 mux levels, placed at 9-9.6 ns: lowering.split_mul)
LUT = 1.5
#: a W-bit carry chain: the route into it and its first cell, then per bit
CARRY0 = 1.5
CARRY_BIT = 0.05
#: a multiply (one MULT18X18D, a stage of its own) and any op the model does not know
MUL = 6.0
#: the route between the fabric and the DSP column, either way (placed on the LFE5U-85F: 3.12 ns
#: into a MULT18X18D, 2.93 ns out of it, fit.py's critical path of 3a8a1d7)
DSP_ROUTE = 3.0
#: the route from a kernel's scalar register (``lowering.stream``'s ``scalar_<name>``) into the
#: stage that uses it: ``scalar_s`` -> the mask decode, 3 LUT levels (4.5 ns in this model) ->
#: a stage-0 register 50 rows away placed at 9.89 ns (residual_add in the 8x8 accelerator,
#: seed 2 at f1c7dd8), about 5 ns of route more than the model's
SCALAR_ROUTE = 3.0
#: the route from a kernel's stream input register (the wrapper's element register, one per
#: input) into stage 0's logic: vector.max_kernel6's ``in0`` -> the compare's carry chain,
#: 11 columns away, placed at 2.28 ns (the 8x8 accelerator, seed 1 at 48bed3a). Without it the
#: maxpool's compare + select (3.4 ns in this model) shared one stage and placed at 8.90 ns
STREAM_ROUTE = 2.3
#: the route of a decision computed from scalars alone into a wide select's bits (Yosys maps
#: ``c ? 0 : y`` to the flops' synchronous reset): mul_requantize's ``s > 15`` (three LUTs
#: from the scalar's stage-1 register) -> a 2.66 ns route -> the LSR of the 32-bit
#: ``(s > 15) ? 0 : 1 << (s & 15)`` register of stage 1, placed at 8.26 ns (the 8x8
#: accelerator, seed 3 at 3e65e81); the model had 4.6 ns in that stage
SCALAR_FANOUT = 1.2
#: the narrowest select charged :data:`SCALAR_FANOUT`
FANOUT_WIDTH = 16

_WIRE = ("extsi", "extui", "trunci", "bitcast", "index_cast")
_BITWISE = ("andi", "ori", "xori")
_SHIFT = ("shli", "shrui", "shrsi")
_MINMAX = ("maxsi", "minsi", "maxui", "minui")


@dataclass
class Op:
    """One arith op, MLIR-independent: ``kind`` without the ``arith.`` prefix, ``width`` the bits
    of its operands (cmpi, select's data) or result, ``operands`` hashable keys (a key in
    ``consts`` is a constant with that integer value), ``pred`` cmpi's predicate name."""

    kind: str
    width: int
    operands: list
    results: list
    pred: str | None = None
    stage: int = 0
    delay: float = 0.0


def _log2(n: int) -> int:
    return max(1, math.ceil(math.log2(max(n, 2))))


def carry(width: int) -> float:
    return CARRY0 + CARRY_BIT * width


def op_delay(op: Op, consts: dict, masks: dict) -> float:
    """The logic delay of ``op`` (ns), given the constants and the known masks of its operands."""
    k, w = op.kind, op.width
    const = [v in consts for v in op.operands]
    if k in _WIRE:
        return 0.0
    if k in _SHIFT:
        if const[1]:
            return 0.0
        mask = masks.get(op.operands[1])
        levels = _log2(w) + 1
        if mask is not None:
            m = mask & ((1 << 64) - 1)
            levels = bin(m & (w - 1)).count("1") + (1 if m >> _log2(w) else 0)
        return LUT * max(levels, 1)
    if k in _BITWISE:
        return 0.0 if any(const) else LUT
    if k == "select":   # between two constants: each bit is 0, 1, c or !c
        return 0.0 if const[0] or (const[1] and const[2]) else LUT
    if k == "cmpi":
        zero = const[1] and consts[op.operands[1]] == 0
        if op.pred in ("slt", "sge") and zero:
            return 0.0
        if op.pred in ("eq", "ne"):
            return LUT * max(1, math.ceil(math.log(max(w, 2), 4)))
        return carry(w)
    if k in ("addi", "subi"):
        return carry(w)
    if k in _MINMAX:
        return carry(w) + LUT
    return MUL


def schedule(ops: list[Op], consts: dict, budget: float = BUDGET,
             inputs: dict | None = None, per_run=()) -> dict:
    """Place every op (sets ``op.stage``, ``op.delay`` = its result's delay in that stage);
    return ``{result key: (stage, delay)}`` for every op result. Inputs (keys that are neither
    results nor constants) are stage-0 registers (delay 0); ``inputs`` gives some of them a
    start delay instead (the scalars: :data:`SCALAR_ROUTE`). ``per_run``: the inputs that
    are one value per run (the scalars): a wide select chosen by a decision computed from
    them in its own stage starts :data:`SCALAR_FANOUT` later."""
    ready: dict = {k: (0, d) for k, d in (inputs or {}).items()}
    masks: dict = {}
    run_const = set(per_run)     # keys computed from per-run inputs and constants alone
    for op in ops:
        s = 0
        for v in op.operands:
            if v in ready:
                s = max(s, ready[v][0])
        arrive = {v: ready[v][1] for v in op.operands if v in ready and ready[v][0] == s}
        if op.kind == "select" and op.width >= FANOUT_WIDTH and op.operands[0] in run_const \
                and op.operands[0] in arrive and arrive[op.operands[0]] > 0 \
                and not (op.operands[1] in consts and op.operands[2] in consts):
            arrive[op.operands[0]] += SCALAR_FANOUT
        start = max(arrive.values(), default=0.0)
        if all(v in consts or v in run_const for v in op.operands):
            run_const.update(op.results)
        if op.kind == "muli":
            # operands registered at the end of stage s (the DSP's input registers), the
            # route into the column included; the product is registered at the end of the
            # multiply's stage and reaches the next one after the route out
            s += 1 if start + DSP_ROUTE <= budget else 2
            op.stage, op.delay = s, MUL
            for r in op.results:
                ready[r] = (s + 1, DSP_ROUTE)
            continue
        d = op_delay(op, consts, masks)
        if d > 0 and start > 0 and start + d > budget:
            s, start = s + 1, 0.0
        op.stage, op.delay = s, start + d
        for r in op.results:
            ready[r] = (s, op.delay)
        if op.kind == "andi":
            m = [consts[v] for v in op.operands if v in consts]
            if m:
                for r in op.results:
                    masks[r] = m[0]
    return ready


def latency(ops: list[Op], consts: dict, result, budget: float = BUDGET,
            inputs: dict | None = None, per_run=()) -> int:
    """The pipeline's latency: the result's stage + 1 (the result is registered), 0 if the
    result is an input."""
    ready = schedule(ops, consts, budget, inputs, per_run)
    produced = {r for op in ops for r in op.results}
    return ready[result][0] + 1 if result in produced else 0


# ---- the linalg body text of a lowering.kernels.Kernel ----------------------------------------

_LINE = re.compile(r"^(%\S+) = arith\.(\w+) (.*) : (.*)$")
#: arith.cmpi's predicates, in the order of their enum values
PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


def width(ty) -> int:
    """The bits of an integer type (``i32``; ``index`` counts as 64)."""
    ty = str(ty).strip()
    return 64 if ty == "index" else int(ty.lstrip("i"))


def parse_body(lines) -> tuple[list[Op], dict]:
    """The ops and constants of a kernel's body lines (``%r = arith.<kind> <operands> : <ty>``)."""
    ops, consts = [], {}
    for ln in lines:
        m = _LINE.match(ln.strip())
        if not m:
            raise ValueError(f"schedule: cannot read kernel line {ln!r}")
        res, kind, args, ty = m.groups()
        if kind == "constant":
            consts[res] = int(args.split()[0]) if args.split()[0] not in ("true", "false") \
                else int(args.split()[0] == "true")
            continue
        pred = None
        parts = [a.strip() for a in args.split(",")]
        if kind == "cmpi":
            pred, parts = parts[0], parts[1:]
            assert pred in PREDICATES, ln
        ops.append(Op(kind, width(ty.split(" to ")[0]), parts, [res], pred))
    return ops, consts


def kernel_latency(kernel, budget: float = BUDGET) -> int:
    """The static-route latency of ``kernel`` (a ``lowering.kernels.Kernel`` as the accelerator
    lowers it: wide multiplies already split), without lowering it."""
    ops, consts = parse_body(kernel.body_lines)
    return latency(ops, consts, kernel.result, budget,
                   {**stream_inputs(nm for nm, _ in kernel.inputs),
                    **scalar_inputs(nm for nm, _ in kernel.scalars)},
                   scalar_inputs(nm for nm, _ in kernel.scalars))


def stream_inputs(names) -> dict:
    """``schedule``'s ``inputs`` for a kernel's stream inputs (the body text names the element
    of input ``x`` ``%x_e``)."""
    return {f"%{nm}_e": STREAM_ROUTE for nm in names}


def scalar_inputs(names) -> dict:
    """``schedule``'s ``inputs`` for a kernel's scalars (keys as the body text names them)."""
    return {f"%{nm}": SCALAR_ROUTE for nm in names}
