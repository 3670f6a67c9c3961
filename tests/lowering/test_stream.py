"""A kernel wrapped as a streaming PyCDE module (lowering.stream), in Verilator through
pycde_accel.sim: random valid on the inputs, random ready on the output, exact results, one
``done`` pulse per run; and back-to-back beats with no gating."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pycde_accel.frontend import quantize as q
from pycde_accel.lowering import build_kernel, kernels
from pycde_accel.lowering.stream import emit_stream
from pycde_accel.sim import runner

N = 32


@pytest.fixture(scope="module")
def requant_stream(tmp_path_factory):
    base = tmp_path_factory.mktemp("stream")
    k = kernels.requantize(N, relu=True)
    lowered = build_kernel(k, base / "k")
    filelist = emit_stream(k, lowered, base / "sv")
    sim = runner.build(filelist, "requantize_relu_stream", cache_root=base / "build")
    return k, sim, base


def _run(k, sim, base, tag, x, m0, shift, p_valid, p_ready):
    cfg = {"inputs": {"x": [int(v) for v in x]}, "scalars": {"m0": m0, "shift": shift},
           "n": k.n, "p_valid": p_valid, "p_ready": p_ready, "seed": 3}
    cfg_path, res = base / f"{tag}.json", base / f"{tag}.result.json"
    cfg_path.write_text(json.dumps(cfg))
    runner.run(sim, "stream_tb", base / tag, module_dirs=[Path(__file__).parent],
               extra_env={"STREAM_TB_CONFIG": str(cfg_path), "STREAM_TB_RESULT": str(res)})
    return json.loads(res.read_text())


def test_stream_wrapper_random_gating(requant_stream):
    k, sim, base = requant_stream
    rng = np.random.default_rng(5)
    x = rng.integers(-(1 << 31), (1 << 31) - 1, N)
    m0, shift = (1 << 30) + 987654, 9
    r = _run(k, sim, base, "gated", x, m0, shift, p_valid=0.6, p_ready=0.5)
    np.testing.assert_array_equal(r["out"], q.requantize(x, m0, shift, relu=True))
    assert r["done"] == 1


def test_stream_wrapper_full_rate(requant_stream):
    k, sim, base = requant_stream
    x = np.arange(-N // 2, N // 2) * 100003
    r = _run(k, sim, base, "full", x, 1 << 30, 0, p_valid=1.0, p_ready=1.0)
    np.testing.assert_array_equal(r["out"], q.requantize(x, 1 << 30, 0, relu=True))
    edges = r["edges"]
    assert edges[-1] - edges[0] == N - 1  # one result per cycle


# ---- the static route behind the same port contract ------------------------------------------

NS = 24


@pytest.fixture(scope="module")
def add_static_stream(tmp_path_factory):
    from pycde_accel.lowering.split_mul import split_wide_muls
    base = tmp_path_factory.mktemp("stream_static")
    k = split_wide_muls(kernels.residual_add(NS))
    lowered = build_kernel(k, base / "k", route="static")
    filelist = emit_stream(k, lowered, base / "sv")
    sim = runner.build(filelist, "residual_add_stream", cache_root=base / "build")
    return k, sim, base


def _run_add(k, sim, base, tag, a, b, sc, p_valid, p_ready, runs=1):
    cfg = {"inputs": {"a": [int(v) for v in a], "b": [int(v) for v in b]}, "scalars": sc,
           "n": k.n, "p_valid": p_valid, "p_ready": p_ready, "seed": 7, "runs": runs}
    cfg_path, res = base / f"{tag}.json", base / f"{tag}.result.json"
    cfg_path.write_text(json.dumps(cfg))
    runner.run(sim, "stream_tb", base / tag, module_dirs=[Path(__file__).parent],
               extra_env={"STREAM_TB_CONFIG": str(cfg_path), "STREAM_TB_RESULT": str(res)})
    return json.loads(res.read_text())


def test_static_stream_random_gating(add_static_stream):
    """Split multiplies, pipelined kernel, joined inputs, scalars latched per run, output
    buffer: bit-exact under random valid/ready, one done pulse."""
    k, sim, base = add_static_stream
    rng = np.random.default_rng(11)
    a, b = rng.integers(-128, 128, NS), rng.integers(-128, 128, NS)
    sc = {"ma": 31000, "mb": -29000, "s": 14}
    r = _run_add(k, sim, base, "gated", a, b, sc, p_valid=0.6, p_ready=0.5)
    np.testing.assert_array_equal(r["out"], q.residual_add(a, b, sc["ma"], sc["mb"], sc["s"]))
    assert r["done"] == 1


def test_static_stream_full_rate(add_static_stream):
    k, sim, base = add_static_stream
    a, b = np.arange(-NS, NS, 2), np.arange(NS - 1, -NS - 1, -2)
    sc = {"ma": -32767, "mb": 32767, "s": 3}
    r = _run_add(k, sim, base, "full", a, b, sc, p_valid=1.0, p_ready=1.0)
    np.testing.assert_array_equal(r["out"], q.residual_add(a, b, sc["ma"], sc["mb"], sc["s"]))
    edges = r["edges"]
    assert edges[-1] - edges[0] == NS - 1  # one result per cycle through the pipeline


@pytest.mark.parametrize("p_valid,p_ready", [(1.0, 1.0), (0.7, 0.6)])
def test_static_stream_runs_keep_their_scalars(add_static_stream, p_valid, p_ready):
    """Runs back to back, each with its own scalars, the next runs' start and scalar beats
    sent while a run is still going in (they wait in the start slice): every run uses its own
    scalars, one done pulse per run, and at full rate no bubble between runs."""
    k, sim, base = add_static_stream
    runs = 4
    rng = np.random.default_rng(13)
    a, b = rng.integers(-128, 128, NS * runs), rng.integers(-128, 128, NS * runs)
    sc = {"ma": [31000, -20000, 12345, 32767], "mb": [-29000, 1000, -32767, 7],
          "s": [14, 3, 9, 1]}
    r = _run_add(k, sim, base, f"runs_{p_valid}", a, b, sc, p_valid, p_ready, runs=runs)
    want = np.concatenate([
        q.residual_add(a[i * NS:(i + 1) * NS], b[i * NS:(i + 1) * NS], sc["ma"][i],
                       sc["mb"][i], sc["s"][i]) for i in range(runs)])
    np.testing.assert_array_equal(r["out"], want)
    assert r["done"] == runs
    if p_valid == 1.0:
        assert r["edges"][-1] - r["edges"][0] == NS * runs - 1


def test_static_stream_readies_start_at_their_own_flop(add_static_stream):
    """Each input's ready is the ``in_open_r`` flop AND the other inputs' valids, not the run
    and credit flops the wrapper's own take reads: synthesis then cannot share one LUT between
    the engine's take and the kernel's credits (a shared LUT, placed by the engine's slice,
    put the kernel's credits on a path across the die on two placements of the 8x8)."""
    import re

    from sv_cone import definitions, leaves, next_value  # tests/rtl_lib (pyproject pythonpath)

    k, _, base = add_static_stream
    sv = (base / "sv" / "residual_add_stream.sv").read_text()
    defs = definitions(sv)
    for nm, other in (("a", "b"), ("b", "a")):
        ready = re.search(rf"assign\s+{nm}_ready\s*=\s*(.*?);", sv, re.S).group(1)
        src = leaves(defs, ready)
        assert "in_open_r" in src and f"{other}_valid" in src, sorted(src)
        assert not {"run_active", "out_credits"} & src, sorted(src)
    # the credits' next value still reads the run flop and its own bits
    assert "run_active" in leaves(defs, next_value(sv, "out_credits"))


def test_y_leaves_from_the_output_fifos_head_register(add_static_stream):
    """``y`` is the output FIFO's head register (``out_fifo_head``, ``Queue(head=True)``), not
    its LUT-RAM read: the ADD kernel's FIFO read -> the vector engine's byte select and ReLU
    -> ``out_lane`` was a five-LUT placed path on the 8x8's seed 1 at 3ea0699. Same cycles:
    the full-rate and gated runs above."""
    import re

    from sv_cone import definitions, leaves  # tests/rtl_lib (pyproject pythonpath)

    k, _, base = add_static_stream
    sv = (base / "sv" / "residual_add_stream.sv").read_text()
    y = re.search(r"assign\s+y\s*=\s*(.*?);", sv, re.S).group(1)
    assert leaves(definitions(sv), y) == {"out_fifo_head"}, sorted(leaves(definitions(sv), y))
