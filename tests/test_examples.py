"""Every model file in examples/ goes through the frontend and the back end, bit-exact."""

from pathlib import Path

import numpy as np
import pytest

from pycde_accel import frontend
from pycde_accel.backend import cmdexec, compile_program, executor
from pycde_accel.config import AccelConfig
from pycde_accel.frontend import reference

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_compiles_bit_exact(path):
    fe = frontend.run(str(path), seed=0, eval_batches=10)
    assert fe.accuracy["top1_agreement"] >= 0.9
    compiled = compile_program(fe.quantized, AccelConfig(rows=4, cols=4, axi_data_width=32))
    x = reference.quantize_inputs(
        fe.quantized, [t.detach().double().numpy() for t in fe.model.example_inputs])
    want = reference.run(fe.quantized, x)
    for run in (executor.run, cmdexec.run):        # the layer descriptors and the commands
        got, _ = run(compiled, x)
        assert len(got) == len(want.outputs) >= 1
        for o, r in zip(got, want.outputs):
            assert o.shape == r.shape and np.array_equal(o, r)
