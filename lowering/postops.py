"""A model's post-op work, extracted from the frontend's quantized graph as kernels.

The architecture puts every matmul-like layer (Linear, Conv2d, MatMul) on the systolic core;
only the work around them goes through CIRCT. :func:`extract` walks the quantized graph
(``pycde_accel.frontend.run(model).quantized``) and returns one :class:`~.kernels.Kernel` per
piece of that work, with the node's shape and integer parameters:

* Linear / Conv2d: ``requantize_pc`` of its int32 accumulator (``relu`` when a ReLU is fused):
  ``n`` = the output's element count; ``m0``/``shift`` are per output channel and streamed
  next to each element (element ``i`` belongs to channel ``(i // channel_stride) % channels``);
* MatMul (between activations): ``requantize`` with its per-tensor scalar ``m0``/``shift``;
* Add: ``residual_add`` (clamp to [0, 127] with a fused ReLU) with scalar ``ma``/``mb``/``s``;
* MaxPool2d: ``maxpool`` with ``k = kh*kw`` taps per output element (``window``, ``stride``,
  ``padding`` of the pool recorded);
* a standalone ReLU: ``clamp`` to [0, 127].

Reshape/Transpose move data only (the DMA's addressing) and give no kernel.

:func:`module_text` puts them into one linalg module (one ``func.func @<node>_<kernel>`` each,
the parameters as ``pycde_accel.*`` function attributes); that is the model route's
``01_postops`` stage (:data:`.pipeline.MODEL_ROUTES`).
"""

from __future__ import annotations

import math
import re

from . import kernels


def _ident(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _ints(v) -> list[int]:
    if v is None:
        return []
    try:
        return [int(x) for x in v]
    except TypeError:
        return [int(v)]


def extract(qm) -> list[tuple[kernels.Kernel, dict]]:
    """(kernel, parameters) per post-op of the quantized model ``qm``, in graph order."""
    from ..frontend import graph as g

    out = []
    for node in qm.graph.nodes:
        n = math.prod(node.shape)
        lq = qm.layers.get(node.name)
        base = _ident(node.name)
        if isinstance(node, (g.Linear, g.Conv2d)):
            kind = "requantize_relu_pc" if node.relu else "requantize_pc"
            channels = int(node.shape[1])
            stride = math.prod(node.shape[2:]) if isinstance(node, g.Conv2d) else 1
            k = kernels.requantize(n, relu=node.relu, per_channel=True, name=f"{base}_{kind}")
            params = {"m0": _ints(lq.m0), "shift": _ints(lq.shift), "channels": channels,
                      "channel_stride": stride}
        elif isinstance(node, g.MatMul):
            kind = "requantize_relu" if node.relu else "requantize"
            k = kernels.requantize(n, relu=node.relu, name=f"{base}_{kind}")
            params = {"m0": _ints(lq.m0), "shift": _ints(lq.shift)}
        elif isinstance(node, g.Add):
            kind = "residual_add"
            k = kernels.residual_add(n, lo=0 if node.relu else -128, hi=127, name=f"{base}_{kind}")
            params = {"ma": [int(lq.ma)], "mb": [int(lq.mb)], "s": [int(lq.shift)]}
        elif isinstance(node, g.MaxPool2d):
            kind = "maxpool"
            taps = int(node.kernel[0]) * int(node.kernel[1])
            k = kernels.maxpool(n, k=taps, name=f"{base}_{kind}")
            params = {"window": list(node.kernel), "stride": list(node.stride),
                      "padding": list(node.padding)}
        elif isinstance(node, g.ReLU):
            kind = "clamp"
            k = kernels.clamp(n, lo=0, hi=127, name=f"{base}_{kind}")
            params = {}
        else:
            continue
        params = {"node": node.name, "kernel": kind, "shape": list(node.shape), **params}
        out.append((k, params))
    return out


def _attr(v) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v} : i64"
    return "array<i64" + (": " + ", ".join(str(int(x)) for x in v) if v else "") + ">"


def module_text(qm) -> str:
    """The post-op kernels of ``qm`` as one linalg-on-tensors module (stage ``01_postops``)."""
    found = extract(qm)
    if not found:
        return "module {\n}\n"
    maps = {"#id = affine_map<(d0) -> (d0)>"}
    funcs = []
    for k, params in found:
        text = k.linalg()
        body = text.split("module {\n", 1)[1].rsplit("}\n", 1)[0]
        attrs = ", ".join(f"pycde_accel.{key} = {_attr(v)}" for key, v in params.items())
        head, rest = body.split(" {\n", 1)
        funcs.append(f"{head} attributes {{{attrs}}} {{\n{rest}")
    return "\n".join(sorted(maps)) + "\nmodule {\n" + "\n".join(funcs) + "}\n"
