"""The frontend's part of ``design.json`` and the integer weights in ``weights.npz``.

design.json keys written here (all integers exact; floats are the scales used to derive them):

* ``model``: ``{"name", "spec"}`` (file name only, never a directory).
* ``graph``: ``inputs``/``outputs`` (``name``, ``shape``, ``scale``) and ``nodes`` in topological
  order, each ``{"name", "kind", "inputs", "shape", "module", "source", "attrs", "scale", "quant"}``
  where ``scale`` is the output tensor's activation scale and ``quant`` (each op's
  ``quant_json`` hook, :mod:`pycde_accel.ops`) holds:
  linear/conv2d ``{"weight": npz key, "bias": npz key or null, "m0": [per channel], "shift": [...]}``;
  matmul ``{"m0", "shift"}``; add ``{"ma", "mb", "shift"}``; others ``{}``.
* ``quantization``: the scheme in words, the weights file, the primitive functions' names.

:func:`load_quantized` reads an output folder back into a :class:`QuantizedModel`.

weights.npz: ``<node>.weight`` int8 (torch layout: linear ``[out, in]``, conv2d
``[OC, C, KH, KW]``), ``<node>.bias`` int32. It is written with fixed zip timestamps, so it is
byte-identical from run to run, like design.json.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np

from .. import ops
from . import graph as g
from .quantize import QuantizedModel

SCHEME = ("int8 symmetric (no zero points); per-output-channel weight scales, per-tensor activation "
          "scales (max-abs calibration); int32 bias; requantize = TFLite MultiplyByQuantizedMultiplier "
          "with m0 in [2^30, 2^31) and a right shift in [0, 31] per output channel (high-mul ties to "
          "+inf, shift ties away from zero); fused ReLU clamps "
          "to [0, 127] else [-128, 127]; residual add = sat8(RoundingDivideByPOT(a*ma + b*mb, shift))")


def design_dict(qm: QuantizedModel, model_name: str, model_spec: str) -> dict:
    graph = qm.graph
    nodes = []
    for n in graph.nodes:
        if n.name in graph.inputs:
            continue
        quant = n.quant_json(qm.layers.get(n.name))
        nodes.append({"name": n.name, "kind": n.kind, "inputs": list(n.inputs), "shape": list(n.shape),
                      "module": n.module, "source": n.source, "attrs": n.attrs(),
                      "scale": qm.scales[n.name], "quant": quant})

    def io_entry(name):
        return {"name": name, "shape": list(graph.node(name).shape), "scale": qm.scales[name]}

    return {
        "model": {"name": model_name, "spec": model_spec},
        "graph": {"inputs": [io_entry(i) for i in graph.inputs],
                  "outputs": [io_entry(o) for o in graph.outputs],
                  "nodes": nodes},
        "quantization": {
            "scheme": SCHEME,
            "weights": "weights.npz",
            "input_quantization": "q = clip(rint(x / scale), -128, 127), rint ties to even",
            "output_dequantization": "x = q * scale",
            "layouts": {
                "activations": "row-major in the node's shape (NCHW for images), as torch",
                "linear": "acc[M, N] = x.reshape(M, K) @ weight.T + bias; weight [N, K] int8",
                "conv2d": "acc[N*OH*OW, OC] = im2col(x) @ weight.reshape(OC, C*KH*KW).T + bias; "
                          "im2col rows in (n, oh, ow) order, columns in (c, kh, kw) order, zero "
                          "padding; result reshaped (n, oh, ow, oc) and transposed to NCHW",
                "matmul": "acc[..., M, N] = a[..., M, K] @ b[..., K, N], per-tensor m0/shift",
                "requantize": "per output channel n (the last axis of acc): m0[n], shift[n]",
            },
            "primitives": {
                "requantize": "pycde_accel.frontend.quantize.requantize",
                "residual_add": "pycde_accel.frontend.quantize.residual_add",
                "reference": "pycde_accel.frontend.reference.run",
            },
        },
    }


def weight_arrays(qm: QuantizedModel) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for n in qm.graph.nodes:
        arrays.update(n.weight_arrays(qm.layers.get(n.name)))
    return arrays


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``numpy.savez`` format (``numpy.load`` reads it) with fixed timestamps and sorted members."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for key in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[key]), allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())


def read_npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def load_quantized(out_dir: Path) -> QuantizedModel:
    """Rebuild the quantized model from ``design.json`` + ``weights.npz`` in an output folder, so
    that the integer reference can run from the folder alone (e.g. in simulation):
    ``reference.run(load_quantized(out), int8_inputs)``. Float weights and biases are not
    stored: linear/conv2d nodes carry the int8 codes as their ``weight`` and no ``bias``, so the
    result is for integer use only (not for :mod:`floateval` or re-quantization)."""
    import json
    from .quantize import LayerQuant
    out_dir = Path(out_dir)
    d = json.loads((out_dir / "design.json").read_text())
    arrays = read_npz(out_dir / d["quantization"]["weights"])
    gd = d["graph"]
    nodes: list[g.Node] = []
    scales: dict[str, float] = {}
    layers: dict[str, LayerQuant] = {}
    for i, e in enumerate(gd["inputs"]):
        nodes.append(ops.REGISTRY["input"](e["name"], (), tuple(e["shape"]), index=i))
        scales[e["name"]] = e["scale"]
    for e in gd["nodes"]:
        common = dict(name=e["name"], inputs=tuple(e["inputs"]), shape=tuple(e["shape"]),
                      module=e["module"], source=e["source"])
        cls = ops.REGISTRY.get(e["kind"])
        if cls is None or e["kind"] == "input":
            raise ValueError(f"design.json: unknown node kind {e['kind']!r}")
        node, lq = cls.from_json(common, e["attrs"], e["quant"], arrays)
        nodes.append(node)
        if lq is not None:
            layers[e["name"]] = lq
        scales[e["name"]] = e["scale"]
    graph = g.Graph(nodes=nodes, inputs=[e["name"] for e in gd["inputs"]],
                    outputs=[e["name"] for e in gd["outputs"]])
    return QuantizedModel(graph=graph, scales=scales, layers=layers)
