"""The post-op kernels as linalg-on-tensors, written by small parametrized builders.

Each kernel is an elementwise ``linalg.generic`` over ``n`` elements in destination-passing
form: ``func.func @<name>(inputs..., scalars..., %out) -> tensor``. Bufferization turns the
tensors into memrefs; the handshake lowering turns every memref into a memory port (load:
``inK_ld0.addr`` out, ``inK_ld0.data`` in; store: ``inK_st0.address``/``inK_st0.data`` out, a
``inK_st0.done`` token in) and every scalar into a once-per-run input channel.

Kernels and their integer semantics (all exact; ``pycde_accel.frontend.quantize`` and the
tests' reference implement the same):

* ``requantize``: int32 acc -> int8, TFLite MultiplyByQuantizedMultiplier with ``m0`` (Q0.31,
  in [2^30, 2^31)) and right ``shift`` (0..31), then clamp to [-128, 127] or [0, 127]
  (``relu=True``). Per tensor, ``m0``/``shift`` are scalar kernel inputs; per channel
  (``per_channel=True``, kernel ``requantize_pc``) they are element streams next to ``x``.
* ``residual_add``: y = clamp(RDBPOT(a*ma + b*mb, s), lo, hi); int8 a, b; scalar inputs ma, mb
  (|m| < 2^15) and s (0..31).
* ``maxpool``: y = max of ``k`` int8 inputs (one window of k taps; the caller streams the k taps
  of each window as k parallel inputs).
* ``clamp``: y = clamp(x, lo, hi) elementwise on int8, lo/hi fixed at build time.
* ``mul_requantize``: y = clamp(RDBPOT(SRDHM(a * b, m0), s), -128, 127); int8 a, b (the
  exact int16 product), scalar inputs m0 (Q0.31) and s (0..31): the product of two
  activations into the output scale.
* ``lut``: y = table[x + 128] elementwise on int8, the 256-entry table fixed at build time
  (a chain of compare/selects, one per step of the table: a model's per-layer function).
* ``row_lanes``: the lane tree of a row reduction, one element = one whole AXI beat: ``ab``
  int8 lanes ``x0..x{ab-1}``, the number of lanes that belong to the row ``cnt`` (0..ab; the
  rest are row padding and do not count) and the operation ``op`` (``ROW_SUM`` 0: the sum of
  the counted lanes, ``ROW_MAX`` 1: their maximum, -128 if none, ``ROW_SUMSQ`` 2: the sum of
  their squares), int32 out. Balanced trees (log2(ab) adder / compare levels), so the static
  route pipelines it at one beat per cycle; the loop-carried part of the reduction (a row's
  beats combined) is the engine's accumulator (``rtl_lib/row_reduce.py``).

The arithmetic is written with cmpi+select (no maxsi/minsi) so that the same linalg also
passes lower-scf-to-calyx (docs/toolchain.md, "Calyx in this CIRCT build").
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class V:
    name: str
    ty: str


class Body:
    """Emits the arith ops of a linalg.generic body, one SSA value per call."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._n = 0

    def _new(self, rhs: str, ty: str) -> V:
        v = V(f"%v{self._n}", ty)
        self._n += 1
        self.lines.append(f"{v.name} = {rhs}")
        return v

    def const(self, value: int, ty: str) -> V:
        return self._new(f"arith.constant {value} : {ty}", ty)

    def bin(self, op: str, a: V, b: V) -> V:
        assert a.ty == b.ty, (op, a, b)
        return self._new(f"arith.{op} {a.name}, {b.name} : {a.ty}", a.ty)

    def cmp(self, pred: str, a: V, b: V) -> V:
        return self._new(f"arith.cmpi {pred}, {a.name}, {b.name} : {a.ty}", "i1")

    def select(self, c: V, a: V, b: V) -> V:
        return self._new(f"arith.select {c.name}, {a.name}, {b.name} : {a.ty}", a.ty)

    def cast(self, op: str, a: V, ty: str) -> V:
        return self._new(f"arith.{op} {a.name} : {a.ty} to {ty}", ty)

    # ---- integer primitives shared by the kernels ----------------------------------------
    def clamp(self, x: V, lo: int, hi: int) -> V:
        lo_v, hi_v = self.const(lo, x.ty), self.const(hi, x.ty)
        x = self.select(self.cmp("slt", x, lo_v), lo_v, x)
        return self.select(self.cmp("sgt", x, hi_v), hi_v, x)

    def max(self, a: V, b: V) -> V:
        return self.select(self.cmp("sgt", a, b), a, b)

    def rdbpot(self, x: V, e: V) -> V:
        """RoundingDivideByPOT: (x >> e) + ((x & mask) > ((mask >> 1) + (x < 0)))."""
        one, zero = self.const(1, x.ty), self.const(0, x.ty)
        mask = self.bin("subi", self.bin("shli", one, e), one)
        rem = self.bin("andi", x, mask)
        neg = self.select(self.cmp("slt", x, zero), one, zero)
        thr = self.bin("addi", self.bin("shrsi", mask, one), neg)
        up = self.select(self.cmp("sgt", rem, thr), one, zero)
        return self.bin("addi", self.bin("shrsi", x, e), up)

    def srdhm(self, a: V, b: V) -> V:
        """SaturatingRoundingDoublingHighMul on i32, exact (C truncating division by 2^31)."""
        a64, b64 = self.cast("extsi", a, "i64"), self.cast("extsi", b, "i64")
        p = self.bin("muli", a64, b64)
        zero = self.const(0, "i64")
        nudge = self.select(self.cmp("sge", p, zero), self.const(1 << 30, "i64"),
                            self.const(1 - (1 << 30), "i64"))
        s = self.bin("addi", p, nudge)
        bias = self.select(self.cmp("slt", s, zero), self.const((1 << 31) - 1, "i64"), zero)
        q = self.bin("shrsi", self.bin("addi", s, bias), self.const(31, "i64"))
        q32 = self.cast("trunci", q, "i32")
        imin = self.const(-(1 << 31), "i32")
        ovf = self.bin("andi", self.cmp("eq", a, imin), self.cmp("eq", b, imin))
        return self.select(ovf, self.const((1 << 31) - 1, "i32"), q32)


