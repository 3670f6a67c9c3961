"""pycde-accel-ecp5-dsp-mul: each registered multiply of a static kernel as one MULT18X18D whose
own input and output registers replace the fabric stage registers around it (ECP5 only).

Yosys's ``synth_ecp5`` maps ``comb.mul`` to a MULT18X18D but never packs the fabric registers
around it into the block, so a kernel multiply placed as fabric register -> route into the DSP
column -> multiplier -> route out -> fabric register, two routes of about 3 ns in one cycle
(the placed accelerator's critical path; ``lowering.schedule.DSP_ROUTE``). The static schedule
gives every multiply a stage of its own between registers; this pass moves those registers
into the block (``rtl_lib.ecp5``: ``REG_INPUTA/B_CLK = REG_OUTPUT_CLK = "CLK0"``), which is
the same circuit cycle for cycle:

* matched: ``%p = comb.mul %x, %y : iW`` where ``%x`` and ``%y`` are each a
  ``seq.compreg.ce`` without reset (or an ``hw.constant``), all on one clock and one enable
  ``%ce_in``, each holding at most 18 significant bits as a signed value (zero-extended from
  17 bits or fewer, or sign-extended from 18 or fewer: ``comb.concat`` of zeros or of a
  ``comb.replicate`` of the value's top bit, as ``map-arith-to-comb`` writes ``extui`` /
  ``extsi``), and every use of ``%p`` is a ``seq.compreg.ce`` without reset on that clock and
  one enable ``%ce_out``;
* rewritten: one ``hw.instance`` of the extern ``MULT18X18D`` (declared once per input module
  as ``@<first module>_MULT18X18D`` with ``verilogName = "MULT18X18D"``, so that several
  kernels and the PE's own extern coexist in one design) whose A/B are the low 18 bits of the
  operand registers' *inputs*, ``CE0 = %ce_in`` (input registers), ``CE1 = %ce_out`` (output
  register, ``REG_OUTPUT_CE = "CE1"``), ``SIGNEDA = SIGNEDB = 1``; the output registers'
  uses read its 36-bit product sign-extended or truncated to W bits (exact: the product of
  two 18-bit signed values fits 36 bits, and ``comb.mul`` is that product modulo 2^W). The
  operand registers go when nothing else reads them.

Anything else (a multiply on wider operands, one that feeds logic in its own stage) is left
as ``comb.mul``. Simulation needs ``rtl_lib/MULT18X18D_sim.sv`` (``rtl_lib.ecp5.SIM_MODEL``).

Before:  %a = seq.compreg.ce %da, %clk, %e0 : i64     (%da = concat 0 : i48, %x : i16)
         %b = seq.compreg.ce %db, %clk, %e0 : i64
         %p = comb.mul %a, %b : i64
         %r = seq.compreg.ce %p, %clk, %e1 : i64
After:   %P0, ..., %P35 = hw.instance "k_dsp0" @k_MULT18X18D<...>(A0: bit 0 of %da, ...,
                                     CE0: %e0, CE1: %e1, CLK0: %clk, ...)
         %r = concat (replicate P35 : i28), P35, ..., P0 : i64
"""

from __future__ import annotations

from ._util import defining_op, ir_of

NAME = "pycde-accel-ecp5-dsp-mul"

#: MULT18X18D operand width (signed)
WIDTH = 18
#: the parameters the instance sets (every other one keeps its default)
PARAMS = {"REG_INPUTA_CLK": "CLK0", "REG_INPUTB_CLK": "CLK0", "REG_OUTPUT_CLK": "CLK0",
          "REG_INPUTA_CE": "CE0", "REG_INPUTB_CE": "CE0", "REG_OUTPUT_CE": "CE1"}
_IN = [f"A{i}" for i in range(WIDTH)] + [f"B{i}" for i in range(WIDTH)] + [
    "SIGNEDA", "SIGNEDB", "SOURCEA", "SOURCEB", "CE0", "CE1", "RST0"]
