"""lowering.split_mul: the limb form of every wide multiply computes the same values as the
kernel it came from (a small interpreter of the kernel body's arith ops on Python ints), and
the kernels lowered by the static route with split multiplies are bit-exact in Verilator
(tests/lowering/test_stream.py runs them behind the stream wrapper)."""

from __future__ import annotations

import re

import numpy as np

from pycde_accel.lowering import kernels
from pycde_accel.lowering.split_mul import split_wide_muls

_LINE = re.compile(r"^(%\S+) = arith\.(\w+) (.*)$")


def _wrap(v: int, w: int) -> int:
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


def run_body(lines, result, env):
    """Evaluate ``lines`` (one kernel element) with ``env`` (name -> signed int)."""
    env = dict(env)
    width = {}
    for ln in lines:
        dst, op, rest = _LINE.match(ln.strip()).groups()
        if op == "constant":
            v, ty = rest.split(" : ")
            w = int(ty[1:])
            env[dst], width[dst] = _wrap(int(v), w), w
            continue
        if op in ("extsi", "extui", "trunci"):
            src, tys = rest.split(" : ")
            a, b = (int(t.strip()[1:]) for t in tys.split(" to "))
            x = env[src.strip()]
            env[dst] = _wrap(x & ((1 << a) - 1) if op == "extui" else x, b)
            width[dst] = b
            continue
        args, ty = rest.rsplit(" : ", 1)
        w = int(ty[1:])
        if op == "cmpi":
            pred, a, b = (s.strip() for s in args.split(","))
            x, y = env[a], env[b]
            ux, uy = x & ((1 << w) - 1), y & ((1 << w) - 1)
            env[dst] = int({"eq": x == y, "ne": x != y, "slt": x < y, "sgt": x > y,
                            "sge": x >= y, "sle": x <= y, "ult": ux < uy, "ugt": ux > uy,
                            "uge": ux >= uy, "ule": ux <= uy}[pred])
            width[dst] = 1
            continue
        if op == "select":
            c, a, b = (s.strip() for s in args.split(","))
            env[dst] = env[a] if env[c] else env[b]
            width[dst] = w
            continue
        a, b = (env[s.strip()] for s in args.split(","))
        ua, ub = a & ((1 << w) - 1), b & ((1 << w) - 1)
        r = {"addi": lambda: a + b, "subi": lambda: a - b, "muli": lambda: a * b,
             "andi": lambda: ua & ub, "ori": lambda: ua | ub, "xori": lambda: ua ^ ub,
             "shli": lambda: ua << ub,
             "shrui": lambda: ua >> ub, "shrsi": lambda: a >> ub}[op]()
        env[dst], width[dst] = _wrap(r, w), w
    return env[result]


def _check(kernel, samples):
    split = split_wide_muls(kernel)
    assert split.name == kernel.name and split.inputs == kernel.inputs
    assert split.scalars == kernel.scalars and split.result == kernel.result
    muls = [ln for ln in split.body_lines if "arith.muli" in ln]
    assert muls and all(re.search(r": i(32|64)$", ln) for ln in muls)
    for env in samples:
        assert run_body(split.body_lines, split.result, env) == \
            run_body(kernel.body_lines, kernel.result, env), env
    return split


def test_requantize_split_is_exact():
    k = kernels.requantize(8, per_channel=True)
    rng = np.random.default_rng(0)
    edge = [-(1 << 31), (1 << 31) - 1, 0, -1, 1]
    samples = [{"%x_e": x, "%m0_e": m, "%shift_e": s}
               for x in edge for m in edge + [1 << 30] for s in (0, 1, 31)]
    samples += [{"%x_e": int(rng.integers(-(1 << 31), 1 << 31)),
                 "%m0_e": int(rng.integers(-(1 << 31), 1 << 31)),
                 "%shift_e": int(rng.integers(0, 32))} for _ in range(400)]
    split = _check(k, samples)
    # the full signed 32x32 product: four 16x16 limb products, nothing wider
    assert sum("arith.muli" in ln for ln in split.body_lines) == 4


def test_residual_add_split_is_exact():
    k = kernels.residual_add(8)
    rng = np.random.default_rng(1)
    samples = [{"%a_e": int(rng.integers(-128, 128)), "%b_e": int(rng.integers(-128, 128)),
                "%ma": int(rng.integers(-(1 << 31), 1 << 31)),
                "%mb": int(rng.integers(-(1 << 31), 1 << 31)), "%s": int(rng.integers(0, 32))}
               for _ in range(400)]
    samples += [{"%a_e": -128, "%b_e": 127, "%ma": -(1 << 31), "%mb": (1 << 31) - 1, "%s": 0}]
    split = _check(k, samples)
    # 2 products each: the int8 operand is one signed limb, times the two limbs of the multiplier
    assert sum("arith.muli" in ln for ln in split.body_lines) == 4