@dataclass(frozen=True)
class Kernel:
    """One kernel: its name, element count, tensor inputs, scalar inputs, output type."""

    name: str
    n: int
    inputs: tuple[tuple[str, str], ...]   # (name, element type)
    scalars: tuple[tuple[str, str], ...]  # (name, type)
    out_ty: str
    params: dict = field(default_factory=dict, compare=False)
    body_lines: tuple[str, ...] = ()
    result: str = ""

    def ports(self) -> dict:
        """Port name prefixes of the lowered kernel (handshake extmem numbering: one ``inK`` per
        function argument in order, then the start token; ``out0`` is the done token).

        ``loads``: input name -> prefix P (``P_addr``/``_valid``/``_ready`` out, ``P_data``/
        ``_valid``/``_ready`` in); ``scalars``: name -> port (data + ``_valid``/``_ready``, taken
        once per run); ``store``: prefix P (``P_address``, ``P_data``, ``P_valid`` out, ``P_ready``
        in; ``P_done_valid`` in / ``P_done_ready`` out answers each store); ``start``: the start
        token's port (``_valid``/``_ready`` only); ``done``: ``out0`` (``_valid``/``_ready``).
        """
        tensors, scalars = self.arg_ports()
        k = len(tensors) + len(scalars)
        return {"loads": {nm: f"{p}_ld0" for nm, p in tensors.items()}, "scalars": scalars,
                "store": f"in{k}_st0", "start": f"in{k + 1}", "done": "out0", "n": self.n}

    def arg_ports(self) -> tuple[dict[str, str], dict[str, str]]:
        """``in<K>`` of each function argument, K its index (tensor inputs first, then scalars):
        (tensor input name -> port, scalar name -> port). Both routes number ports this way."""
        names = [nm for nm, _ in self.inputs] + [nm for nm, _ in self.scalars]
        port = {nm: f"in{k}" for k, nm in enumerate(names)}
        return ({nm: port[nm] for nm, _ in self.inputs}, {nm: port[nm] for nm, _ in self.scalars})

    def linalg(self) -> str:
        """The kernel as MLIR text (linalg on tensors, destination-passing style)."""
        t = lambda ty: f"tensor<{self.n}x{ty}>"  # noqa: E731
        args = [f"%{nm}: {t(ty)}" for nm, ty in self.inputs]
        args += [f"%{nm}: {ty}" for nm, ty in self.scalars]
        args.append(f"%out: {t(self.out_ty)}")
        nin = len(self.inputs)
        maps = ", ".join(["#id"] * (nin + 1))
        ins = ", ".join(f"%{nm}" for nm, _ in self.inputs)
        ins_ty = ", ".join(t(ty) for _, ty in self.inputs)
        bb = ", ".join([f"%{nm}_e: {ty}" for nm, ty in self.inputs] + [f"%out_e: {self.out_ty}"])
        body = "\n".join(f"      {ln}" for ln in self.body_lines)
        return (
            "#id = affine_map<(d0) -> (d0)>\n"
            "module {\n"
            f"  func.func @{self.name}({', '.join(args)}) -> {t(self.out_ty)} {{\n"
            f"    %r = linalg.generic {{indexing_maps = [{maps}], iterator_types = [\"parallel\"]}}\n"
            f"        ins({ins} : {ins_ty}) outs(%out : {t(self.out_ty)}) {{\n"
            f"    ^bb0({bb}):\n{body}\n"
            f"      linalg.yield {self.result} : {self.out_ty}\n"
            f"    }} -> {t(self.out_ty)}\n"
            f"    return %r : {t(self.out_ty)}\n"
            "  }\n"
            "}\n")


