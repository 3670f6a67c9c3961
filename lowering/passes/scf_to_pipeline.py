"""pycde-accel-scf-to-pipeline: an element-wise scf.for kernel as a statically scheduled
``pipeline.scheduled`` inside an ``hw.module`` (the static route past calyx).

Input (pycde's CIRCT, after bufferization and convert-linalg-to-loops): ``func.func @k`` whose
body is one ``scf.for %i = 0 to n step 1`` that loads each input memref at ``%i``, computes with
arith ops, and stores one value into the last memref at ``%i``; scalar (integer) arguments are
read inside the loop. Anything else is refused with a diagnostic.

Output: ``hw.module @k`` with ports ``clock``, ``reset``, ``inK`` per function argument except
the output (tensor elements and scalars, in argument order; scalars must be held during a run),
``in_valid`` / ``in_ready``, ``out0`` / ``out0_valid`` / ``out0_ready``. Every load and scalar
is a pipeline input; the arith ops are chained into stages by :mod:`lowering.schedule` (as
soon as possible, each stage up to a delay budget: wiring is free, a DSP multiply has a stage of
its own, a scalar arrives after its route from the wrapper's register) and the result is
registered once more; constants are repeated in each stage that uses
them, so they are never registered. II = 1; latency = the number of stages.
Stall: ``stall = !out0_ready`` freezes every stage (CIRCT's stall support), so ``in_ready =
out0_ready``; ``out0_valid`` is a register chain of accepted inputs (the same enables as the
stages), so it does not depend on ``out0_ready``. The arith ops are mapped to comb by
``map-arith-to-comb`` and the pipeline to registers by ``pipeline-explicit-regs`` and
``lower-pipeline-to-hw`` (later passes of the stage).

Before:  func.func @clamp(%a: memref<8xi8>, %o: memref<8xi8>) {
           scf.for %i = %c0 to %c8 step %c1 { %x = memref.load %a[%i]; ... memref.store %y, %o[%i] } }
After:   hw.module @clamp(in %clock, in %reset, in %in0 : i8, in %in_valid, in %out0_ready,
                          out in_ready, out out0 : i8, out out0_valid) {
           %y, %done = pipeline.scheduled "clamp_p"(%a0 : i8 = %in0) stall(%stall) ... { ... } }
"""

from __future__ import annotations

from .. import schedule
from ._util import ir_of

NAME = "pycde-accel-scf-to-pipeline"

_CONST = ("arith.constant",)


class Refused(ValueError):
    pass


def _ops(block):
    return [op.operation for op in block.operations]


def _itype(t) -> str:
    s = str(t)
    if not s.startswith("i"):
        raise Refused(f"scf-to-pipeline: only integer element types, got {s}")
    return s


def _const_value(op, ir) -> int:
    attr = op.attributes["value"]
    try:
        return ir.IntegerAttr(attr).value
    except (TypeError, ValueError):
        return ir.BoolAttr(attr).value if hasattr(ir, "BoolAttr") else 0


def _sched_op(op, key) -> schedule.Op:
    kind = op.name.removeprefix("arith.")
    ty = op.operands[-1].type if kind in ("cmpi", "select") else op.operands[0].type
    pred = None
    if kind == "cmpi":
        pred = schedule.PREDICATES[int(str(op.attributes["predicate"]).split(":")[0].strip())]
    return schedule.Op(kind, schedule.width(ty), [key(v) for v in op.operands],
                       [key(r) for r in op.results], pred)


