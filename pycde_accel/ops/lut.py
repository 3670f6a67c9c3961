"""``lut``: any element-wise function of one activation, ``y = f(x)``, as a 256-entry table
indexed by the int8 input code: LeakyReLU, PReLU (one parameter), ELU, CELU, SELU, Threshold,
Hardtanh / clamp with bounds other than ReLU6's ``[0, b]`` (handed over by ``ops/hardtanh.py``),
Sigmoid, SiLU, Hardswish, Hardsigmoid, Tanh, GELU (exact and tanh), Softplus, Mish,
Hardshrink, Softshrink, LogSigmoid, RReLU (eval), and the unary ``exp``, ``abs``, ``neg``,
``erf``, ``sin``, ``cos``.

Under per-tensor scales an int8 -> int8 function has only 256 inputs, so a table is exact for
every one of them: no approximation beyond the quantization of the output itself.

* attributes: ``fn`` (the function's name, a key of :data:`FUNCTIONS`) and ``params`` (its
  float parameters, in the ATen argument order).
* capture: one ATen target per function (:data:`FUNCTIONS`; the in-place variants too).
  ``nn.PReLU(num_parameters=C)`` with different slopes per channel is refused (one line; the
  table would be per channel); equal slopes are one parameter.
* quantization: the output scale is calibrated on the float output like any tensor's
  (``s_out = max|f(x)| / 127``); ``table[c + 128] = clip(rint(f(c * s_in) / s_out), -128, 127)``
  for every code c in -128..127 (the float function of the dequantized code, quantized as a
  host-side tensor is, :func:`~pycde_accel.frontend.quantize.quantize_tensor`). So every output
  is within half an output step of ``f`` at the dequantized input (outside the calibrated range
  it saturates at -128 / 127).
* reference: ``y = table[x + 128]``; ``float_eval``: ``f`` in float64 through torch.
* design.json: ``quant = {"table": [256 codes]}`` (entry i for input code i - 128).
* back end: one LUT layer (:class:`~pycde_accel.backend.program.Lut`): the table as a 256-byte
  constant, loaded into the vector engine's table memory by one ``VEC LUT_SET``, then the
  input streamed through S and mapped by ``VEC LUT`` (:mod:`pycde_accel.backend.commands`).
* post-op kernel: ``lut`` (:func:`pycde_accel.lowering.kernels.lut`), the table as constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, ClassVar

import numpy as np

from ..backend import layout as Lay
from ..backend import program as P
from ..frontend import quantize as q
from ..lowering import kernels
from .base import Node, register

TABLE = 256


def _t(x):
    import torch
    return torch.from_numpy(np.asarray(x, np.float64))


def _f(name):
    """A torch.nn.functional / torch function applied in float64."""
    def run(x, *p):
        import torch
        import torch.nn.functional as F
        fn = getattr(F, name, None) or getattr(torch, name)
        return fn(_t(x), *p).numpy()
    return run


def _gelu(x, approximate="none"):
    import torch.nn.functional as F
    return F.gelu(_t(x), approximate=approximate).numpy()


def _elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    x = np.asarray(x, np.float64)
    return scale * np.where(x > 0, x, alpha * np.expm1(x * input_scale))


def _rsqrt(x, eps=0.0):
    with np.errstate(divide="ignore"):
        return 1.0 / np.sqrt(np.maximum(np.asarray(x, np.float64), 0.0) + eps)


def _exp_scaled(x, a=1.0):
    with np.errstate(over="ignore"):
        return np.exp(a * np.asarray(x, np.float64))


def _reciprocal(x):
    with np.errstate(divide="ignore"):
        return 1.0 / np.asarray(x, np.float64)


@dataclass(frozen=True)
class Fn:
    """One function: its float form ``f(x, *params)``, the ATen targets that give it and how
    to read its parameters from the fx node (``args``: (position, keyword, default) each)."""
    f: Callable
    aten: tuple[str, ...]
    args: tuple[tuple[int, str, object], ...] = ()
    spelling: str = ""


#: name -> function. The order of ``args`` is the order of ``params``.
FUNCTIONS: dict[str, Fn] = {
    "leaky_relu": Fn(lambda x, s=0.01: np.where(np.asarray(x) >= 0, x, np.asarray(x) * s),
                     ("aten.leaky_relu.default", "aten.leaky_relu_.default"),
                     ((1, "negative_slope", 0.01),), "LeakyReLU"),
    "prelu": Fn(lambda x, s: np.where(np.asarray(x) >= 0, x, np.asarray(x) * s),
                ("aten.prelu.default", "aten._prelu_kernel.default"), (), "PReLU"),
    "elu": Fn(_elu, ("aten.elu.default", "aten.elu_.default"),
              ((1, "alpha", 1.0), (2, "scale", 1.0), (3, "input_scale", 1.0)), "ELU"),
    "celu": Fn(lambda x, a=1.0: _elu(x, a, 1.0, 1.0 / a), ("aten.celu.default", "aten.celu_.default"),
               ((1, "alpha", 1.0),), "CELU"),
    "selu": Fn(lambda x: _elu(x, 1.6732632423543772848170429916717,
                              1.0507009873554804934193349852946),
               ("aten.selu.default", "aten.selu_.default"), (), "SELU"),
    "threshold": Fn(lambda x, th, v: np.where(np.asarray(x) > th, x, v),
                    ("aten.threshold.default", "aten.threshold_.default"),
                    ((1, "threshold", None), (2, "value", None)), "Threshold"),
    "sigmoid": Fn(_f("sigmoid"), ("aten.sigmoid.default", "aten.sigmoid_.default"), (), "Sigmoid"),
    "silu": Fn(_f("silu"), ("aten.silu.default", "aten.silu_.default"), (), "SiLU"),
    "hardswish": Fn(_f("hardswish"), ("aten.hardswish.default", "aten.hardswish_.default"), (),
                    "Hardswish"),
    "hardsigmoid": Fn(_f("hardsigmoid"), ("aten.hardsigmoid.default",
                                          "aten.hardsigmoid_.default"), (), "Hardsigmoid"),
    "tanh": Fn(_f("tanh"), ("aten.tanh.default", "aten.tanh_.default"), (), "Tanh"),
    "gelu": Fn(_gelu, ("aten.gelu.default", "aten.gelu_.default"),
               ((99, "approximate", "none"),), "GELU"),
    "softplus": Fn(lambda x, b=1.0, th=20.0: _f("softplus")(x, b, th), ("aten.softplus.default",),
                   ((1, "beta", 1.0), (2, "threshold", 20.0)), "Softplus"),
    "mish": Fn(_f("mish"), ("aten.mish.default", "aten.mish_.default"), (), "Mish"),
    "hardshrink": Fn(lambda x, l=0.5: np.where(np.abs(x) > l, x, 0.0), ("aten.hardshrink.default",),
                     ((1, "lambd", 0.5),), "Hardshrink"),
    "softshrink": Fn(lambda x, l=0.5: np.sign(x) * np.maximum(np.abs(x) - l, 0.0),
                     ("aten.softshrink.default",), ((1, "lambd", 0.5),), "Softshrink"),
    "log_sigmoid": Fn(_f("logsigmoid"), ("aten.log_sigmoid.default",), (), "LogSigmoid"),
    "rrelu": Fn(lambda x, lo=1 / 8, hi=1 / 3: np.where(np.asarray(x) >= 0, x,
                                                        np.asarray(x) * (lo + hi) / 2),
                ("aten.rrelu.default",), ((1, "lower", 1 / 8), (2, "upper", 1 / 3)), "RReLU"),
    # captured by ops/hardtanh.py (its targets), for bounds other than [0, b > 0]; a bound
    # may be None (clamp with one bound)
    "hardtanh": Fn(lambda x, lo, hi: np.clip(x, lo, hi), (), (), "Hardtanh/clamp"),
    "exp": Fn(np.exp, ("aten.exp.default", "aten.exp_.default"), (), "exp"),
    "abs": Fn(np.abs, ("aten.abs.default", "aten.abs_.default"), (), "abs"),
    "neg": Fn(np.negative, ("aten.neg.default", "aten.neg_.default"), (), "neg"),
    "erf": Fn(_f("erf"), ("aten.erf.default", "aten.erf_.default"), (), "erf"),
    "sin": Fn(np.sin, ("aten.sin.default", "aten.sin_.default"), (), "sin"),
    "cos": Fn(np.cos, ("aten.cos.default", "aten.cos_.default"), (), "cos"),
    # 1/sqrt(max(x, 0) + eps) and 1/x: LayerNorm's and softmax's normalizers (ops/layer_norm.py,
    # ops/softmax.py); eps is 0 for a bare rsqrt
    "rsqrt": Fn(_rsqrt,
                ("aten.rsqrt.default", "aten.rsqrt_.default"), ((99, "eps", 0.0),), "rsqrt"),
    # exp(a * x): softmax's exponent of x - max(x), the attention's 1/sqrt(d) as a
    "exp_scaled": Fn(_exp_scaled, (), (), "exp"),
    "reciprocal": Fn(_reciprocal,
                     ("aten.reciprocal.default", "aten.reciprocal_.default"), (), "reciprocal"),
}

_BY_TARGET = {t: name for name, fn in FUNCTIONS.items() for t in fn.aten}


def float_fn(fn: str, params) -> Callable:
    """``x -> f(x)`` in float64 for the function ``fn`` with ``params``."""
    f = FUNCTIONS[fn].f
    return lambda x: np.asarray(f(np.asarray(x, np.float64), *params), np.float64)


def make_table(fn: str, params, s_in: float, s_out: float) -> np.ndarray:
    """The 256 int8 codes ``clip(rint(f(c * s_in) / s_out))`` for c = -128..127 (int64)."""
    codes = np.arange(-128, 128, dtype=np.float64)
    y = float_fn(fn, params)(codes * s_in)
    y = np.where(np.isfinite(y), y, np.sign(np.nan_to_num(y)) * 1e300)
    return q.quantize_tensor(y, s_out)


def lut_int8(x, table) -> np.ndarray:
    """``table[x + 128]`` for int8 codes ``x``."""
    return np.asarray(table, np.int64)[np.asarray(x, np.int64) + 128]


def emit(cx, n, fn: str, params) -> None:
    """Add a ``lut`` node computing ``fn(x, *params)`` for the fx node ``n`` (its first
    argument the activation): other ops' capture hooks hand over functions they cannot map."""
    cx.emit(Lut(n.name, (cx.act(n, n.args[0]),), cx.shape(n), **cx.common(n), fn=fn,
                params=tuple(params)), n)


