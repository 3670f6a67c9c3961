"""lowering.postops: a model's post-op kernels with the quantized graph's shapes and parameters."""

from __future__ import annotations

import math

import numpy as np

from pycde_accel import frontend
from pycde_accel.lowering import postops


def test_resblock_post_ops_carry_shapes_and_parameters():
    qm = frontend.run("resblock", eval_batches=1).quantized
    found = postops.extract(qm)
    by_node = {p["node"]: (k, p) for k, p in found}
    assert [p["kernel"] for _, p in found] == ["requantize_relu_pc", "requantize_relu_pc",
                                                "requantize_pc", "residual_add", "maxpool",
                                                "requantize_pc"]
    k, p = by_node["conv2d"]
    assert k.n == math.prod(p["shape"]) == 8 * 8 * 8
    assert p["m0"] == [int(v) for v in qm.layers["conv2d"].m0]
    assert p["shift"] == [int(v) for v in qm.layers["conv2d"].shift]
    assert p["channels"] == 8 and p["channel_stride"] == 64
    assert k.params["relu"] and k.params["per_channel"]
    k, p = by_node["add"]
    lq = qm.layers["add"]
    assert (p["ma"], p["mb"], p["s"]) == ([lq.ma], [lq.mb], [int(lq.shift)])
    assert k.params["lo"] == 0  # the add's fused ReLU
    k, p = by_node["max_pool2d"]
    assert k.params["k"] == 4 and k.n == 8 * 4 * 4
    text = postops.module_text(qm)
    assert text.count("func.func @") == len(found)
    assert "pycde_accel.m0 = array<i64: " + ", ".join(
        str(int(v)) for v in np.asarray(qm.layers["conv2d"].m0)) + ">" in text