def _convert(func, ir, budget: float) -> str:
    name = str(func.attributes["sym_name"]).strip('"')
    body = func.regions[0].blocks[0]
    args = list(body.arguments)
    loops = [op for op in _ops(body) if op.name == "scf.for"]
    others = [op for op in _ops(body) if op.name not in ("scf.for", "func.return", "arith.constant")]
    if len(loops) != 1 or others:
        raise Refused(f"scf-to-pipeline: @{name} must be one scf.for (found "
                      f"{[op.name for op in _ops(body)]})")
    loop = loops[0]
    lbody = loop.regions[0].blocks[0]
    iv = lbody.arguments[0]

    def key(v):
        return v  # ir.Value is hashable and compares by identity of the SSA value

    # which argument each load reads / the store writes
    arg_index = {key(a): i for i, a in enumerate(args)}
    store = [op for op in _ops(lbody) if op.name == "memref.store"]
    if len(store) != 1:
        raise Refused(f"scf-to-pipeline: @{name} must store exactly once per iteration")
    store = store[0]
    out_arg = arg_index.get(key(store.operands[1]))
    if out_arg is None or key(store.operands[2]) != key(iv):
        raise Refused(f"scf-to-pipeline: @{name} must store to an argument at the loop index")

    inputs = []  # (port index k, type)
    names = {}   # value -> SSA name in stage 0 ("%aK")
    # input -> its route into stage 0: a scalar argument (lowering.schedule.SCALAR_ROUTE), a
    # stream element (a load, lowering.schedule.STREAM_ROUTE)
    scalars = {}
    per_run = []  # the scalar arguments: one value per run (lowering.schedule's per_run)
    for i, a in enumerate(args):
        if i == out_arg:
            continue
        ty = str(a.type)
        if ty.startswith("memref"):
            elem = _itype(ir.MemRefType(a.type).element_type)
            inputs.append((i, elem))
        else:
            inputs.append((i, _itype(a.type)))
            names[key(a)] = (f"%a{i}", 0)
            scalars[key(a)] = schedule.SCALAR_ROUTE
            per_run.append(key(a))
    loads = {}
    for op in _ops(lbody):
        if op.name == "memref.load":
            src = arg_index.get(key(op.operands[0]))
            if src is None or key(op.operands[1]) != key(iv):
                raise Refused(f"scf-to-pipeline: @{name}: a load that is not arg[i]")
            names[key(op.results[0])] = (f"%a{src}", 0)
            scalars[key(op.results[0])] = schedule.STREAM_ROUTE
            loads[src] = True

    # schedule (lowering.schedule): ops chained into a stage up to its logic-delay budget
    consts = {key(op.results[0]): op for op in _ops(body) if op.name in _CONST}
    arith, defined = [], set(names)
    for op in _ops(lbody):
        if op.name in ("memref.load", "memref.store", "scf.yield"):
            continue
        if op.name in _CONST:
            consts[key(op.results[0])] = op
            continue
        if not op.name.startswith("arith."):
            raise Refused(f"scf-to-pipeline: @{name}: unsupported op {op.name}")
        for v in op.operands:
            if key(v) not in consts and key(v) not in defined:
                raise Refused(f"scf-to-pipeline: @{name}: operand from outside the loop body")
        arith.append(op)
        defined.update(key(r) for r in op.results)
    values = {k: _const_value(c, ir) for k, c in consts.items()}
    sops = [_sched_op(op, key) for op in arith]
    ready = schedule.schedule(sops, values, budget, scalars, per_run)
    stages: dict[int, list] = {}
    for count, (op, sop) in enumerate(zip(arith, sops)):
        stages.setdefault(sop.stage, []).append(op)
        for r in op.results:
            names[key(r)] = (f"%v{count}", sop.stage)
    result = store.operands[0]
    produced = {key(r) for op in arith for r in op.results}
    last = ready[key(result)][0] + 1 if key(result) in produced else 0
    out_ty = _itype(result.type)

    lines: list[str] = []
    local: dict = {}  # (value, stage) -> name usable in that stage

    def use(v, s):
        if key(v) in consts:
            c = consts[key(v)]
            nm = f"%c{len(local)}_s{s}"
            if (key(v), s) not in local:
                lines.append(f"      {nm} = \"arith.constant\"() {{value = {c.attributes['value']}}}"
                             f" : () -> {v.type}")
                local[(key(v), s)] = nm
            return local[(key(v), s)]
        base, at = names[key(v)]
        if at == s:
            return base
        if (key(v), s) not in local:
            nm = f"{base}_s{s}"
            lines.append(f"      {nm} = pipeline.src {base} : {v.type}")
            local[(key(v), s)] = nm
        return local[(key(v), s)]

    for s in range(last + 1):
        if s > 0:
            lines.append(f"    ^bb{s}(%s{s}_enable : i1):")
        for op in stages.get(s, []):
            ops_ = [use(v, s) for v in op.operands]
            res = names[key(op.results[0])][0]
            attrs = ", ".join(f"{op.attributes[i].name} = {op.attributes[i].attr}"
                              for i in range(len(op.attributes)))
            tys = ", ".join(str(v.type) for v in op.operands)
            lines.append(f"      {res} = \"{op.name}\"({', '.join(ops_)}) {{{attrs}}} : "
                         f"({tys}) -> {op.results[0].type}")
        if s < last:
            lines.append(f"      pipeline.stage ^bb{s + 1}")
        else:
            lines.append(f"      pipeline.return {use(result, s)} : {out_ty}")

    ports = [f"in %in{i} : {ty}" for i, ty in inputs]
    pins = ", ".join(f"%a{i} : {ty} = %in{i}" for i, ty in inputs)
    # out0_valid: the accepted-input bit through one register per stage (enable = !stall)
    valid = ["    %v_0 = comb.and %in_valid, %out0_ready : i1"]
    for s in range(1, last + 1):
        valid.append(f"    %v_{s} = seq.compreg.ce %v_{s - 1}, %clock, %out0_ready "
                     f"reset %reset, %false : i1")
    return (
        f"  hw.module @{name}(in %clock : !seq.clock, in %reset : i1, "
        + "".join(f"{p}, " for p in ports)
        + f"in %in_valid : i1, in %out0_ready : i1, out in_ready : i1, out out0 : {out_ty}, "
        f"out out0_valid : i1) attributes {{pycde_accel.latency = {last} : i64}} {{\n"
        "    %true = hw.constant true\n    %false = hw.constant false\n"
        "    %stall = comb.xor %out0_ready, %true : i1\n"
        f"    %out, %done = pipeline.scheduled \"{name}_p\"({pins}) stall(%stall) clock(%clock) "
        f"reset(%reset) go(%in_valid) entryEn(%s0_enable) -> (out0 : {out_ty}) {{\n"
        + "\n".join(lines) + "\n    }\n"
        + "\n".join(valid) + "\n"
        f"    hw.output %out0_ready, %out, %v_{last} : i1, {out_ty}, i1\n  }}\n")


def run(module) -> None:
    ir = ir_of(module)
    funcs = [op.operation for op in module.body.operations if op.operation.name == "func.func"]
    if not funcs:
        raise Refused("scf-to-pipeline: no func.func in the module")
    text = "module {\n" + "".join(_convert(f, ir, schedule.BUDGET) for f in funcs) + "}\n"
    new = ir.Module.parse(text, module.context)
    for f in funcs:
        f.erase()
    for op in list(new.body.operations):
        module.body.append(op.operation)
