"""Wide multiplies of a kernel split into 16x16-bit partial products, for the static route.

The static route (``pycde-accel-scf-to-pipeline``) chains arith ops into stages by their
delay (``lowering.schedule``), but one ``arith.muli`` on i64 (requantize's
SaturatingRoundingDoublingHighMul) or i32 (residual_add's ``a*ma``) is still one stage: Yosys
maps it to several MULT18X18D whose partial products are summed in fabric in the same cycle
(requantize_pc alone placed at 83 MHz on ECP5-85F, its critical path DSP -> 64-bit adder
chain). ``split_wide_muls(kernel)`` returns the
same kernel (same name, ports, function) whose body computes each wide product from unsigned
16-bit limbs instead, so that the static schedule puts every 16x16 product (one DSP, with only
wiring before it) in a stage of its own and the sums in the following ones:

* ``muli(extsi a : iH, extsi b : iH) : i2H`` (the full signed product, H = W/2 = 32 here):
  ``au*bu - ((a<0 ? bu : 0) + (b<0 ? au : 0)) << H`` where ``au``/``bu`` are the zero-extended
  operands and ``au*bu`` = the four limb products shifted and added (a < 0 makes ``a = au -
  2^H``; the ``2^2H`` term vanishes modulo ``2^W``).
* ``muli(extsi a, y)`` with ``a`` of at most 16 bits (an int8 times a multiplier): ``a`` is one
  signed limb, so ``x*y mod 2^W`` = sum over the unsigned limbs of ``y`` of ``x * y_j << 16j``
  (W/16 products, not the W/16 (W/16 + 1) / 2 of the general case); two such operands are
  already one product and stay as they are;
* any other ``muli x, y : iW`` (W = 32 or 64): ``x*y mod 2^W`` = sum over limb pairs ``i + j <
  W/16`` of ``x_i * y_j << 16(i+j)``.

A shift by a variable amount ``e`` (requantize's and residual_add's RoundingDivideByPOT:
``x >> e``, ``1 << e``) is a W-bit barrel shifter in one stage (the next critical path, 9-9.6 ns
on ECP5): it is split into a coarse shift and then one by ``e & 7``, each half the mux
levels. The coarse shift takes only the amount's bits below ``log2 W`` (``e & (W - 8)``); an
amount past the width (``e > W - 1``, unsigned) selects the fill instead (all sign bits for
``shrsi``, zeros otherwise), which the fine shift keeps, so the split is exact for every ``e``
under CIRCT's comb semantics. Masking with ``~7`` instead would leave the shifter an OR of the
amount's high bits (27 of 32) in its path: three more LUT levels, placed at 9.7 ns (residual_add on
the 8x8 at 45d1f20).

An ordered compare of two values (``cmpi`` slt/sgt/sge/sle/ult/ugt/uge/ule, and ``maxsi`` /
``minsi`` / ``maxui`` / ``minui``, which are a compare and a select) becomes the sign of one
subtraction one bit wider: ``x < y`` is bit W of ``ext(x) - ext(y)`` and ``x >= y`` bit W of
``ext(y) + ~ext(x)`` (= y - x - 1), with ``ext`` signed or unsigned as the predicate is. On
ECP5 Yosys maps a compare to a carry chain whose result leaves through the chain's carry-out,
one more CCU2C and LUTs after it; a subtraction's top bit is a sum output, straight into its
register. Placed alone between registers on the LFE5U-85F, a 32-bit signed ``>`` reached
171.6 MHz and the subtraction 278.9 MHz; an 8-bit max (compare and select) 164.1 and 268.2
MHz. The compare's form was the placed 8x8's path on seed 3 at af39b54: requantize's
``remainder > threshold`` (RoundingDivideByPOT), stage 9 -> the stage-10 register through the
chain and its carry-out (8.0 ns, 3.84 of it logic). ``slt``/``sge`` against the constant 0
(a sign bit) and ``eq``/``ne`` stay as they are.

Exact modulo 2^W (``arith.muli`` semantics), so the kernel stays bit-exact; every op is still
lowered by CIRCT (this rewrites the kernel's linalg body, a :class:`lowering.kernels.Kernel`,
before ``lowering.build_kernel``). Narrower multiplies (W <= 16) are left alone.
"""

from __future__ import annotations

import dataclasses
import re

LIMB = 16
_MUL = re.compile(r"^(%\S+) = arith\.muli (%\S+), (%\S+) : i(\d+)$")
_SHIFT = re.compile(r"^(%\S+) = arith\.(shli|shrsi|shrui) (%\S+), (%\S+) : i(\d+)$")
_CONST = re.compile(r"^(%\S+) = arith\.constant ")
#: bits of a variable shift amount done in the second (fine) stage
FINE = 3
_EXTSI = re.compile(r"^(%\S+) = arith\.extsi (%\S+) : i(\d+) to i(\d+)$")