@register
@dataclass
class Lut(Node):
    fn: str = "sigmoid"
    params: tuple = field(default_factory=tuple)
    #: the largest |y| the function can give where that is known (softmax's 1 / sum(exp) <= 1):
    #: the calibrated maximum is raised to it, so that inputs beyond the calibration data do not
    #: saturate; 0: the calibrated maximum alone
    known_max: float = 0.0
    kind: ClassVar[str] = "lut"
    ATEN: ClassVar[tuple[str, ...]] = tuple(_BY_TARGET)
    SUPPORTED: ClassVar[str] = ("element-wise functions of one activation ("
                                + "/".join(dict.fromkeys(f.spelling for f in FUNCTIONS.values()))
                                + ")")
    ORDER: ClassVar[int] = 38

    def attrs(self) -> dict:
        return {"fn": self.fn, "params": list(self.params)}

    @classmethod
    def capture(cls, cx, n) -> None:
        t = str(n.target)
        name = _BY_TARGET[t]
        spec = FUNCTIONS[name]
        x = cx.act(n, n.args[0])
        params = []
        if name == "prelu":
            w = cx.const(n, n.args[1]).ravel()
            if w.size == 0 or np.any(w != w[0]):
                raise cx.fail(n, f"{t} with {w.size} different per-channel slopes (only one "
                                 f"slope: nn.PReLU() or equal slopes; a per-channel table is "
                                 f"not built)")
            params = [float(w[0])]
        for pos, kw, default in spec.args:
            v = cx.arg(n, pos, kw, default)
            if name == "gelu":
                if v not in ("none", "tanh"):
                    raise cx.fail(n, f"{t} with approximate={v!r}")
                params.append(v)
                continue
            if name == "rrelu" and cx.arg(n, 3, "training", False):
                raise cx.fail(n, f"{t} in training mode (random slopes)")
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                raise cx.fail(n, f"{t} with a non-constant {kw}={v!r}")
            params.append(float(v))
        cx.emit(cls(n.name, (x,), cx.shape(n), **cx.common(n), fn=name, params=tuple(params)), n)

    def quantize(self, scales, maxabs):
        s_in = scales[self.inputs[0]]
        s_out = q.act_scale(max(maxabs[self.name], self.known_max))
        return s_out, q.LayerQuant(weight=make_table(self.fn, self.params, s_in, s_out))

    def float_eval(self, ins, run):
        return float_fn(self.fn, self.params)(ins[0])

    def reference(self, ins, lq, run):
        return lut_int8(ins[0], lq.weight)

    def int_setup(self, m, lq) -> None:
        m.buf(self.name, "table", lq.weight)

    def int_forward(self, m, ins, inputs):
        import torch
        t = m.const(self.name, "table")
        return torch.take(t, ins[0] + 128)

    def quant_json(self, lq) -> dict:
        return {"table": [int(v) for v in lq.weight]}

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        return (cls(**common_, fn=attrs["fn"], params=tuple(attrs["params"])),
                q.LayerQuant(weight=np.asarray(quant["table"], np.int64)))

    def lower(self, cx) -> None:
        lq = cx.qm.layers[self.name]
        ins, out, dims, strides = cx.eltwise(self, [self.inputs[0]])
        sym = f"{self.name}.table"
        data = np.asarray(lq.weight, np.int64).astype(np.int8).tobytes()
        cx.layout.request("const", sym, len(data), "table", self.name)
        cx.layout.consts.append(Lay.ConstSpec(sym, self.name, "data", data=data))
        cx.emit(lambda Lo, i: P.Lut(i, 0, cx.base(ins[0]), cx.base(out), Lo.addr(sym), dims,
                                    strides[0], strides[1], name=self.name, module=self.module),
                {"kind": self.kind})

    def postop(self, lq, base):
        k = kernels.lut(math.prod(self.shape), [int(v) for v in lq.weight], name=f"{base}_lut")
        return k, "lut", {"fn": self.fn}
