"""torch.export -> the layer graph (:mod:`pycde_accel.frontend.graph`), with BatchNorm folding.

The module (eval mode) is exported with ``torch.export.export`` at the example inputs' static
shapes; each ATen op of the exported graph maps to one node kind (see :data:`SUPPORTED`).
Dropout, clone, contiguous, alias and detach are identities in eval mode and vanish. A BatchNorm
whose input is a Conv2d or Linear used by nothing else is folded into it:
``W' = W * g / sqrt(var + eps)`` (per output channel), ``b' = (b - mean) * g / sqrt(var + eps) + beta``.
Nodes that do not lead to an output are dropped.

Anything else is a :class:`~pycde_accel.errors.UserError` naming the op, the module path
(``features.3``, from the exported graph's ``nn_module_stack``), the model's source line
(``model.py:12``, the innermost stack_trace frame outside torch) and what is supported. Symbolic
(dynamic or data-dependent) shapes are refused the same way.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import numpy as np

from ..errors import UserError
from . import graph as g

SUPPORTED = ("Linear, Conv2d (groups=1, dilation=1), ReLU, MaxPool2d, add of two activations, "
             "flatten/reshape/view/squeeze/unsqueeze, transpose/permute, matmul/bmm of two "
             "activations, BatchNorm after Conv2d/Linear (folded), dropout (identity)")

_IDENTITY = {"aten.dropout.default", "aten.clone.default", "aten.contiguous.default",
             "aten.alias.default", "aten.detach.default", "aten.feature_dropout.default"}
_RESHAPE = {"aten.flatten.using_ints", "aten.view.default", "aten.reshape.default",
            "aten._unsafe_view.default", "aten.unflatten.int", "aten.squeeze.dim",
            "aten.squeeze.dims", "aten.squeeze.default", "aten.unsqueeze.default"}
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in ')
_TORCH_DIR = None


def _torch_dir() -> str:
    global _TORCH_DIR
    if _TORCH_DIR is None:
        import torch
        _TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    return _TORCH_DIR


def source_of(fx_node, fallback: str = "") -> str:
    """``file.py:LINE`` of the innermost stack frame outside torch, else ``fallback``."""
    frames = _FRAME.findall(fx_node.meta.get("stack_trace") or "")
    for path, line in reversed(frames):
        if not os.path.abspath(path).startswith(_torch_dir()):
            return f"{Path(path).name}:{line}"
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


def _pair(v) -> tuple[int, int]:
    if isinstance(v, int):
        return (v, v)
    v = list(v)
    return (int(v[0]), int(v[0])) if len(v) == 1 else (int(v[0]), int(v[1]))


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


def capture(module, example_inputs, *, fallback_source: str = "") -> g.Graph:
    """Export ``module`` at ``example_inputs`` and translate it into a :class:`graph.Graph`.

    ``fallback_source`` (``file.py:LINE``) is named in errors about ops whose stack trace has no
    frame outside torch (e.g. a bare ``nn.Sequential``).
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

    out = g.Graph()
    nodes: dict[str, g.Node] = {}          # graph node name -> node
    alias: dict[str, str] = {}             # fx node name -> graph node name
    user_index = 0

    def add(node: g.Node) -> None:
        out.nodes.append(node)
        nodes[node.name] = node

    def fail(n, what: str) -> UserError:
        return UserError(f"unsupported op {what} in {_where(n, fallback_source)}; supported: {SUPPORTED}")

    def act(n, a) -> str:
        if isinstance(a, torch.fx.Node) and a.name in alias:
            return alias[a.name]
        raise fail(n, f"{n.target} with a constant or parameter operand")

    def const(n, a) -> np.ndarray | None:
        if a is None:
            return None
        if isinstance(a, torch.fx.Node) and a.name in consts:
            return consts[a.name]
        raise fail(n, f"{n.target} with a computed weight")

    for n in ep.graph.nodes:
        if n.op == "placeholder":
            if n.name in consts:
                continue
            shape = _static_shape(n)
            if shape is None:
                raise UserError(f"model input {n.name} is not a tensor; only tensor inputs are supported")
            add(g.Input(n.name, (), shape, index=user_index))
            out.inputs.append(n.name)
            alias[n.name] = n.name
            user_index += 1
            continue
        if n.op == "output":
            results = n.args[0] if isinstance(n.args[0], (tuple, list)) else (n.args[0],)
            for r in results:
                if not (isinstance(r, torch.fx.Node) and r.name in alias):
                    raise UserError(f"model output {r} is not a computed tensor; outputs must be activations")
                out.outputs.append(alias[r.name])
            continue
        if n.op != "call_function":
            raise fail(n, f"{n.op} {n.target}")
        t = str(n.target)
        args = list(n.args)
        kw = dict(n.kwargs)
        shape = _static_shape(n)
        path, _ = module_of(n)
        common = dict(module=path, source=source_of(n, fallback_source))

        def arg(i, name, default=None):
            return args[i] if len(args) > i else kw.get(name, default)

        if t in _IDENTITY:
            alias[n.name] = act(n, args[0])
        elif t == "aten.linear.default":
            w = const(n, args[0 + 1])
            add(g.Linear(n.name, (act(n, args[0]),), shape, weight=w, bias=const(n, arg(2, "bias")), **common))
            alias[n.name] = n.name
        elif t in ("aten.conv2d.default", "aten.convolution.default"):
            if t == "aten.convolution.default":
                stride, padding, dilation, transposed, groups = args[3], args[4], args[5], args[6], args[8]
                if transposed:
                    raise fail(n, "conv_transpose2d")
            else:
                stride, padding = arg(3, "stride", 1), arg(4, "padding", 0)
                dilation, groups = arg(5, "dilation", 1), arg(6, "groups", 1)
            if isinstance(padding, str):
                raise fail(n, f"conv2d with padding={padding!r} (give integer padding)")
            if groups != 1:
                raise fail(n, f"conv2d with groups={groups}")
            if _pair(dilation) != (1, 1):
                raise fail(n, f"conv2d with dilation={list(_pair(dilation))}")
            w = const(n, args[1])
            if w.ndim != 4:
                raise fail(n, f"conv with a {w.ndim - 2}-d kernel")
            add(g.Conv2d(n.name, (act(n, args[0]),), shape, weight=w, bias=const(n, arg(2, "bias")),
                         stride=_pair(stride), padding=_pair(padding), **common))
            alias[n.name] = n.name
        elif t in ("aten.batch_norm.default", "aten._native_batch_norm_legit_no_training.default"):
            src = act(n, args[0])
            prod = nodes[src]
            sole = len(args[0].users) == 1
            if not isinstance(prod, (g.Linear, g.Conv2d)) or not sole or \
                    (isinstance(prod, g.Linear) and len(prod.shape) != 2):
                raise fail(n, "BatchNorm that does not directly follow a Conv2d or 2-d Linear "
                              "(used by nothing else)")
            if t == "aten.batch_norm.default":
                gamma, beta, mean, var, eps = args[1], args[2], args[3], args[4], args[7]
            else:
                gamma, beta, mean, var, eps = args[1], args[2], args[3], args[4], args[6]
            if mean is None or var is None:
                raise fail(n, "BatchNorm without running statistics (track_running_stats=False)")
            mean, var = const(n, mean), const(n, var)
            c = mean.shape[0]
            gamma = np.ones(c) if gamma is None else const(n, gamma)
            beta = np.zeros(c) if beta is None else const(n, beta)
            scale = gamma / np.sqrt(var + float(eps))
            prod.weight = prod.weight * scale.reshape((-1,) + (1,) * (prod.weight.ndim - 1))
            b0 = prod.bias if prod.bias is not None else np.zeros(c)
            prod.bias = (b0 - mean) * scale + beta
            alias[n.name] = src
        elif t == "<built-in function getitem>" or t.endswith("getitem"):
            base = args[0]
            if isinstance(base, torch.fx.Node) and base.name in alias and args[1] == 0 and \
                    str(base.target) == "aten._native_batch_norm_legit_no_training.default":
                alias[n.name] = alias[base.name]
            else:
                raise fail(n, "getitem on a multi-output op")
        elif t in ("aten.relu.default", "aten.relu_.default"):
            add(g.ReLU(n.name, (act(n, args[0]),), shape, **common))
            alias[n.name] = n.name
        elif t == "aten.max_pool2d.default":
            kernel = _pair(args[1])
            stride = arg(2, "stride", None)
            stride = kernel if not stride else _pair(stride)
            padding = _pair(arg(3, "padding", 0))
            if _pair(arg(4, "dilation", 1)) != (1, 1) or arg(5, "ceil_mode", False):
                raise fail(n, "max_pool2d with dilation or ceil_mode")
            add(g.MaxPool2d(n.name, (act(n, args[0]),), shape, kernel=kernel, stride=stride,
                            padding=padding, **common))
            alias[n.name] = n.name
        elif t in ("aten.add.Tensor", "aten.add_.Tensor"):
            if not all(isinstance(a, torch.fx.Node) and a.name in alias for a in args[:2]):
                raise fail(n, f"{t} with a constant operand (only the sum of two activations)")
            if kw.get("alpha", 1) != 1:
                raise fail(n, f"{t} with alpha={kw['alpha']}")
            a, b = act(n, args[0]), act(n, args[1])
            if nodes[a].shape != nodes[b].shape:
                raise fail(n, f"{t} with broadcasting {nodes[a].shape} + {nodes[b].shape}")
            add(g.Add(n.name, (a, b), shape, **common))
            alias[n.name] = n.name
        elif t in _RESHAPE:
            add(g.Reshape(n.name, (act(n, args[0]),), shape, **common))
            alias[n.name] = n.name
        elif t in ("aten.transpose.int", "aten.permute.default", "aten.t.default"):
            x = act(n, args[0])
            rank = len(nodes[x].shape)
            if t == "aten.permute.default":
                perm = [int(d) % rank for d in args[1]]
            else:
                d0, d1 = (int(args[1]) % rank, int(args[2]) % rank) if t == "aten.transpose.int" else (0, 1)
                perm = list(range(rank))
                perm[d0], perm[d1] = perm[d1], perm[d0]
            add(g.Transpose(n.name, (x,), shape, perm=tuple(perm), **common))
            alias[n.name] = n.name
        elif t in ("aten.matmul.default", "aten.bmm.default", "aten.mm.default"):
            if not all(isinstance(a, torch.fx.Node) and a.name in alias for a in args[:2]):
                raise fail(n, f"{t} with a weight operand (use nn.Linear for weights)")
            a, b = act(n, args[0]), act(n, args[1])
            sa, sb = nodes[a].shape, nodes[b].shape
            if len(sa) < 2 or len(sa) != len(sb) or sa[:-2] != sb[:-2]:
                raise fail(n, f"{t} with broadcasting or 1-d operands {sa} @ {sb}")
            add(g.MatMul(n.name, (a, b), shape, **common))
            alias[n.name] = n.name
        else:
            raise fail(n, t)
    return _prune(out)


def _prune(graph: g.Graph) -> g.Graph:
    live = set(graph.outputs)
    for node in reversed(graph.nodes):
        if node.name in live:
            live.update(node.inputs)
    graph.nodes = [n for n in graph.nodes if n.name in live or isinstance(n, g.Input)]
    return graph