_OUT = [f"P{i}" for i in range(2 * WIDTH)]


def _width(v) -> int:
    return int(str(v.type).lstrip("i"))


def _op(ir, v):
    op = defining_op(ir, v)
    return op


def _const(ir, v):
    op = _op(ir, v)
    if op is None or op.name != "hw.constant":
        return None
    return ir.IntegerAttr(op.attributes["value"]).value


def _fits(ir, v) -> bool:
    """Whether ``v`` equals the sign extension of its low 18 bits (always, at 18 bits or fewer:
    a product of W <= 18 bits only reads the operands' low W bits)."""
    w = _width(v)
    if w <= WIDTH:
        return True
    c = _const(ir, v)
    if c is not None:
        c = c % (1 << w)
        c = c - (1 << w) if c >> (w - 1) else c
        return -(1 << (WIDTH - 1)) <= c < (1 << (WIDTH - 1))
    op = _op(ir, v)
    if op is not None and _reg(ir, v) is not None:  # a register holds what it is given
        return _fits(ir, op.operands[0])
    if op is None or op.name != "comb.concat":
        return False
    if _const(ir, op.operands[0]) == 0:  # zero-extended: the rest's top bit must be 0 in 18
        return w - _width(op.operands[0]) < WIDTH
    if len(op.operands) != 2:
        return False
    hi, lo = op.operands
    rep = _op(ir, hi)                # sign-extended: replicate of the low part's top bit
    if rep is None or rep.name != "comb.replicate" or _width(lo) > WIDTH:
        return False
    top = _op(ir, rep.operands[0])
    return (top is not None and top.name == "comb.extract" and top.operands[0] == lo
            and ir.IntegerAttr(top.attributes["lowBit"]).value == _width(lo) - 1)


def _reg(ir, v):
    """``(op, input, clock, enable)`` if ``v`` is a ``seq.compreg.ce`` without reset."""
    op = _op(ir, v)
    if op is None or op.name != "seq.compreg.ce" or len(op.operands) != 3:
        return None
    return op, op.operands[0], op.operands[1], op.operands[2]


class _Builder:
    def __init__(self, ir, ctx, loc):
        self.ir, self.ctx, self.loc = ir, ctx, loc

    def _i(self, w):
        return self.ir.IntegerType.get_signless(w, self.ctx)

    def create(self, name, operands, result_w, attrs=None):
        return self.ir.Operation.create(name, results=[self._i(result_w)], operands=operands,
                                        attributes=attrs or {}, loc=self.loc).result

    def const(self, value, w):
        return self.create("hw.constant", [], w,
                           {"value": self.ir.IntegerAttr.get(self._i(w), value)})

    def bit(self, v, i):
        return self.create("comb.extract", [v], 1,
                           {"lowBit": self.ir.IntegerAttr.get(self._i(32), i)})

    def operand_bits(self, v) -> list:
        """The 18 bits of ``v`` sign-extended from its low 18 (or fewer) bits."""
        w = _width(v)
        bits = [self.bit(v, i) for i in range(min(w, WIDTH))]
        return bits + [bits[-1]] * (WIDTH - len(bits))

    def product(self, pbits: list, w: int):
        """``w`` bits of the 36-bit signed product whose bits (LSB first) are ``pbits``."""
        bits = pbits[:w] + [pbits[-1]] * max(0, w - len(pbits))
        if w == 1:
            return bits[0]
        return self.create("comb.concat", list(reversed(bits)), w)


def _declare_extern(ir, ctx, name: str, before) -> None:
    ports = ", ".join([f"in %{p} : i1" for p in _IN] + ["in %CLK0 : !seq.clock"]
                      + [f"out {p} : i1" for p in _OUT])
    # declared without defaults: ExportVerilog leaves out a parameter equal to its declared
    # default, and the block's own defaults (cells_bb.v) are other values
    params = ", ".join(f"{k}: none" for k in PARAMS)
    text = (f"hw.module.extern @{name}<{params}>({ports}) "
            f'attributes {{verilogName = "MULT18X18D"}}\n')
    tmp = ir.Module.parse(text, ctx)  # kept alive until its op has moved
    tmp.body.operations[0].operation.move_before(before)


