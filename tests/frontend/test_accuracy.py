"""The quantized integer model against float PyTorch, and the written artifacts."""

import json

import numpy as np
import pytest

from pycde_accel import frontend
from pycde_accel.frontend import models, reference


@pytest.mark.parametrize("name", sorted(models.BUILTINS))
@pytest.mark.parametrize("seed", [0, 1])
def test_builtin_top1_agreement(name, seed):
    acc = frontend.run(name, seed=seed).accuracy
    assert acc["num_rows"] >= 100
    assert acc["top1_agreement"] >= 0.95, acc


@pytest.mark.parametrize("spec", sorted(models.BUILTINS) + ["kitchen_sink"])
def test_integer_model_is_within_the_quantization_error(spec, model_file):
    """On calibration inputs (no clipping) each output is within a few output LSBs of torch."""
    if spec == "kitchen_sink":
        spec = str(model_file("kitchen_sink"))
    r = frontend.run(spec, eval_batches=1)
    x = [t.detach().double().numpy() for t in r.model.example_inputs]
    want = frontend.evaluate.torch_outputs(r.model.module, x)
    got = reference.run_dequantized(r.quantized, x)
    for name, w, q in zip(r.graph.outputs, want, got):
        err = np.abs(w - q).max()
        assert err <= 4 * r.quantized.scales[name], (name, err, r.quantized.scales[name])
        assert err <= 0.06 * np.abs(w).max()


def test_trace_has_every_layer_and_the_accumulators():
    r = frontend.run("lenet5", eval_batches=1)
    qm = r.quantized
    x = [t.detach().double().numpy() for t in r.model.example_inputs]
    trace = reference.run(qm, reference.quantize_inputs(qm, x))
    assert set(trace.values) == {n.name for n in qm.graph.nodes}
    for n in qm.graph.nodes:
        v = trace.values[n.name]
        assert v.shape == n.shape and v.min() >= -128 and v.max() <= 127
    conv = qm.graph.nodes[1]
    assert trace.acc[conv.name].shape == (28 * 28, 6)          # [N*OH*OW, OC] as on the array
    assert set(trace.acc) == {n.name for n in qm.graph.nodes if n.kind in ("conv2d", "linear", "matmul")}


def test_requantize_multipliers_are_below_one_and_normalized():
    for name in models.BUILTINS:
        qm = frontend.run(name, eval_batches=1).quantized
        for lq in qm.layers.values():
            if lq.m0 is not None:
                m0 = np.atleast_1d(lq.m0)
                assert ((m0 >= 1 << 30) & (m0 < 1 << 31)).all()
                assert (np.atleast_1d(lq.shift) <= 31).all()
            if lq.ma is not None:
                assert abs(lq.ma) < 1 << 15 and abs(lq.mb) < 1 << 15


def test_written_artifacts_are_deterministic_and_consistent(tmp_path):
    outs = []
    for i in range(2):
        d = tmp_path / str(i)
        d.mkdir()
        r = frontend.run("resblock", seed=3)
        design = frontend.write(r, d)
        (d / "design.json").write_text(json.dumps(design, indent=2, sort_keys=True))
        outs.append(d)
    for f in ("design.json", "weights.npz", "ir/00_linalg.mlir", "ir/00_linalg_float.mlir"):
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes(), f
    design = json.loads((outs[0] / "design.json").read_text())
    assert design["model"] == {"name": "resblock", "spec": "resblock"}
    assert design["accuracy"]["seed"] == 3
    assert design["ir"] == {"int8": "ir/00_linalg.mlir", "float": "ir/00_linalg_float.mlir"}
    nodes = {n["name"]: n for n in design["graph"]["nodes"]}
    assert [n["kind"] for n in design["graph"]["nodes"]] == \
        ["conv2d", "conv2d", "conv2d", "add", "maxpool2d", "reshape", "linear"]
    add = nodes["add"]
    assert set(add["quant"]) == {"ma", "mb", "shift"} and add["attrs"]["relu"] is True
    weights = np.load(outs[0] / "weights.npz")
    for lname, lq in r.quantized.layers.items():
        if lq.weight is not None:
            node = nodes[lname]
            w = weights[node["quant"]["weight"]]
            assert w.dtype == np.int8 and (w == lq.weight).all()
            assert node["quant"]["m0"] == lq.m0.tolist() and node["quant"]["shift"] == lq.shift.tolist()
            if lq.bias is not None:
                b = weights[node["quant"]["bias"]]
                assert b.dtype == np.int32 and (b == lq.bias).all()
    for f in ("ir/00_linalg.mlir", "ir/00_linalg_float.mlir"):
        ir = (outs[0] / f).read_text()
        assert "func.func @forward" in ir and "linalg." in ir and str(tmp_path) not in ir
    assert "xf32>" in (outs[0] / "ir/00_linalg_float.mlir").read_text()
    assert "xf32>" not in (outs[0] / "ir/00_linalg.mlir").read_text()
    assert str(tmp_path) not in (outs[0] / "design.json").read_text()


def test_output_folder_reloads_into_the_same_integer_model(tmp_path, model_file):
    """design.json + weights.npz alone give the reference the same int8 codes at every layer."""
    import dataclasses
    from pycde_accel.frontend import design
    r = frontend.run(str(model_file("kitchen_sink")), eval_batches=1)
    d = frontend.write(r, tmp_path)
    (tmp_path / "design.json").write_text(json.dumps(d, indent=2, sort_keys=True))
    loaded = design.load_quantized(tmp_path)
    assert loaded.scales == r.quantized.scales
    assert [dataclasses.replace(n, weight=None, bias=None) if hasattr(n, "weight") else n
            for n in loaded.graph.nodes] == \
        [dataclasses.replace(n, weight=None, bias=None) if hasattr(n, "weight") else n
         for n in r.quantized.graph.nodes]
    rng = np.random.default_rng(3)
    xq = [rng.integers(-128, 128, r.quantized.graph.node(n).shape) for n in r.quantized.graph.inputs]
    a, b = reference.run(r.quantized, xq), reference.run(loaded, xq)
    assert a.values.keys() == b.values.keys()
    for k in a.values:
        np.testing.assert_array_equal(a.values[k], b.values[k])

