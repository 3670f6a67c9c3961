"""torch.export -> the layer graph (:mod:`pycde_accel.frontend.graph`), with BatchNorm folding.

The module (eval mode) is exported with ``torch.export.export`` at the example inputs' static
shapes; each ATen op of the exported graph maps to the node kind that captures it
(:data:`pycde_accel.ops.ATEN`; the op's ``capture`` hook builds the node through
:class:`CaptureContext`).
Dropout, clone, contiguous, alias and detach are identities in eval mode and vanish. A BatchNorm
whose input is a Conv2d or Linear used by nothing else is folded into it:
``W' = W * g / sqrt(var + eps)`` (per output channel), ``b' = (b - mean) * g / sqrt(var + eps) + beta``;
any other BatchNorm of an NCHW or (N, F) tensor is a per-channel affine layer of its own
(:mod:`pycde_accel.ops._affine`).
Nodes that do not lead to an output are dropped.

Anything else is an unsupported op, named with the module path (``features.3``, from the
exported graph's ``nn_module_stack``), the model's source line (``model.py:12``, the innermost
stack_trace frame outside torch; for code of an installed package the path inside it,
``torchvision/models/squeezenet.py:33``) and what is supported. An op hook refuses a node with
``raise cx.fail(n, what)`` (an :class:`UnsupportedOp`); capture records it, puts a placeholder
with the fx node's static shape in its place so that the nodes after it are captured too, and
raises one :class:`~pycde_accel.errors.UserError` at the end that lists every problem, one line
per distinct problem (op, count, module paths, source line): a user sees all of them at once.
A node inside a recurrent layer (``nn.LSTM``/``nn.GRU``/``nn.RNN``) is reported as that layer
(with the option its op refused, when the layer's own op did: ``ops/rnn.py``).
Symbolic (dynamic or data-dependent) shapes are refused at once.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from pathlib import Path
from typing import ClassVar

import numpy as np

from .. import ops
from ..errors import UserError
from ..ops import _affine
from ..ops.common import fold_batchnorm
from . import graph as g

#: what capture itself handles besides the ops' targets
_CAPTURE_ONLY = ("BatchNorm (folded into a Conv2d/Linear before it, else a per-channel affine), "
                 "dropout (identity)")


def supported() -> str:
    """The "supported:" list of capture errors: the registered ops, then what capture folds."""
    return ops.supported() + ", " + _CAPTURE_ONLY


def __getattr__(name: str):
    if name == "SUPPORTED":     # computed on use: the registry is complete only once ops is imported
        return supported()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_IDENTITY = {"aten.dropout.default", "aten.clone.default", "aten.contiguous.default",
             "aten.alias.default", "aten.detach.default", "aten.feature_dropout.default"}
_BATCHNORM = ("aten.batch_norm.default", "aten._native_batch_norm_legit_no_training.default")
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in ')
_TORCH_DIR = None


def _torch_dir() -> str:
    global _TORCH_DIR
    if _TORCH_DIR is None:
        import torch
        _TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    return _TORCH_DIR


_PACKAGE_DIRS = ("site-packages", "dist-packages")


def source_path(path: str) -> str:
    """How errors name a source file: the path inside its package for code in an installed
    package (``torchvision/models/squeezenet.py``), else the file name (``model.py``; never a
    machine path)."""
    parts = Path(os.path.abspath(path)).parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in _PACKAGE_DIRS:
            return "/".join(parts[i + 1:])
    return Path(path).name


def source_of(fx_node, fallback: str = "") -> str:
    """``file.py:LINE`` of the innermost stack frame outside torch (:func:`source_path`),
    else ``fallback``."""
    frames = _FRAME.findall(fx_node.meta.get("stack_trace") or "")
    for path, line in reversed(frames):
        if not os.path.abspath(path).startswith(_torch_dir()):
            return f"{source_path(path)}:{line}"
    return fallback


def module_of(fx_node) -> tuple[str, str]:
    """(module path such as ``features.3``, class name such as ``Sigmoid``) of an fx node."""
    stack = fx_node.meta.get("nn_module_stack") or {}
    if not stack:
        return "", ""
    path, cls = list(stack.values())[-1]
    cls_name = cls if isinstance(cls, str) else getattr(cls, "__qualname__", str(cls))
    path = re.sub(r"^L\['self'\]\.?", "", str(path))
    return path, cls_name.rsplit(".", 1)[-1]


def _where(fx_node, fallback: str) -> str:
    path, cls = module_of(fx_node)
    mod = f"module {path} ({cls})" if path else "the top-level forward"
    src = source_of(fx_node, fallback)
    return f"{mod}, {src}" if src else mod


#: torch.nn's recurrent layers: any node inside one is reported as the layer
_RNN = ("LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell")


class UnsupportedOp(UserError):
    """One node that capture cannot translate (what :meth:`CaptureContext.fail` returns):
    ``what`` (``aten.sigmoid.default``, ``conv2d with groups=2``), the node's module path and
    class, its source line."""

    def __init__(self, message: str, what: str, module: str, cls: str, source: str):
        super().__init__(message)
        self.what, self.module, self.cls, self.source = what, module, cls, source


class UnsupportedModel(UserError):
    """The refusal of a model with ops capture cannot translate (:meth:`Problems.error`)."""


def _rnn_of(fx_node) -> tuple[str, str] | None:
    """(module path, class) of the outermost recurrent layer the node belongs to, or None."""
    for path, cls in (fx_node.meta.get("nn_module_stack") or {}).values():
        name = cls if isinstance(cls, str) else getattr(cls, "__qualname__", str(cls))
        name = name.rsplit(".", 1)[-1]
        if name in _RNN:
            return re.sub(r"^L\['self'\]\.?", "", str(path)), name
    return None


def _modules_text(paths: list[tuple[str, str]]) -> str:
    """``module features.3 (Sigmoid)`` or ``modules a, b, c and 4 more (ReLU6)``."""
    classes = sorted({c for _, c in paths if c})
    cls = f" ({', '.join(classes)})" if classes else ""
    if len(paths) == 1:
        return f"module {paths[0][0]}{cls}" if paths[0][0] else "the top-level forward"
    names = [p or "the top-level forward" for p, _ in paths]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"modules {shown}{cls}"


def _merge(whats: list[str]) -> str:
    """Texts that differ only in their numbers as one: ``conv2d with groups=32,96,144``."""
    parts = [re.split(r"(\d+)", w) for w in whats]
    out = []
    for i, first in enumerate(parts[0]):
        vals = list(dict.fromkeys(p[i] for p in parts))
        out.append(",".join(vals) if i % 2 else first)
    return "".join(out)


class Problems:
    """The unsupported nodes of one capture, grouped into distinct problems: the same ``what``
    at the same source line is one problem with a count (the 35 ReLU6 of one torchvision block
    are one line); every node of one recurrent layer is that layer."""

    def __init__(self):
        self.groups: dict[tuple, dict] = {}
        self.first: UnsupportedOp | None = None

    def add(self, n, e: UnsupportedOp) -> None:
        self.first = self.first or e
        rnn = _rnn_of(n)
        if rnn is not None:
            key = ("rnn",) + rnn
            g = self.groups.setdefault(key, {"rnn": rnn, "source": e.source, "nodes": 0})
            if str(n.target) in ops.ATEN and "what" not in g:
                g["what"] = e.what      # the layer's own op refused an option: name it
        else:
            # "conv2d with groups=32" and "... groups=96" at one source line are one problem
            key = ("op", re.sub(r"\d+", "#", e.what), e.source)
            g = self.groups.setdefault(key, {"whats": [], "source": e.source, "paths": [],
                                             "nodes": 0})
            if e.what not in g["whats"]:
                g["whats"].append(e.what)
            if (e.module, e.cls) not in g["paths"]:
                g["paths"].append((e.module, e.cls))
        g["nodes"] += 1

    def __bool__(self) -> bool:
        return bool(self.groups)

    def lines(self) -> list[str]:
        """One line per distinct problem, in graph order."""
        out = []
        for g in self.groups.values():
            src = f", {g['source']}" if g["source"] else ""
            if "rnn" in g:
                path, cls = g["rnn"]
                where = f"module {path}" if path else "the top-level forward"
                out.append(f"nn.{cls} ({where}{src}): " +
                           (f"unsupported option: {g['what']}" if "what" in g else
                            "this recurrent layer is not supported"))
            else:
                count = f" x{g['nodes']}" if g["nodes"] > 1 else ""
                out.append(f"unsupported op {_merge(g['whats'])}{count} in "
                           f"{_modules_text(g['paths'])}{src}")
        return out

    def error(self) -> UserError:
        """One problem: its own line (as a single refusal always read); several: a line each
        after a head line, then what is supported."""
        lines = self.lines()
        if len(lines) == 1:
            g = next(iter(self.groups.values()))
            if "rnn" in g:
                return UnsupportedModel(lines[0])
            if g["nodes"] == 1:
                return UnsupportedModel(str(self.first))
            return UnsupportedModel(f"{lines[0]}; supported: {supported()}")
        nodes = sum(g["nodes"] for g in self.groups.values())
        head = f"{len(lines)} problems in the model ({nodes} nodes refused), one per line:"
        return UnsupportedModel("\n".join([head] + [f"  {line}" for line in lines] +
                                   [f"supported: {supported()}"]))


@dataclasses.dataclass
class Unsupported:
    """The placeholder of a refused fx node, with its static shape, so that the nodes after it
    can be captured (the graph is never used: capture raises at the end; with
    ``host_ops=True`` it stays in the graph as a node the host runs, ``what`` saying why)."""
    kind: ClassVar[str] = "unsupported"
    FUSES_RELU: ClassVar[bool] = False

    name: str
    inputs: tuple
    shape: tuple
    what: str = ""
    module: str = ""
    source: str = ""
    relu: bool = False

    def folds_batchnorm(self) -> bool:
        return False

    def macs(self, graph) -> int:
        return 0


def _static_shape(fx_node) -> tuple[int, ...] | None:
    val = fx_node.meta.get("val")
    shape = getattr(val, "shape", None)
    if shape is None:
        return None
    return tuple(int(s) for s in shape)


def _export(module, example_inputs):
    import torch
    try:
        with warnings.catch_warnings():   # torch's own deprecation chatter is not the user's business
            warnings.simplefilter("ignore")
            return torch.export.export(module, tuple(example_inputs))
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as e:
        msg = " ".join(str(e).split())
        if "data-dependent" in msg or "data dependent" in msg or "dynamic" in msg.lower() \
                or type(e).__name__ in ("GuardOnDataDependentSymNode", "ConstraintViolationError"):
            raise UserError(f"dynamic shapes are not supported: torch.export found a data-dependent "
                            f"shape ({type(e).__name__}: {msg[:200]})") from e
        raise UserError(f"torch.export failed on the model: {type(e).__name__}: {msg[:300]}") from e


def _check_static(ep, fallback: str) -> None:
    import torch
    for n in ep.graph.nodes:
        val = n.meta.get("val")
        vals = val if isinstance(val, (tuple, list)) else [val]
        for v in vals:
            dims = list(getattr(v, "shape", ())) if v is not None else []
            symbolic = isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)) or \
                any(not isinstance(d, int) for d in dims)
            if symbolic:
                raise UserError(f"dynamic shapes are not supported: {n.target} in {_where(n, fallback)} "
                                f"has a symbolic (data-dependent) shape {tuple(str(d) for d in dims) or str(v)}; "
                                f"all shapes must be static")


def capture(module, example_inputs, *, fallback_source: str = "", host_ops: bool = False,
            alias: dict | None = None) -> g.Graph:
    """Export ``module`` at ``example_inputs`` and translate it into a :class:`graph.Graph`.

    ``fallback_source`` (``file.py:LINE``) is named in errors about ops whose stack trace has no
    frame outside torch (e.g. a bare ``nn.Sequential``).

    ``host_ops`` (for ``partition``): refuse nothing that torch.export gives; every node capture
    cannot translate stays in the graph, in order, as an :class:`Unsupported` node (``what``:
    the reason) for the host to run. ``alias``: filled with fx node name -> graph node name.
    """
    import torch
    ep = _export(module.eval(), example_inputs)
    _check_static(ep, fallback_source)
    sig = ep.graph_signature
    consts: dict[str, np.ndarray] = {}
    for ph, fqn in list(sig.inputs_to_parameters.items()) + list(sig.inputs_to_buffers.items()):
        consts[ph] = ep.state_dict[fqn].detach().double().numpy()
    for ph, fqn in getattr(sig, "inputs_to_lifted_tensor_constants", {}).items():
        consts[ph] = ep.constants[fqn].detach().double().numpy()

    cx = CaptureContext(consts, fallback_source)
    cx.keep_placeholders = host_ops
    problems = Problems()
    user_index = 0
    for n in ep.graph.nodes:
        try:
            user_index = _capture_node(cx, n, user_index)
        except UnsupportedOp as e:
            if n.users or n.op != "call_function":      # a result nothing uses is no problem
                problems.add(n, e)                      # (MultiheadAttention's averaged weights)
            cx.placeholder(n)
            if isinstance(cx.nodes.get(cx.alias.get(n.name, "")), Unsupported):
                cx.nodes[cx.alias[n.name]].what = e.what
    if alias is not None:
        alias.update(cx.alias)
    if problems and not host_ops:
        raise problems.error()
    return _prune(cx.graph)


def _capture_node(cx: "CaptureContext", n, user_index: int) -> int:
    """Translate one fx node (an op hook refuses it with ``raise cx.fail(...)``); returns the
    index of the next model input."""
    import torch
    out = cx.graph
    if n.op == "placeholder":
        if n.name in cx.consts:
            return user_index
        shape = _static_shape(n)
        if shape is None:
            raise UserError(f"model input {n.name} is not a tensor; only tensor inputs are supported")
        cx.emit(ops.REGISTRY["input"](n.name, (), shape, index=user_index), n)
        out.inputs.append(n.name)
        return user_index + 1
    if n.op == "output":
        results = n.args[0] if isinstance(n.args[0], (tuple, list)) else (n.args[0],)
        for r in results:
            if not (isinstance(r, torch.fx.Node) and r.name in cx.alias):
                raise UserError(f"model output {r} is not a computed tensor; outputs must be activations")
            out.outputs.append(cx.alias[r.name])
        return user_index
    if n.op != "call_function":
        raise cx.fail(n, f"{n.op} {n.target}")
    t = str(n.target)
    if t in _IDENTITY:
        cx.alias[n.name] = cx.act(n, n.args[0])
    elif t in _BATCHNORM:
        _batchnorm(cx, n)
    elif t == "<built-in function getitem>" or t.endswith("getitem"):
        base = n.args[0]
        if isinstance(base, torch.fx.Node) and \
                isinstance(cx.nodes.get(cx.alias.get(base.name, "")), Unsupported):
            cx.placeholder(n)       # an output of a refused multi-output op: no problem of its own
        elif isinstance(base, torch.fx.Node) and base.name in cx.alias and n.args[1] == 0 and \
                str(base.target) == "aten._native_batch_norm_legit_no_training.default":
            cx.alias[n.name] = cx.alias[base.name]
        elif isinstance(base, torch.fx.Node) and base.name in cx.multi:
            cx.multi[base.name](cx, n, int(n.args[1]))
        else:
            raise cx.fail(n, "getitem on a multi-output op")
    elif t in ops.ATEN:
        ops.ATEN[t].capture(cx, n)
    elif t in _NAMED:
        raise cx.fail(n, _NAMED[t](cx, n))
    else:
        raise cx.fail(n, t)
    return user_index


#: targets that no op captures and that deserve a message of their own (a target an op module
#: registers is that op's: it never gets here)
_NAMED = {
    "aten.conv2d.padding": lambda cx, n: f"Conv2d with padding={cx.arg(n, 4, 'padding', 'same')!r} "
                                         f"(a string padding)",
    "aten.conv1d.padding": lambda cx, n: f"Conv1d with padding={cx.arg(n, 4, 'padding', 'same')!r} "
                                         f"(a string padding)",
    "aten.max_pool2d_with_indices.default": lambda cx, n: "MaxPool2d with return_indices=True",
}


class CaptureContext:
    """What an op's ``capture`` hook sees: the graph being built, the activations so far
    (``nodes``: graph node name -> node; ``alias``: fx node name -> graph node name) and helpers
    that read an fx node's operands or name it in an error."""

    def __init__(self, consts: dict, fallback_source: str):
        self.graph = g.Graph()
        self.nodes: dict[str, g.Node] = {}
        self.alias: dict[str, str] = {}
        self.consts = consts
        self.fallback_source = fallback_source
        #: fx node name of a multi-output op -> handler(cx, getitem fx node, index)
        self.multi: dict = {}
        #: refused nodes stay in the graph (capture's ``host_ops``)
        self.keep_placeholders = False

    def emit(self, node, n) -> None:
        """Add ``node`` to the graph as the value of the fx node ``n``."""
        self.graph.nodes.append(node)
        self.nodes[node.name] = node
        self.alias[n.name] = node.name

    def expander(self, n):
        """``add(kind, inputs, shape, **attrs)``, for an op captured as several nodes: appends a
        new node of ``kind`` named ``<n>_<kind><i>`` (i counts this op's nodes) with ``n``'s module
        and source, and returns its name."""
        common, count = self.common(n), [0]

        def add(kind, inputs, shape, **kw):
            count[0] += 1
            node = ops.REGISTRY[kind](f"{n.name}_{kind}{count[0]}", tuple(inputs),
                                      tuple(int(v) for v in shape), **common, **kw)
            self.graph.nodes.append(node)
            self.nodes[node.name] = node
            return node.name
        return add

    def fail(self, n, what: str) -> UnsupportedOp:
        """The error for ``n`` (the hook raises it; capture records it and goes on)."""
        path, cls = module_of(n)
        return UnsupportedOp(f"unsupported op {what} in {_where(n, self.fallback_source)}; "
                             f"supported: {supported()}", what, path, cls,
                             source_of(n, self.fallback_source))

    def placeholder(self, n) -> None:
        """Stand in for the refused fx node ``n`` (unless a hook emitted it before refusing)."""
        if n.name in self.alias or n.op != "call_function":
            return
        ins = tuple(self.alias[a.name] for a in n.all_input_nodes if a.name in self.alias)
        node = Unsupported(n.name, ins, _static_shape(n) or ())
        self.nodes[node.name] = node
        self.alias[n.name] = node.name
        if self.keep_placeholders:
            self.graph.nodes.append(node)

    def is_act(self, a) -> bool:
        import torch
        return isinstance(a, torch.fx.Node) and a.name in self.alias

    def act(self, n, a) -> str:
        """The graph node name of the activation operand ``a`` of ``n``."""
        if self.is_act(a):
            return self.alias[a.name]
        raise self.fail(n, f"{n.target} with a constant or parameter operand")

    def const(self, n, a) -> np.ndarray | None:
        """The float64 value of the parameter/buffer operand ``a`` of ``n`` (None for None)."""
        import torch
        if a is None:
            return None
        if isinstance(a, torch.fx.Node) and a.name in self.consts:
            return self.consts[a.name]
        raise self.fail(n, f"{n.target} with a computed weight")

    def arg(self, n, i: int, name: str, default=None):
        """Argument ``i`` of ``n``, else its keyword ``name``, else ``default``."""
        return n.args[i] if len(n.args) > i else n.kwargs.get(name, default)

    def shape(self, n) -> tuple[int, ...] | None:
        return _static_shape(n)

    def common(self, n) -> dict:
        """The ``module`` and ``source`` of the node made from ``n``."""
        path, _ = module_of(n)
        return dict(module=path, source=source_of(n, self.fallback_source))