def _match(ir, mul):
    """``(operands, clock, ce_in, ce_out, output registers)`` if ``mul`` can be one registered
    MULT18X18D, else None. ``operands``: per operand ``(register or None, value into A/B)``."""
    if len(mul.operands) != 2:
        return None
    ins, clk, ce_in = [], None, None
    for v in mul.operands:
        if _const(ir, v) is not None:
            if not _fits(ir, v):
                return None
            ins.append((None, v))
            continue
        r = _reg(ir, v)
        if r is None or not _fits(ir, r[1]):
            return None
        if clk is None:
            clk, ce_in = r[2], r[3]
        elif r[2] != clk or r[3] != ce_in:
            return None
        ins.append((r[0], r[1]))
    if clk is None:
        return None
    outs = []
    for use in mul.result.uses:
        owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        r = _reg(ir, owner.result) if owner.name == "seq.compreg.ce" else None
        if r is None or r[1] != mul.result or r[2] != clk or (outs and r[3] != outs[0][3]):
            return None
        outs.append(r)
    if not outs:
        return None
    return ins, clk, ce_in, outs[0][3], [o[0] for o in outs]


def run(module) -> None:
    ir = ir_of(module)
    ctx = module.context
    mods = [op.operation for op in module.body.operations if op.operation.name == "hw.module"]
    if not mods:
        return
    ext_name = f"{ir.StringAttr(mods[0].attributes['sym_name']).value}_MULT18X18D"
    count = 0
    for mod in mods:
        block = mod.regions[0].blocks[0]
        for mul in [op.operation for op in block.operations if op.operation.name == "comb.mul"]:
            m = _match(ir, mul)
            if m is not None:
                _rewrite(ir, ctx, mod, mul, *m, ext_name, count)
                count += 1
    if count:
        _declare_extern(ir, ctx, ext_name, mods[0])


def _rewrite(ir, ctx, mod, mul, ins, clk, ce_in, ce_out, outs, ext_name, n):
    loc = mul.location
    w = _width(mul.result)
    with ir.InsertionPoint(mul):
        b = _Builder(ir, ctx, loc)
        operands = b.operand_bits(ins[0][1]) + b.operand_bits(ins[1][1])
        one, zero = b.const(1, 1), b.const(0, 1)
        operands += [one, one, zero, zero, ce_in, ce_out, zero, clk]
        parent = ir.StringAttr(mod.attributes["sym_name"]).value
        inst = ir.Operation.create(
            "hw.instance", results=[b._i(1)] * len(_OUT), operands=operands,
            attributes={
                "instanceName": ir.StringAttr.get(f"{parent}_dsp{n}", ctx),
                "moduleName": ir.FlatSymbolRefAttr.get(ext_name, ctx),
                "argNames": ir.ArrayAttr.get([ir.StringAttr.get(p, ctx)
                                              for p in _IN + ["CLK0"]], ctx),
                "resultNames": ir.ArrayAttr.get([ir.StringAttr.get(p, ctx) for p in _OUT], ctx),
                "parameters": ir.ArrayAttr.get(
                    [ir.Attribute.parse(f'#hw.param.decl<"{k}": none = "{v}">', ctx)
                     for k, v in PARAMS.items()], ctx),
            }, loc=loc)
        prod = b.product(list(inst.results), w)
    for reg in outs:
        reg.result.replace_all_uses_with(prod)
        reg.erase()
    regs = []
    for r, _ in ins:
        if r is not None and not any(r == q for q in regs):
            regs.append(r)
    mul.erase()
    for r in regs:
        if not list(r.result.uses):
            r.erase()
