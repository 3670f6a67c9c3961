"""The PyTorch models of hls4ml's test suite (``tests/hls4ml_models``: every model its
``test/pytest/*pytorch*.py`` files convert and check numerically, LayerNorm and RNNs included)
through the frontend and the back end on the default config: both golden executors bit-exact
with the integer reference here, Verilator bit-exact in the slow set (one accelerator build for
all of them).

The models that do not compile yet are ``FAILURES``, each with the first line of its error (up
to the "supported:" list); every other model must compile, and at least ``MIN_COMPILED`` of
``len(MODELS)`` do. A model of ``FAILURES`` that compiles is checked like the others.

    python -m pytest tests/test_hls4ml_models.py -n 1 -rP           # share, failures, golden
    python -m pytest tests/test_hls4ml_models.py -n 1 -m slow       # Verilator
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pycde_accel
from pycde_accel.backend import cmdexec, executor
from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError
from pycde_accel.frontend import reference

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hls4ml_models import MODELS  # noqa: E402

CFG = AccelConfig()

#: models that do not compile yet -> the start of their error line
FAILURES = {
    # nearest upsampling by 2.4 along W: the gather engine replicates by integer factors only
    "upsampling/2d_fractional": "unsupported op aten.upsample_nearest2d.vec from (1, 4, 6, 8) to "
                                "(1, 4, 6, 19) (only integer factors) in module 0 "
                                "(UpsamplingNearest2d), container.py:59",
}

#: of len(MODELS) in-scope models, at least this many compile (and are bit-exact)
MIN_COMPILED = 54


def _error_line(e: Exception) -> str:
    return str(e).splitlines()[0].split("; supported:")[0]


@pytest.fixture(scope="module")
def designs():
    """name -> Design, or the error line of the UserError that refused the model."""
    out = {}
    for name, build in MODELS.items():
        module, inputs = build()
        try:
            out[name] = pycde_accel.compile(module, inputs, CFG)
        except UserError as e:
            out[name] = _error_line(e)
    return out


def test_in_scope_models_are_the_ones_listed():
    assert len(MODELS) == 55
    assert set(FAILURES) <= set(MODELS)


def test_share_that_compiles(designs):
    failed = {n: d for n, d in designs.items() if isinstance(d, str)}
    print(f"\n{len(designs) - len(failed)} of {len(designs)} hls4ml PyTorch test models compile; "
          f"not yet:")
    for n, line in failed.items():
        print(f"  {n}: {line}")
    assert len(designs) - len(failed) >= MIN_COMPILED, failed


@pytest.mark.parametrize("name", list(MODELS))
def test_golden_executors_bit_exact(designs, name):
    d = designs[name]
    if isinstance(d, str):
        # a refusal is allowed only where it is listed, with the error it is listed with
        assert name in FAILURES, f"{name} does not compile: {d}"
        assert d.startswith(FAILURES[name]), d
        return
    qm = d.frontend.quantized
    xs = [t.detach().double().numpy() for t in d.frontend.model.example_inputs]
    rng = np.random.default_rng(1)
    batches = [reference.quantize_inputs(qm, xs)]
    batches += [[rng.integers(-128, 128, size=np.shape(x)) for x in batches[0]] for _ in range(2)]
    for xq in batches:
        want = reference.run(qm, xq).outputs
        got_d, _ = executor.run(d.compiled, xq)
        got_c, _ = cmdexec.run(d.compiled, xq)
        for w, a, b in zip(want, got_d, got_c):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(w))
            np.testing.assert_array_equal(np.asarray(b), np.asarray(w))


@pytest.mark.slow
def test_verilator_bit_exact(designs, build_accel, tmp_path):
    """Every model that compiles, on one Verilator build of the default config."""
    from pycde_accel.simulate import simulate
    sim = build_accel(CFG, rowred=True)   # the LayerNorm models need the row-reduction unit
    compiled = {n: d for n, d in designs.items() if not isinstance(d, str)}
    bad = {}
    for i, (name, d) in enumerate(compiled.items()):
        r = simulate(d.frontend, CFG, tmp_path / f"m{i}", sim=sim, compiled=d.compiled)
        if not r.bit_exact:
            bad[name] = r.mismatches
    print(f"\n{len(compiled) - len(bad)} of {len(designs)} hls4ml PyTorch test models are "
          f"bit-exact in Verilator")
    assert len(compiled) >= MIN_COMPILED
    assert not bad, bad
