"""The static route's schedule (lowering.schedule): the delay model, the chaining, and the
latency the perf model reads without lowering, checked against the lowered pipelines."""

from __future__ import annotations

import re

import pytest

from pycde_accel.lowering import build_kernel, kernels
from pycde_accel.lowering import schedule as S
from pycde_accel.lowering.split_mul import split_wide_muls


def _ops(lines):
    return S.parse_body(lines)


def test_wiring_is_free_and_a_multiply_has_a_stage_of_its_own():
    ops, consts = _ops(["%c = arith.constant 65535 : i64", "%s = arith.constant 16 : i64",
                        "%a = arith.extui %x : i32 to i64", "%l = arith.andi %a, %c : i64",
                        "%h = arith.shrui %a, %s : i64", "%p = arith.muli %l, %h : i64",
                        "%q = arith.shli %p, %s : i64", "%r = arith.addi %q, %l : i64"])
    S.schedule(ops, consts)
    stage = {o.results[0]: o.stage for o in ops}
    delay = {o.results[0]: o.delay for o in ops}
    assert [stage[k] for k in ("%a", "%l", "%h")] == [0, 0, 0]
    assert delay["%l"] == delay["%h"] == 0.0
    # the multiply reads registers (the DSP's input registers, loaded at the end of stage 0)
    assert stage["%p"] == 1 and delay["%p"] == S.MUL
    # its product leaves the DSP's output register: the shift by a constant is wiring in the
    # next stage, after the route out of the DSP column; the 64-bit add does not fit after
    # that route and starts a stage of its own
    assert stage["%q"] == 2 and delay["%q"] == S.DSP_ROUTE
    assert stage["%r"] == 3 and delay["%r"] == pytest.approx(S.carry(64))
    assert S.latency(ops, consts, "%r") == 4
    # an operand that arrives late in its stage leaves no room for the route into the DSP:
    # one more register first
    ops, consts = _ops(["%s = arith.addi %x, %y : i64", "%p = arith.muli %s, %x : i64"])
    S.schedule(ops, consts)
    assert [o.stage for o in ops] == [0, 2]
    ops, consts = _ops(["%s = arith.addi %x, %y : i8", "%p = arith.muli %s, %x : i8"])
    S.schedule(ops, consts)   # 1.9 ns + the route fit
    assert [o.stage for o in ops] == [0, 1]


def test_a_scalar_arrives_after_its_route():
    """A kernel's scalar (one register in the wrapper, fanned out to the whole pipeline) starts
    stage 0 at SCALAR_ROUTE: logic computed from it that does not fit after the route moves to
    stage 1 behind a pipeline register of the scalar; the same logic on an element stays."""
    lines = ["%one = arith.constant 1 : i32", "%m = arith.shli %one, %s : i32",
             "%k = arith.subi %m, %one : i32", "%r = arith.andi %x, %k : i32"]
    ops, consts = _ops(lines)
    S.schedule(ops, consts, inputs={"%s": S.SCALAR_ROUTE})
    assert [o.stage for o in ops] == [1, 2, 2]
    ops, consts = _ops(lines)
    S.schedule(ops, consts)
    assert [o.stage for o in ops] == [0, 1, 1]
    # RoundingDivideByPOT's mask in residual_add: no op reading the scalar s directly does
    # logic in stage 0
    k = split_wide_muls(kernels.residual_add(8))
    ops, consts = _ops(k.body_lines)
    S.schedule(ops, consts, inputs=S.scalar_inputs(nm for nm, _ in k.scalars))
    for o in ops:
        if "%s" in o.operands and S.op_delay(o, consts, {}) > 0:
            assert o.stage >= 1, o


def test_a_per_run_decision_reaches_a_wide_select_through_a_register():
    """A 1-bit decision computed from scalars alone that chooses a wide select is routed to
    each of its bits (a flop's synchronous reset, when one side is 0): the select starts
    SCALAR_FANOUT later in that stage, so here it moves to the next stage behind a register of
    the decision. Without ``per_run``, or for a narrow select, it is charged as before; in
    mul_requantize every such select lands a stage after its decision at the same latency."""
    def lines(w):
        return [f"%z = arith.constant 0 : i{w}", "%c15 = arith.constant 15 : i32",
                "%g = arith.cmpi ugt, %s, %c15 : i32", f"%y = arith.shli %x, %x : i{w}",
                f"%r = arith.select %g, %z, %y : i{w}"]

    ops, consts = _ops(lines(32))
    S.schedule(ops, consts, inputs={"%s": S.SCALAR_ROUTE}, per_run={"%s"})
    stage = {o.results[0]: o.stage for o in ops}
    assert stage["%g"] == 1 and stage["%r"] == 2
    # without the rule (the scalar not named per run) the select shares the decision's stage
    ops, consts = _ops(lines(32))
    S.schedule(ops, consts, inputs={"%s": S.SCALAR_ROUTE})
    assert (ops[0].stage, ops[2].stage) == (1, 1)
    # a narrow select: the decision's fanout is a few bits
    ops, consts = _ops(lines(8))
    S.schedule(ops, consts, inputs={"%s": S.SCALAR_ROUTE}, per_run={"%s"})
    assert (ops[0].stage, ops[2].stage) == (1, 1)
    # mul_requantize's "amount past 15" selects: each a stage after its decision, and the
    # kernel's latency is what it was (the scalar side has slack)
    k = split_wide_muls(kernels.mul_requantize(8))
    ops, consts = _ops(k.body_lines)
    scal = S.scalar_inputs(nm for nm, _ in k.scalars)
    S.schedule(ops, consts, inputs=scal, per_run=scal)
    # the decisions computed from the shift amount alone (each compare now a subtraction's
    # sign: trunci <- shrui <- subi/addi <- extui %s)
    made = {r: o for o in ops for r in o.results}

    def from_s(v, seen=()):
        o = made.get(v)
        if o is None:
            return v == "%s" or v in consts
        return any(x == "%s" or from_s(x) for x in o.operands) and \
            all(x == "%s" or x in consts or from_s(x) for x in o.operands)
    past = {o.results[0]: o for o in ops if o.kind == "trunci" and from_s(o.results[0])}
    sel = [o for o in ops if o.kind == "select" and o.operands[0] in past
           and not all(v in consts for v in o.operands[1:])]
    assert sel and all(o.stage > past[o.operands[0]].stage for o in sel), sel
    assert S.kernel_latency(k) == 18