class _Emit:
    def __init__(self, tag: str, ty: str):
        self.tag, self.ty, self.n, self.lines = tag, ty, 0, []

    def op(self, rhs: str) -> str:
        nm = f"%sm{self.tag}_{self.n}"
        self.n += 1
        self.lines.append(f"{nm} = {rhs}")
        return nm

    def const(self, v: int, ty: str | None = None) -> str:
        return self.op(f"arith.constant {v} : {ty or self.ty}")

    def bin(self, op: str, a: str, b: str, ty: str | None = None) -> str:
        return self.op(f"arith.{op} {a}, {b} : {ty or self.ty}")

    def limbs(self, x: str, count: int) -> list[str]:
        """``count`` unsigned 16-bit limbs of ``x`` (each zero-extended to the full type)."""
        mask = self.const((1 << LIMB) - 1)
        out = []
        for i in range(count):
            v = x if i == 0 else self.bin("shrui", x, self.const(LIMB * i))
            out.append(self.bin("andi", v, mask) if i < count - 1 or i == 0 else v)
        return out

    def sum_shifted(self, terms: list[tuple[str, int]]) -> str:
        """Sum of ``t << s``; terms at the same shift added first (a balanced tree)."""
        by_shift: dict[int, list[str]] = {}
        for t, s in terms:
            by_shift.setdefault(s, []).append(t)
        parts = []
        for s in sorted(by_shift):
            parts.append(self.bin("shli", self._tree(by_shift[s]), self.const(s)) if s else
                         self._tree(by_shift[s]))
        return self._tree(parts)

    def _tree(self, xs: list[str]) -> str:
        while len(xs) > 1:
            xs = [self.bin("addi", xs[i], xs[i + 1]) if i + 1 < len(xs) else xs[i]
                  for i in range(0, len(xs), 2)]
        return xs[0]


def _unsigned_product(e: _Emit, x: str, y: str, width: int) -> str:
    """``x * y mod 2^width`` from limbs (pairs with i + j < width/16)."""
    n = width // LIMB
    xl, yl = e.limbs(x, n), e.limbs(y, n)
    return e.sum_shifted([(e.bin("muli", xl[i], yl[j]), LIMB * (i + j))
                          for i in range(n) for j in range(n) if i + j < n])