def _kernel(name, n, inputs, scalars, out_ty, build, **params) -> Kernel:
    b = Body()
    ins = [V(f"%{nm}_e", ty) for nm, ty in inputs]
    sc = [V(f"%{nm}", ty) for nm, ty in scalars]
    res = build(b, *ins, *sc)
    assert res.ty == out_ty
    return Kernel(name, n, tuple(inputs), tuple(scalars), out_ty, dict(params),
                  tuple(b.lines), res.name)


def requantize(n: int = 64, relu: bool = False, per_channel: bool = False,
               name: str | None = None) -> Kernel:
    """``per_channel=False``: ``m0``/``shift`` are scalar inputs (one per run, per tensor).
    ``per_channel=True``: they are tensor inputs like ``x``, one pair per element, so the caller
    streams each element's channel parameters next to it (e.g. from a table indexed by the
    systolic core's column) and one kernel serves any channel count."""
    lo = 0 if relu else -128

    def build(b: Body, x: V, m0: V, shift: V) -> V:
        y = b.rdbpot(b.srdhm(x, m0), shift)
        return b.cast("trunci", b.clamp(y, lo, 127), "i8")

    params = [("m0", "i32"), ("shift", "i32")]
    default = ("requantize_relu" if relu else "requantize") + ("_pc" if per_channel else "")
    if per_channel:
        return _kernel(name or default, n, [("x", "i32")] + params, [], "i8", build, relu=relu,
                       per_channel=True)
    return _kernel(name or default, n, [("x", "i32")], params, "i8", build, relu=relu)


def residual_add(n: int = 64, lo: int = -128, hi: int = 127, name: str = "residual_add") -> Kernel:
    def build(b: Body, a: V, c: V, ma: V, mb: V, s: V) -> V:
        a32, c32 = b.cast("extsi", a, "i32"), b.cast("extsi", c, "i32")
        acc = b.bin("addi", b.bin("muli", a32, ma), b.bin("muli", c32, mb))
        return b.cast("trunci", b.clamp(b.rdbpot(acc, s), lo, hi), "i8")

    return _kernel(name, n, [("a", "i8"), ("b", "i8")],
                   [("ma", "i32"), ("mb", "i32"), ("s", "i32")], "i8", build, lo=lo, hi=hi)


def maxpool(n: int = 64, k: int = 4, name: str = "maxpool") -> Kernel:
    def build(b: Body, *taps: V) -> V:
        m = taps[0]
        for t in taps[1:]:
            m = b.max(m, t)
        return m

    return _kernel(name, n, [(f"t{i}", "i8") for i in range(k)], [], "i8", build, k=k)


def clamp(n: int = 64, lo: int = -128, hi: int = 127, name: str = "clamp") -> Kernel:
    return _kernel(name, n, [("x", "i8")], [], "i8", lambda b, x: b.clamp(x, lo, hi), lo=lo, hi=hi)


