"""Backend fixtures. Built-in models are run through the frontend once per test process."""

import functools

import numpy as np
import pytest

ARRAYS = [(1, 1), (2, 3), (4, 4), (8, 8)]


@functools.lru_cache(maxsize=None)
def frontend_result(spec: str):
    from pycde_accel import frontend
    return frontend.run(spec, eval_batches=1)


def example_inputs_q(fe):
    from pycde_accel.frontend import reference
    x = [t.detach().double().numpy() for t in fe.model.example_inputs]
    return reference.quantize_inputs(fe.quantized, x)


@pytest.fixture
def builtin():
    return frontend_result
