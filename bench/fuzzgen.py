"""Seeded generator of random valid models and accelerator configs (``bench/fuzz.py`` and the
tests' fuzz slice import it).

``generate(seed)`` gives a :class:`Case`: the text of a standalone model file (a ``build()``
that returns ``(torch.nn.Module, (example_input,))``, nothing imported but torch) and an
:class:`~pycde_accel.config.AccelConfig` that ``validate()`` accepts. The model is a chain of
random ops over the supported set -- Conv2d/Conv1d (groups, depthwise, dilation, stride,
padding), Linear, BatchNorm, ReLU/ReLU6/Hardtanh and the table-driven activations, max/avg/
adaptive pooling, mean, residual add/sub/mul/maximum/minimum, squeeze-and-excitation mul, cat
along channels, constant padding, nearest upsampling, flatten -- with widths that include 1 and
primes and batch sizes 1 to 3. Every op is tried on a zero tensor of the current shape while the
model is drawn, so the shapes in the file are torch's own and the model always runs in torch.

The same seed gives the same case (the generator draws from ``random.Random(seed)`` only).

``sim_config(rng)`` draws from :data:`SIM_POOL`, a few configs whose Verilator builds are reused
from case to case; ``golden_config(rng)`` draws any config the back end can take (AXI 128 is
left out: the 128-bit bus is known broken).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from pycde_accel.config import AccelConfig

#: channel / feature widths: 1, primes and a few powers of two and odd sizes
WIDTHS = (1, 2, 3, 4, 5, 7, 8, 11, 13, 16, 17)
#: largest activation tensor (elements per batch item) the generator makes
MAX_ELEMS = 3 * 1024
#: largest Linear reduction length
MAX_FEATURES = 1024

ACTS = ("nn.ReLU()", "nn.ReLU6()", "nn.Hardtanh(0.0, 2.5)", "nn.LeakyReLU(0.1)", "nn.Sigmoid()",
        "nn.Tanh()", "nn.GELU()", "nn.SiLU()", "nn.Hardswish()", "nn.ELU()", "nn.Hardsigmoid()",
        "nn.Softplus()", "nn.Mish()", "F.relu({x})", "torch.clamp({x}, 0.0, 1.5)")

#: AXI data widths the generator uses (128 is known broken and left out)
AXI_WIDTHS = (32, 64, 256)
#: configs for Verilator cases: few enough that their builds are reused
SIM_POOL = (
    AccelConfig(),                                              # 8x8, 64-bit, static kernels
    AccelConfig(rows=4, cols=8),
    AccelConfig(rows=3, cols=12, axi_data_width=32, spad_a_depth=256, spad_b_depth=256,
                spad_c_depth=64, schedule="dynamic"),
)


@dataclass
class Case:
    seed: int
    source: str                       # a standalone model file
    config: AccelConfig
    ops: list[str] = field(default_factory=list)   # what the model holds, for the log

    @property
    def name(self) -> str:
        return f"case{self.seed}"


class _Builder:
    """Draws ops one at a time, keeping the model's modules and forward lines, and tries every
    op on zero tensors so that only ops torch accepts (and shapes torch computes) go in."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.inits: list[str] = []        # "self.m3 = nn.Conv2d(...)"
        self.lines: list[str] = []        # "t4 = self.m3(t3)"
        self.mods: dict[str, nn.Module] = {}
        self.vals: dict[str, torch.Tensor] = {}
        self.ops: list[str] = []
        self.n = 0

    def _eval(self, expr: str, env: dict):
        return eval(expr, {"torch": torch, "nn": nn, "F": F}, env)

    def try_op(self, expr: str, args: dict[str, str], module: str | None = None,
               label: str = "") -> str | None:
        """``expr`` with ``{x}``-style placeholders naming tensor variables (``args``) and
        ``{m}`` the new module (built from ``module``); return the new variable or None when
        torch refuses it or its output is empty or too large."""
        env = {k: self.vals[v] for k, v in args.items()}
        mname = f"m{self.n}"
        m = None
        try:
            if module is not None:
                m = self._eval(module, {}).eval()
                env["m"] = m
            with torch.no_grad():
                out = self._eval(expr.format(**{k: k for k in env}), env)
        except Exception:
            return None
        if not isinstance(out, torch.Tensor) or out.numel() == 0 or out.dim() < 2 \
                or out[0].numel() > MAX_ELEMS or not bool(torch.isfinite(out).all()):
            return None       # (a max-pool window all in padding is -inf in torch: left out)
        var = f"t{self.n}"
        self.n += 1
        if m is not None:
            self.mods[mname] = m
            self.inits.append(f"self.{mname} = {module}")
        sub = {k: v for k, v in args.items()}
        if m is not None:
            sub["m"] = f"self.{mname}"
        self.lines.append(f"{var} = {expr.format(**sub)}")
        self.vals[var] = out
        self.ops.append(label or (module or expr).split("(")[0])
        return var