def _batchnorm(cx: CaptureContext, n) -> None:
    """Fold an inference BatchNorm into the node that produces its input."""
    args = list(n.args)
    src = cx.act(n, args[0])
    prod = cx.nodes[src]
    if isinstance(prod, Unsupported):       # a BatchNorm after a refused op: no problem of its own
        cx.alias[n.name] = src
        return
    sole = len(args[0].users) == 1
    if str(n.target) == "aten.batch_norm.default":
        gamma, beta, mean, var, eps = args[1], args[2], args[3], args[4], args[7]
    else:
        gamma, beta, mean, var, eps = args[1], args[2], args[3], args[4], args[6]
    if mean is None or var is None:
        raise cx.fail(n, "BatchNorm without running statistics (track_running_stats=False)")
    mean, var = cx.const(n, mean), cx.const(n, var)
    c = mean.shape[0]
    gamma = np.ones(c) if gamma is None else cx.const(n, gamma)
    beta = np.zeros(c) if beta is None else cx.const(n, beta)
    scale = gamma / np.sqrt(var + float(eps))
    if not prod.folds_batchnorm() or not sole:
        # standalone: the per-channel affine map as its own layer
        shape = prod.shape
        exp = (slice(None),) + (None,) * (len(shape) - 2) if len(shape) >= 2 else (slice(None),)
        if len(shape) not in (2, 4):
            raise cx.fail(n, f"BatchNorm on a rank-{len(shape)} tensor that does not follow a "
                             f"Conv2d or Linear (a standalone BatchNorm needs NCHW or (N, F))")
        _affine.emit(cx, n, src, scale[exp], (beta - mean * scale)[exp], "BatchNorm")
        return
    fold_batchnorm(prod, scale, mean, beta)
    cx.alias[n.name] = src


def _prune(graph: g.Graph) -> g.Graph:
    live = set(graph.outputs)
    for node in reversed(graph.nodes):
        if node.name in live:
            live.update(node.inputs)
    graph.nodes = [n for n in graph.nodes if n.name in live or n.name in graph.inputs]
    return graph
