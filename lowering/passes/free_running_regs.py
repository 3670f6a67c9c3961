"""pycde-accel-free-running-regs: a static kernel that never stalls needs no enable on its
data registers (the accelerator's stream wrapper holds ``out0_ready`` at 1).

After ``lower-pipeline-to-hw`` every stage register of a ``pipeline.scheduled`` is a
``seq.compreg.ce`` whose enable is its stage's valid (and ``out0_ready``): a register holds
while its stage carries no element. The stage-0 enable is the kernel's ``in_valid``, the
wrapper's input join, and it fans out to every register of the stage (hundreds of flip-flops
for requantize): the placed accelerator's critical path ran from the join through three LUTs
into those enables (10.1 ns, 8.2 of it routing). With ``out0_ready`` held at 1 the pipeline is
a shift register of elements whose valid bits travel beside them (the ``v_*`` and
``stageN_enable`` registers, which have a reset and are kept as they are); a data register
that loads on every edge holds the same value in every cycle its stage is valid, and no
logic reads it in another cycle (the kernels are element-wise: nothing is carried from one
element to the next). So every ``seq.compreg.ce`` *without reset* becomes a ``seq.compreg``
on the same input, clock and name, and each MULT18X18D that ``pycde-accel-ecp5-dsp-mul``
placed gets ``CE0 = CE1 = 1``. A kernel built this way must be driven with ``out0_ready``
high (``lowering.stream`` does); the standalone static routes keep their stall.

Before:  %r = seq.compreg.ce sym @k_p_stage0_reg4 %d, %clock, %en : i64
         %P0, ... = hw.instance "k_dsp0" @k_MULT18X18D<...>(..., CE0: %e0, CE1: %e1, ...)
After:   %r = seq.compreg sym @k_p_stage0_reg4 %d, %clock : i64
         %P0, ... = hw.instance "k_dsp0" @k_MULT18X18D<...>(..., CE0: %true, CE1: %true, ...)
"""

from __future__ import annotations

from ._util import attrs_of, ir_of, walk_ops

NAME = "pycde-accel-free-running-regs"

#: the enables of the DSP block (``ecp5_dsp_mul``)
_DSP_ENABLES = ("CE0", "CE1")


def run(module) -> None:
    ir = ir_of(module)
    with module.context:
        for op in walk_ops(module.operation):
            if op.name == "seq.compreg.ce" and len(op.operands) == 3:
                attrs = attrs_of(op)
                attrs.pop("operandSegmentSizes", None)
                attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([1, 1, 0, 0, 0])
                with ir.InsertionPoint(op), op.location:
                    new = ir.Operation.create("seq.compreg",
                                              results=[r.type for r in op.results],
                                              operands=list(op.operands)[:2], attributes=attrs)
                op.result.replace_all_uses_with(new.result)
                op.erase()
            elif op.name == "hw.instance" and "argNames" in op.attributes:
                names = [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes["argNames"])]
                idx = [names.index(n) for n in _DSP_ENABLES if n in names]
                if len(idx) != len(_DSP_ENABLES):
                    continue
                with ir.InsertionPoint(op), op.location:
                    true = ir.Operation.create(
                        "hw.constant", results=[ir.IntegerType.get_signless(1)],
                        attributes={"value": ir.IntegerAttr.get(
                            ir.IntegerType.get_signless(1), 1)})
                for i in idx:
                    op.operands[i] = true.result