def _width(rng: random.Random) -> int:
    return rng.choice(WIDTHS)


def _conv2d(b: _Builder, x: str, out_c: int | None = None, same: bool = False) -> str | None:
    rng = b.rng
    c = b.vals[x].shape[1]
    oc = out_c or _width(rng)
    groups = 1
    r = rng.random()
    if r < 0.15:
        groups = c                        # depthwise (times a multiplier)
        oc = c * rng.choice((1, 1, 2)) if out_c is None else out_c
    elif r < 0.3:
        divs = [g for g in range(2, c + 1) if c % g == 0]
        if divs:
            groups = rng.choice(divs)
            oc = groups * rng.choice((1, 2, 3)) if out_c is None else out_c
    if oc % groups:
        groups = 1
    if same:
        k = rng.choice((1, 3, 5))
        d = rng.choice((1, 1, 2))
        pad = "'same'" if rng.random() < 0.5 else str(d * (k - 1) // 2)
        s = 1
    else:
        k = rng.choice((1, 2, 3, 3, 5))
        s = rng.choice((1, 1, 2, 3))
        d = rng.choice((1, 1, 1, 2))
        if rng.random() < 0.15 and s == 1:
            pad = rng.choice(("'same'", "'valid'"))
        elif rng.random() < 0.1:
            pad = f"({rng.randint(0, k)}, {rng.randint(0, k)})"
        else:
            pad = str(rng.randint(0, k // 2 + 1))
    bias = rng.random() < 0.8
    mod = (f"nn.Conv2d({c}, {oc}, {k}, stride={s}, padding={pad}, dilation={d}, groups={groups}, "
           f"bias={bias})")
    return b.try_op("{m}({x})", {"x": x}, mod, "conv2d" + ("-dw" if groups == c and c > 1 else
                                                           "-g" if groups > 1 else ""))


def _conv1d(b: _Builder, x: str, out_c: int | None = None, same: bool = False) -> str | None:
    rng = b.rng
    c = b.vals[x].shape[1]
    oc = out_c or _width(rng)
    groups = 1
    if rng.random() < 0.25:
        groups = c
        oc = c if out_c is None else out_c
    if oc % groups:
        groups = 1
    if same:
        k, s, d = rng.choice((1, 3, 5)), 1, rng.choice((1, 2))
        pad = "'same'"
    else:
        k, s, d = rng.choice((1, 2, 3, 5)), rng.choice((1, 1, 2)), rng.choice((1, 1, 2))
        pad = str(rng.randint(0, k // 2 + 1))
    mod = (f"nn.Conv1d({c}, {oc}, {k}, stride={s}, padding={pad}, dilation={d}, groups={groups}, "
           f"bias={rng.random() < 0.8})")
    y = b.try_op("{m}({x})", {"x": x}, mod, "conv1d")
    # a BatchNorm1d of a 3-d tensor is folded into the conv before it (none stands alone)
    if y is not None and not same and rng.random() < 0.3:
        y = _bn(b, y) or y
    return y


def _act(b: _Builder, x: str) -> str | None:
    a = b.rng.choice(ACTS)
    if "{x}" in a:
        return b.try_op(a, {"x": x}, None, a.split("(")[0])
    return b.try_op("{m}({x})", {"x": x}, a, a.split("(")[0])


def _bn(b: _Builder, x: str) -> str | None:
    shape = b.vals[x].shape
    kind = "nn.BatchNorm2d" if len(shape) == 4 else "nn.BatchNorm1d"
    return b.try_op("{m}({x})", {"x": x}, f"{kind}({shape[1]})", kind[3:])


def _pool(b: _Builder, x: str) -> str | None:
    rng = b.rng
    shape = b.vals[x].shape
    nd = "2d" if len(shape) == 4 else "1d"
    r = rng.random()
    if r < 0.4:
        k = rng.choice((2, 2, 3))
        s = rng.choice((None, 1, 2))
        p = rng.randint(0, k // 2)
        d = rng.choice((1, 1, 2))
        ceil = rng.random() < 0.3
        mod = f"nn.MaxPool{nd}({k}, stride={s}, padding={p}, dilation={d}, ceil_mode={ceil})"
    elif r < 0.7:
        k = rng.choice((2, 3))
        s = rng.choice((None, 1, 2))
        p = rng.randint(0, k // 2)
        cip = rng.random() < 0.7
        mod = f"nn.AvgPool{nd}({k}, stride={s}, padding={p}, count_include_pad={cip})"
    elif r < 0.9:
        o = rng.choice((1, 2, 3))
        mod = f"nn.AdaptiveAvgPool{nd}({o})"
    else:
        dims = "(2, 3)" if nd == "2d" else "2"
        return b.try_op("{x}.mean(" + dims + ", keepdim=True)", {"x": x}, None, "mean")
    return b.try_op("{m}({x})", {"x": x}, mod, mod.split("(")[0][3:])


def _pad(b: _Builder, x: str) -> str | None:
    rng = b.rng
    if len(b.vals[x].shape) == 4:
        pads = tuple(rng.randint(0, 2) for _ in range(4))
    else:
        pads = (rng.randint(0, 2), rng.randint(0, 2))
    v = rng.choice(("", "", ", value=0.5", ", value=-0.25"))
    return b.try_op("F.pad({x}, " + str(pads) + v + ")", {"x": x}, None, "pad")


def _upsample(b: _Builder, x: str) -> str | None:
    f = b.rng.choice((2, 2, 3))
    return b.try_op("{m}({x})", {"x": x}, f"nn.Upsample(scale_factor={f}, mode='nearest')",
                    "upsample")


def _same_branch(b: _Builder, x: str) -> str | None:
    """A branch of the same shape as x (a 'same' conv, maybe an activation)."""
    shape = b.vals[x].shape
    if len(shape) == 4:
        y = _conv2d(b, x, out_c=shape[1], same=True)
    elif len(shape) == 3:
        y = _conv1d(b, x, out_c=shape[1], same=True)
    else:
        y = b.try_op("{m}({x})", {"x": x}, f"nn.Linear({shape[1]}, {shape[1]})", "linear")
    if y is None or b.vals[y].shape != shape:
        return None
    if b.rng.random() < 0.5:
        y = _act(b, y) or y
    return y


def _binary(b: _Builder, x: str) -> str | None:
    y = _same_branch(b, x)
    if y is None:
        return None
    op = b.rng.choice(("{x} + {y}", "{x} - {y}", "{y} + {x}", "{x} * {y}",
                       "torch.maximum({x}, {y})", "torch.minimum({x}, {y})"))
    return b.try_op(op, {"x": x, "y": y}, None, op.replace("{x}", "").replace("{y}", "")
                    .replace("torch.", "").strip(" (),") or "add")


def _se(b: _Builder, x: str) -> str | None:
    """squeeze-and-excitation: x * sigmoid(conv1x1(mean(x)))"""
    shape = b.vals[x].shape
    if len(shape) != 4:
        return None
    s = b.try_op("{x}.mean((2, 3), keepdim=True)", {"x": x}, None, "mean")
    if s is None:
        return None
    s = b.try_op("{m}({x})", {"x": s}, f"nn.Conv2d({shape[1]}, {shape[1]}, 1)", "conv2d")
    s = b.try_op("torch.sigmoid({x})", {"x": s}, None, "sigmoid") if s else None
    return b.try_op("{x} * {y}", {"x": x, "y": s}, None, "se-mul") if s else None


def _cat(b: _Builder, x: str) -> str | None:
    shape = b.vals[x].shape
    if len(shape) not in (2, 4):
        return None
    parts = [x]
    for _ in range(b.rng.randint(1, 2)):
        if len(shape) == 4:
            y = _conv2d(b, x, out_c=_width(b.rng), same=True)
        else:
            y = b.try_op("{m}({x})", {"x": x}, f"nn.Linear({shape[1]}, {_width(b.rng)})", "linear")
        if y is None or b.vals[y].shape[2:] != shape[2:]:
            return None
        parts.append(y)
    if b.rng.random() < 0.5:
        parts = parts[1:] + parts[:1]
    env = {f"a{i}": p for i, p in enumerate(parts)}
    return b.try_op("torch.cat([" + ", ".join("{" + k + "}" for k in env) + "], 1)", env, None, "cat")


def _flatten_linear(b: _Builder, x: str) -> str | None:
    if len(b.vals[x].shape) > 2:
        x = b.try_op("{x}.flatten(1)", {"x": x}, None, "flatten") or x
    if len(b.vals[x].shape) != 2 or b.vals[x].shape[1] > MAX_FEATURES:
        return None
    return _linear(b, x)


def _linear(b: _Builder, x: str) -> str | None:
    f = b.vals[x].shape[1]
    return b.try_op("{m}({x})", {"x": x}, f"nn.Linear({f}, {_width(b.rng)}, bias={b.rng.random() < 0.8})",
                    "linear")


SPATIAL_OPS = ((_conv2d, 5), (_act, 3), (_bn, 1), (_pool, 2), (_pad, 1), (_upsample, 0.5),
               (_binary, 2), (_se, 0.5), (_cat, 1))
ONE_D_OPS = ((_conv1d, 5), (_act, 3), (_pool, 2), (_pad, 1), (_binary, 1))
FLAT_OPS = ((_linear, 4), (_act, 3), (_bn, 1), (_binary, 1), (_cat, 1))


def _pick(rng: random.Random, table):
    total = sum(w for _, w in table)
    r = rng.random() * total
    for f, w in table:
        r -= w
        if r < 0:
            return f
    return table[-1][0]


def generate_model(seed: int) -> tuple[str, list[str]]:
    """The source of a standalone model file for ``seed`` and the list of its ops."""
    rng = random.Random(seed)
    b = _Builder(rng)
    batch = rng.choice((1, 1, 1, 2, 3))
    kind = rng.choices(("2d", "1d", "flat"), (6, 2, 2))[0]
    c = _width(rng)
    if kind == "2d":
        shape = (batch, c, rng.randint(1, 9), rng.randint(1, 9))
        table = SPATIAL_OPS
    elif kind == "1d":
        shape = (batch, c, rng.randint(1, 24))
        table = ONE_D_OPS
    else:
        shape = (batch, rng.choice(WIDTHS + (31, 64, 97)))
        table = FLAT_OPS
    b.vals["x"] = torch.zeros(shape)
    x = "x"
    outputs = []
    for _ in range(rng.randint(1, 6)):
        for _attempt in range(4):
            y = _pick(rng, table)(b, x)
            if y is not None:
                x = y
                break
    if rng.random() < 0.15 and x != "x":
        outputs.append(x)
    if len(b.vals[x].shape) > 2 and rng.random() < 0.6:
        y = _flatten_linear(b, x)
        if y is not None:
            x = y
            if rng.random() < 0.5:
                x = _act(b, x) or x
    if x == "x":                    # nothing drawn: one Linear on the flattened input
        x = _flatten_linear(b, x) or b.try_op("{m}({x})", {"x": x}, f"nn.Conv1d({shape[1]}, 2, 1)"
                                              if len(shape) == 3 else
                                              f"nn.Conv2d({shape[1]}, 2, 1)", "conv")
    if x not in outputs:
        outputs.append(x)
    scale = rng.choice((0.5, 1.0, 1.0, 2.0, 4.0))
    ret = outputs[0] if len(outputs) == 1 else "(" + ", ".join(outputs) + ")"
    init = "\n".join(f"        {s}" for s in b.inits) or "        pass"
    fwd = "\n".join(f"        {s}" for s in b.lines)
    src = f'''\
"""Random model of the fuzzer, seed {seed}: {' '.join(b.ops)}"""
import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
{init}

    def forward(self, x):
{fwd}
        return {ret}


def build():
    torch.manual_seed({seed})
    m = Net()
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
                mod.running_mean.normal_(0, 0.3)
                mod.running_var.uniform_(0.3, 2.0)
                mod.weight.normal_(1, 0.3)
                mod.bias.normal_(0, 0.3)
    return m.eval(), ({scale} * torch.randn{tuple(shape)},)
'''
    return src, b.ops


def golden_config(rng: random.Random) -> AccelConfig:
    """Any config the back end can take: ``validate()`` and the contract's rules (a C-tile row,
    ``cols`` int8, is whole AXI beats)."""
    axi = rng.choice(AXI_WIDTHS)
    ab = axi // 8
    rows = rng.choice((1, 2, 3, 4, 5, 7, 8, 8, 13, 16))
    cols = ab * rng.choice((1, 1, 2)) if ab > 8 else ab * rng.choice((1, 1, 2, 3, 4))
    spad = lambda lo, hi: 1 << rng.randint(lo, hi)  # noqa: E731
    return AccelConfig(rows=rows, cols=cols, axi_data_width=axi,
                       spad_a_depth=spad(8, 11), spad_b_depth=spad(8, 11),
                       spad_c_depth=spad(max(4, (2 * cols - 1).bit_length()), 9),
                       schedule=rng.choice(("static", "static", "dynamic", "calyx"))).validate()


def sim_config(rng: random.Random) -> AccelConfig:
    return rng.choice(SIM_POOL)


def generate(seed: int, sim: bool = False) -> Case:
    """The case of ``seed``: its model file and a config (``sim``: from :data:`SIM_POOL`)."""
    src, ops = generate_model(seed)
    rng = random.Random(f"config-{seed}")
    cfg = sim_config(rng) if sim else golden_config(rng)
    return Case(seed, src, cfg, ops)


def main(argv: list[str] | None = None) -> int:
    """``python bench/fuzzgen.py [--cases N] [--seed X] [--sim]``: draw N cases (seeds X..X+N-1)
    without compiling them, print one line per case, and end with a JSON line of what was
    drawn: ``cases``, ``ops`` (count per op), ``mean_ops``, ``distinct_configs``, ``seconds``."""
    import argparse
    import collections
    import json
    import sys
    import time

    ap = argparse.ArgumentParser(prog="bench/fuzzgen.py", description=main.__doc__.split(":")[0])
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sim", action="store_true", help="draw configs from SIM_POOL")
    a = ap.parse_args(argv)
    if a.cases < 1 or a.seed < 0:
        print("error: --cases must be at least 1 and --seed at least 0", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    ops, configs = collections.Counter(), set()
    for seed in range(a.seed, a.seed + a.cases):
        case = generate(seed, sim=a.sim)
        ops.update(case.ops)
        configs.add(repr(case.config))
        print(f"seed {seed}: {len(case.ops)} ops ({', '.join(case.ops)}); "
              f"{case.config.rows}x{case.config.cols} axi{case.config.axi_data_width}")
    print(json.dumps({"cases": a.cases, "ops": dict(sorted(ops.items())),
                      "mean_ops": round(sum(ops.values()) / a.cases, 2),
                      "distinct_configs": len(configs),
                      "seconds": round(time.monotonic() - t0, 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