def mul_requantize(n: int = 64, name: str = "mul_requantize") -> Kernel:
    def build(b: Body, a: V, c: V, m0: V, s: V) -> V:
        p = b.bin("muli", b.cast("extsi", a, "i32"), b.cast("extsi", c, "i32"))
        return b.cast("trunci", b.clamp(b.rdbpot(b.srdhm(p, m0), s), -128, 127), "i8")

    return _kernel(name, n, [("a", "i8"), ("b", "i8")], [("m0", "i32"), ("s", "i32")], "i8",
                   build)


def lut(n: int = 64, table=None, name: str = "lut") -> Kernel:
    """``table``: 256 int8 codes, entry i for input code i - 128 (default: the identity)."""
    table = [int(v) for v in (range(-128, 128) if table is None else table)]
    if len(table) != 256 or not all(-128 <= v <= 127 for v in table):
        raise ValueError("lut: the table needs 256 int8 codes")

    def build(b: Body, x: V) -> V:
        y = b.const(table[0], "i8")
        for i in range(1, 256):
            if table[i] != table[i - 1]:
                c = b.cmp("sge", x, b.const(i - 128, "i8"))
                y = b.select(c, b.const(table[i], "i8"), y)
        return y

    return _kernel(name, n, [("x", "i8")], [], "i8", build, table=tuple(table))


#: ``row_lanes`` operations (its ``op`` input)
ROW_SUM, ROW_MAX, ROW_SUMSQ = 0, 1, 2


def row_lanes(n: int = 64, ab: int = 8, sumsq: bool = True, name: str = "row_lanes") -> Kernel:
    """The lane tree of a row reduction over one beat (see the module docstring); ``sumsq=False``
    leaves the squares out (``op`` 2 then gives the sum)."""
    if ab < 1 or ab > 64:
        raise ValueError("row_lanes: 1..64 lanes")

    def tree(b: Body, vals: list[V], f) -> V:
        while len(vals) > 1:
            nxt = [f(vals[i], vals[i + 1]) for i in range(0, len(vals) - 1, 2)]
            vals = nxt + ([vals[-1]] if len(vals) % 2 else [])
        return vals[0]

    def build(b: Body, *args: V) -> V:
        xs, cnt, op = list(args[:ab]), args[ab], args[ab + 1]
        lo8, zero = b.const(-128, "i8"), b.const(0, "i32")
        valid = [b.cmp("sgt", cnt, b.const(i, "i8")) for i in range(ab)]
        mx = tree(b, [b.select(v, x, lo8) for v, x in zip(valid, xs)], b.max)
        x32 = [b.cast("extsi", x, "i32") for x in xs]
        sm = tree(b, [b.select(v, x, zero) for v, x in zip(valid, x32)],
                  lambda p, q: b.bin("addi", p, q))
        y = sm
        if sumsq:
            x16 = [b.cast("extsi", x, "i16") for x in xs]     # (-128)^2 fits i16
            sq = [b.cast("extsi", b.bin("muli", x, x), "i32") for x in x16]
            ss = tree(b, [b.select(v, x, zero) for v, x in zip(valid, sq)],
                      lambda p, q: b.bin("addi", p, q))
            y = b.select(b.cmp("eq", op, b.const(ROW_SUMSQ, "i8")), ss, y)
        return b.select(b.cmp("eq", op, b.const(ROW_MAX, "i8")), b.cast("extsi", mx, "i32"), y)

    inputs = [(f"x{i}", "i8") for i in range(ab)] + [("cnt", "i8"), ("op", "i8")]
    return _kernel(name, n, inputs, [], "i32", build, ab=ab, sumsq=sumsq)


def row_lanes_ref(lanes, cnt, op) -> int:
    """``row_lanes`` of one beat in Python (the kernel's definition)."""
    xs = [int(v) for v in lanes[:max(0, min(int(cnt), len(lanes)))]]
    if op == ROW_MAX:
        return max(xs, default=-128)
    if op == ROW_SUMSQ:
        return sum(x * x for x in xs)
    return sum(xs)


#: The post-op kernels by name, each with the default build parameters.
KERNELS = {
    "requantize": requantize,
    "requantize_relu": lambda n=64: requantize(n, relu=True),
    "requantize_pc": lambda n=64: requantize(n, relu=True, per_channel=True),
    "residual_add": residual_add,
    "maxpool": maxpool,
    "clamp": lambda n=64: clamp(n, lo=0, hi=100),
    "lut": lut,
    "mul_requantize": mul_requantize,
    "row_lanes": row_lanes,
}