def test_a_stream_element_arrives_after_its_route():
    """A stream input's element register sits in the kernel's wrapper, not beside the logic
    that reads it: stage 0 starts at STREAM_ROUTE, so the maxpool's compare and select (3.4 ns
    of logic, 8.90 ns placed) do not share a stage, and kernel_latency charges the route as
    the lowered pipeline does (test_kernel_latency_is_the_lowered_pipelines)."""
    k = kernels.maxpool(8, k=2)
    ops, consts = _ops(k.body_lines)
    S.schedule(ops, consts, inputs=S.stream_inputs(nm for nm, _ in k.inputs))
    assert [o.kind for o in ops] == ["cmpi", "select"]
    assert [o.stage for o in ops] == [0, 1]
    assert ops[0].delay == pytest.approx(S.STREAM_ROUTE + S.carry(8))
    assert S.kernel_latency(k) == 2
    ops, consts = _ops(k.body_lines)
    S.schedule(ops, consts)          # registers beside the logic: both in one stage
    assert [o.stage for o in ops] == [0, 0]


def test_chained_ops_stay_within_the_budget():
    k = split_wide_muls(kernels.requantize(8, per_channel=True))
    ops, consts = _ops(k.body_lines)
    S.schedule(ops, consts)
    for o in ops:   # an op over the budget only alone, from registers
        assert o.delay <= S.BUDGET or o.delay == S.op_delay(o, consts, {}) or o.kind in (
            "shli", "shrsi", "shrui"), o
    stages = {o.stage for o in ops}
    assert stages == set(range(max(stages) + 1))
    # a shift by an amount masked to 3 bits is 3 mux levels, not log2(32) + 1
    masks = {"%e": 7}
    sh = S.Op("shrsi", 32, ["%x", "%e"], ["%y"])
    assert S.op_delay(sh, {}, masks) == pytest.approx(3 * S.LUT)
    assert S.op_delay(sh, {}, {}) == pytest.approx(6 * S.LUT)
    # the sign bit and a select between constants are wiring; an ordered compare is a chain
    assert S.op_delay(S.Op("cmpi", 32, ["%x", "%z"], ["%n"], "slt"), {"%z": 0}, {}) == 0.0
    assert S.op_delay(S.Op("cmpi", 32, ["%x", "%z"], ["%n"], "sgt"), {"%z": 0}, {}) > 0.0
    assert S.op_delay(S.Op("select", 32, ["%n", "%a", "%b"], ["%r"]), {"%a": 1, "%b": 0},
                      {}) == 0.0


@pytest.mark.parametrize("kernel", [
    split_wide_muls(kernels.requantize(8, per_channel=True)),
    split_wide_muls(kernels.residual_add(8)),
    kernels.maxpool(8, k=2),
    kernels.row_lanes(8, 4),
], ids=lambda k: k.name)
def test_kernel_latency_is_the_lowered_pipelines(kernel, tmp_path):
    """What the perf model reads (kernel_latency, from the body text) is the latency of the
    pipeline scf-to-pipeline builds from the scf ops."""
    build_kernel(kernel, tmp_path, route="static")
    text = (tmp_path / "ir" / "03_pipeline.mlir").read_text()
    lowered = int(re.search(r"pycde_accel\.latency = (\d+)", text).group(1))
    assert lowered == S.kernel_latency(kernel)
    assert text.count("pipeline.stage ^bb") == lowered


def test_requantize_is_shorter_than_one_op_level_per_stage():
    """Chaining shortens the requantize pipeline (28 stages at one op level per stage) to
    under 60% of that, registered DSP multiplies included."""
    k = split_wide_muls(kernels.requantize(8, per_channel=True))
    ops, consts = _ops(k.body_lines)
    ready: dict = {}
    for o in ops:    # the old schedule: one op level per stage
        s = max([ready[v] for v in o.operands if v in ready], default=0)
        for r in o.results:
            ready[r] = s + 1
    assert S.kernel_latency(k) <= 0.6 * ready[k.result]


def test_perf_model_latencies_are_the_accelerators_kernels():
    """perfmodel.timing builds its own copies of the accelerator's kernels (it cannot import the
    PyCDE assembly layer); their latencies are those of the kernels assemble.accel_kernels
    instantiates, for each bus width."""
    from pycde_accel.assemble import accel_kernels
    from pycde_accel.config import AccelConfig
    from pycde_accel.perfmodel.timing import kernel_latencies

    for axi in (32, 64):
        cfg = AccelConfig(axi_data_width=axi)
        want = {role: S.kernel_latency(k)
                for role, k in accel_kernels(cfg, route="static", rowred=True).items()}
        assert kernel_latencies(axi // 8) == want