def _narrow_product(e: _Emit, x: str, y: str, width: int) -> str:
    """``x * y mod 2^width`` where ``x`` is sign-extended from at most one limb: the sum of
    ``x * y_j << 16j`` over the unsigned limbs ``y_j`` of ``y`` (exact: ``y = sum y_j 2^16j``),
    each a signed-limb by unsigned-limb product (one DSP)."""
    yl = e.limbs(y, width // LIMB)
    return e.sum_shifted([(e.bin("muli", x, yl[j]), LIMB * j) for j in range(len(yl))])


def _signed_full_product(e: _Emit, a: str, b: str, half: int) -> str:
    """The 2H-bit product of two H-bit signed values ``a``, ``b`` (the extsi operands)."""
    w = 2 * half
    ty, hty = f"i{w}", f"i{half}"
    au = e.op(f"arith.extui {a} : {hty} to {ty}")
    bu = e.op(f"arith.extui {b} : {hty} to {ty}")
    n = half // LIMB
    al, bl = e.limbs(au, n), e.limbs(bu, n)
    uu = e.sum_shifted([(e.bin("muli", al[i], bl[j]), LIMB * (i + j))
                        for i in range(n) for j in range(n)])
    zero_h, zero = e.const(0, hty), e.const(0)
    sa = e.op(f"arith.cmpi slt, {a}, {zero_h} : {hty}")
    sb = e.op(f"arith.cmpi slt, {b}, {zero_h} : {hty}")
    ca = e.op(f"arith.select {sa}, {bu}, {zero} : {ty}")
    cb = e.op(f"arith.select {sb}, {au}, {zero} : {ty}")
    corr = e.bin("shli", e.bin("addi", ca, cb), e.const(half))
    return e.bin("subi", uu, corr)


_CMP = re.compile(r"^(%\S+) = arith\.cmpi (\w+), (%\S+), (%\S+) : i(\d+)$")
_MINMAX = re.compile(r"^(%\S+) = arith\.(max|min)(si|ui) (%\S+), (%\S+) : i(\d+)$")
#: ordered predicates -> (signed, less-than form, operands swapped): ``a P b`` is
#: ``lt(x, y)`` or ``ge(x, y)`` of (a, b), or of (b, a) when swapped
_PRED = {"slt": (True, True, False), "sgt": (True, True, True),
         "sge": (True, False, False), "sle": (True, False, True),
         "ult": (False, True, False), "ugt": (False, True, True),
         "uge": (False, False, False), "ule": (False, False, True)}


def _sign_compare(e: _Emit, x: str, y: str, w: int, signed: bool, less: bool) -> str:
    """``x < y`` (``less``) or ``x >= y`` as bit ``w`` of a ``w + 1``-bit subtraction: an i1."""
    wide = f"i{w + 1}"
    ext = "extsi" if signed else "extui"
    xe, ye = (e.op(f"arith.{ext} {v} : i{w} to {wide}") for v in (x, y))
    if less:
        d = e.bin("subi", xe, ye, wide)                       # x - y < 0
    else:
        d = e.bin("addi", ye, e.bin("xori", xe, e.const(-1, wide), wide), wide)  # y - x - 1 < 0
    top = e.bin("shrui", d, e.const(w, wide), wide)
    return e.op(f"arith.trunci {top} : {wide} to i1")


def compares_as_subtracts(lines, consts=None) -> list[str]:
    """``lines`` with every ordered compare (and max/min) as the sign of a subtraction (see
    the module docstring); ``consts``: the names of constants (found in ``lines`` if None)."""
    if consts is None:
        consts = {}
        for ln in lines:
            m = re.match(r"^(%\S+) = arith\.constant (-?\d+) : i\d+$", ln.strip())
            if m:
                consts[m.group(1)] = int(m.group(2))
    out = []
    for k, ln in enumerate(lines):
        c = _CMP.match(ln.strip())
        mm = _MINMAX.match(ln.strip())
        if c and c.group(2) in _PRED and int(c.group(5)) > 1:
            res, pred, a, b, w = c.group(1), c.group(2), c.group(3), c.group(4), int(c.group(5))
            if pred in ("slt", "sge") and consts.get(b) == 0:      # a sign bit already
                out.append(ln)
                continue
            signed, less, swap = _PRED[pred]
            e = _Emit(f"c{k}", f"i{w}")
            r = _sign_compare(e, *((b, a) if swap else (a, b)), w, signed, less)
        elif mm and int(mm.group(6)) > 1:
            res, kind, sg, a, b, w = mm.groups()
            w = int(w)
            e = _Emit(f"c{k}", f"i{w}")
            lt = _sign_compare(e, a, b, w, sg == "si", True)
            r = e.op(f"arith.select {lt}, {b if kind == 'max' else a}, "
                     f"{a if kind == 'max' else b} : i{w}")
        else:
            out.append(ln)
            continue
        assert e.lines[-1].startswith(f"{r} = ")
        e.lines[-1] = res + e.lines[-1][len(r):]  # the last op defines the result's name
        out += e.lines
    return out


def split_lines(lines) -> list[str]:
    """The body lines with every wide ``arith.muli`` replaced by its limb form, every
    variable shift split in two and every ordered compare made a subtraction's sign (see
    module)."""
    ext = {}
    consts = {m.group(1) for m in (_CONST.match(ln.strip()) for ln in lines) if m}
    for ln in lines:
        m = _EXTSI.match(ln.strip())
        if m:
            ext[m.group(1)] = (m.group(2), int(m.group(3)), int(m.group(4)))
    out = []
    for k, ln in enumerate(lines):
        sh = _SHIFT.match(ln.strip())
        if sh and sh.group(4) not in consts and int(sh.group(5)) > 1 << FINE:
            res, op, x, e_, w = sh.group(1), sh.group(2), sh.group(3), sh.group(4), sh.group(5)
            e = _Emit(str(k), f"i{w}")
            W = int(w)
            fine = e.bin("andi", e_, e.const((1 << FINE) - 1))
            coarse = e.bin("andi", e_, e.const((W - 1) & -(1 << FINE)))
            # an amount past the width is a compare of the amount alone (an input, so it
            # sits beside the shifts), not an OR of its high bits in the shifter's path
            big = e.op(f"arith.cmpi ugt, {e_}, {e.const(W - 1)} : i{w}")
            fill = (e.bin("shrsi", x, e.const(W - 1)) if op == "shrsi" else e.const(0))
            first = e.op(f"arith.select {big}, {fill}, {e.bin(op, x, coarse)} : i{w}")
            out += e.lines
            out.append(f"{res} = arith.{op} {first}, {fine} : i{w}")
            continue
        m = _MUL.match(ln.strip())
        w = int(m.group(4)) if m else 0
        if not m or w <= LIMB or w % LIMB:
            out.append(ln)
            continue
        res, x, y = m.group(1), m.group(2), m.group(3)
        e = _Emit(str(k), f"i{w}")
        ex, ey = ext.get(x), ext.get(y)
        narrow_x, narrow_y = (bool(v and v[1] <= LIMB) for v in (ex, ey))
        if narrow_x and narrow_y:    # one signed limb each: already one DSP product
            out.append(ln)
            continue
        if (ex and ey and ex[1] == ey[1] and 2 * ex[1] == w and ex[2] == w
                and ex[1] % LIMB == 0):
            r = _signed_full_product(e, ex[0], ey[0], ex[1])
        elif narrow_x or narrow_y:
            r = _narrow_product(e, *((x, y) if narrow_x else (y, x)), w)
        else:
            r = _unsigned_product(e, x, y, w)
        assert e.lines[-1].startswith(f"{r} = ")
        e.lines[-1] = res + e.lines[-1][len(r):]  # the last op defines the product's name
        out += e.lines
    return compares_as_subtracts(out)


def split_wide_muls(kernel):
    """``kernel`` (a :class:`lowering.kernels.Kernel`) with its wide multiplies split."""
    return dataclasses.replace(kernel, body_lines=tuple(split_lines(kernel.body_lines)))
