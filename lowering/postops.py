"""A model's post-op work, extracted from the frontend's quantized graph as kernels.

The architecture puts every matmul-like layer (Linear, Conv2d, MatMul) on the systolic core;
only the work around them goes through CIRCT. :func:`extract` walks the quantized graph
(``pycde_accel.frontend.run(model).quantized``) and returns one :class:`~.kernels.Kernel` per
piece of that work, with the node's shape and integer parameters, as each op's ``postop`` hook
(:mod:`pycde_accel.ops`) selects it; for the built-in ops:

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

import re

from . import kernels


def _ident(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def extract(qm) -> list[tuple[kernels.Kernel, dict]]:
    """(kernel, parameters) per post-op of the quantized model ``qm``, in graph order (each
    node's ``postop`` hook, :mod:`pycde_accel.ops`)."""
    out = []
    for node in qm.graph.nodes:
        found = node.postop(qm.layers.get(node.name), _ident(node.name))
        if found is None:
            continue
        k, kind, params = found
        out.append((k, {"node": node.name, "kernel": kind, "shape": list(node.shape), **params}))
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