def test_variable_shifts_are_split():
    k = split_wide_muls(kernels.requantize(8, per_channel=True))
    var = [ln for ln in k.body_lines if re.search(r"arith\.(shli|shrsi|shrui) ", ln)
           and "%shift_e" in ln]
    assert not var  # no shift by the raw amount is left: only by its masked halves
    env = {"%x_e": -123456789, "%m0_e": (1 << 30) + 5}
    for s in range(0, 40):  # amounts past the width too (CIRCT: sign fill / zeros)
        env["%shift_e"] = s
        assert run_body(k.body_lines, k.result, env) == run_body(
            kernels.requantize(8, per_channel=True).body_lines, k.result, env)
    # residual_add shifts both ways (1 << s, x >> s); negative amounts are huge unsigned ones
    ra = kernels.residual_add(8)
    split = split_wide_muls(ra)
    for s in [*range(0, 40), 63, 1 << 20, -1, -8, -(1 << 31)]:
        for a, b in ((-128, 127), (5, -3), (0, 0)):
            env = {"%a_e": a, "%b_e": b, "%ma": (1 << 30) + 7, "%mb": -(1 << 29) - 11, "%s": s}
            assert run_body(split.body_lines, split.result, env) == \
                run_body(ra.body_lines, ra.result, env), env


def test_coarse_shift_takes_only_the_bits_below_the_width():
    """The coarse shift's amount has no bit at or above log2(W): the range check is a compare
    of the amount beside the shifter, not an OR of its high bits inside it."""
    k = split_wide_muls(kernels.requantize(8, per_channel=True))
    consts = dict(re.findall(r"^(%\S+) = arith\.constant (-?\d+) : i\d+$", "\n".join(
        k.body_lines), re.M))
    masked = re.findall(r"= arith\.andi %shift_e, (%\S+) : i(\d+)$", "\n".join(k.body_lines),
                        re.M)
    assert masked
    for c, w in masked:
        assert 0 <= int(consts[c]) < int(w), (c, consts[c])


def test_narrow_kernels_keep_their_ops_but_the_compares():
    """maxpool has no multiply or variable shift: only its compares change (each the sign of a
    subtraction one bit wider), and it computes the same maximum."""
    k = kernels.maxpool(8, k=2)
    split = split_wide_muls(k).body_lines
    assert not any("muli" in ln or "shr" in ln and "%t" in ln for ln in split)
    assert [ln for ln in k.body_lines if "cmpi" not in ln] == \
        [ln for ln in split if ln in k.body_lines]
    assert not any("arith.cmpi" in ln for ln in split)
    rng = np.random.default_rng(3)
    ins = [nm for nm, _ in k.inputs]
    for vals in list(rng.integers(-128, 128, (200, len(ins)))) + [[-128, 127], [127, -128],
                                                                   [-128, -128], [5, 5]]:
        env = {f"%{nm}_e": int(v) for nm, v in zip(ins, vals)}
        assert run_body(split, k.result, env) == run_body(k.body_lines, k.result, env), vals


def test_every_ordered_compare_is_a_subtractions_sign():
    """Every predicate, signed and unsigned, at the edges of its range (x, y in {min, min+1,
    -1, 0, 1, max-1, max}) and at random, equals the compare it replaces."""
    from pycde_accel.lowering.split_mul import compares_as_subtracts

    w = 8
    edges = [-128, -127, -1, 0, 1, 126, 127]
    rng = np.random.default_rng(0)
    pairs = [(x, y) for x in edges for y in edges] + \
        [tuple(int(v) for v in p) for p in rng.integers(-128, 128, (300, 2))]
    for pred in ("slt", "sgt", "sge", "sle", "ult", "ugt", "uge", "ule"):
        body = [f"%r = arith.cmpi {pred}, %a, %b : i{w}"]
        out = compares_as_subtracts(body)
        assert "cmpi" not in "\n".join(out), out
        for x, y in pairs:
            env = {"%a": x, "%b": y}
            # (an i1 reads -1 when set in this interpreter, as a signed 1-bit value)
            assert bool(run_body(out, "%r", env)) == bool(run_body(body, "%r", env)), \
                (pred, x, y)
    for op, f in (("maxsi", max), ("minsi", min)):
        body = [f"%r = arith.{op} %a, %b : i{w}"]
        out = compares_as_subtracts(body)
        assert op not in "\n".join(out)
        for x, y in pairs:
            assert run_body(out, "%r", {"%a": x, "%b": y}) == f(x, y), (op, x, y)
    # a sign bit and an equality stay as they are
    keep = ["%z = arith.constant 0 : i8", "%r = arith.cmpi slt, %a, %z : i8",
            "%q = arith.cmpi eq, %a, %b : i8"]
    assert compares_as_subtracts(keep) == keep
