"""The integer model as torch ops (what torch-mlir imports into ir/00_linalg.mlir) is bit-exact
with the numpy reference, and its linalg has no floating point."""

import re

import numpy as np
import pytest
import torch

from pycde_accel import frontend
from pycde_accel.frontend import intmodule, mlir_import, models, reference


def _runs(spec, model_file):
    if spec == "kitchen_sink":
        spec = str(model_file("kitchen_sink"))
    return frontend.run(spec, eval_batches=1)


@pytest.mark.parametrize("spec", sorted(models.BUILTINS) + ["kitchen_sink"])
def test_integer_module_is_bit_exact_with_the_reference(spec, model_file):
    r = _runs(spec, model_file)
    qm = r.quantized
    mod = intmodule.IntegerModule(qm).eval()
    rng = np.random.default_rng(7)
    batches = [reference.quantize_inputs(qm, frontend.loader.sample_inputs(r.model, rng)) for _ in range(3)]
    # and full-range int8 codes, which saturate inside the model
    batches.append([rng.integers(-128, 128, qm.graph.node(n).shape) for n in qm.graph.inputs])
    for xq in batches:
        want = reference.run(qm, xq).outputs
        with torch.no_grad():
            got = mod(*[torch.from_numpy(x.astype(np.int8)) for x in xq])
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert a.dtype == torch.int8
            np.testing.assert_array_equal(a.numpy().astype(np.int64), b)


@pytest.mark.parametrize("spec", ["resblock", "kitchen_sink"])
def test_integer_linalg_has_no_floating_point(spec, model_file):
    r = _runs(spec, model_file)
    text = mlir_import.import_integer_linalg(r.quantized)
    assert "func.func @forward" in text and "linalg.matmul" in text
    assert not re.search(r"\bf(16|32|64)\b|bf16|sitofp|fptosi", text)
    assert "loc(" not in text
    n_in = len(r.quantized.graph.inputs)
    sig = re.search(r"func\.func @forward\((.*?)\) ->", text).group(1)
    assert sig.count("xi8>") == n_in


@pytest.mark.parametrize("spec", sorted(models.BUILTINS) + ["kitchen_sink"])
def test_imported_integer_ir_runs_bit_exactly(spec, model_file):
    """ir/00_linalg.mlir itself, compiled by MLIR to LLVM and run, gives the reference's codes."""
    from pycde_accel.frontend import mlir_exec
    r = _runs(spec, model_file)
    qm = r.quantized
    fn = mlir_exec.CompiledFunction(mlir_import.import_integer_linalg(qm))
    rng = np.random.default_rng(11)
    batches = [reference.quantize_inputs(qm, frontend.loader.sample_inputs(r.model, rng)) for _ in range(2)]
    batches.append([rng.integers(-128, 128, qm.graph.node(n).shape) for n in qm.graph.inputs])
    for xq in batches:
        got = fn(*xq)
        want = reference.run(qm, xq).outputs
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert a.dtype == np.int8
            np.testing.assert_array_equal(a.astype(np.int64), b)
