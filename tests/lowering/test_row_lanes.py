"""The row reduction's lane tree (``kernels.row_lanes``: one whole AXI beat per element) as a
streaming module in Verilator, by each kernel route: random valid on every input, random ready
on the output, results equal to ``row_lanes_ref`` (padding lanes ignored: -128-free max,
zero-free sums), one ``done`` per run; and one beat per cycle with no gating (the bus rate)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pycde_accel.assemble import kernel_for_route
from pycde_accel.lowering import build_kernel, kernels
from pycde_accel.lowering.stream import emit_stream
from pycde_accel.sim import runner

N, AB = 24, 8


def _build(base, route):
    k = kernel_for_route(kernels.row_lanes(N, AB), route)
    lowered = build_kernel(k, base / "k", route=route)
    filelist = emit_stream(k, lowered, base / "sv")
    return k, runner.build(filelist, f"{k.name}_stream", cache_root=base / "build")


def _beats(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (N, AB))
    x[::5] = -128                      # all-minimum beats: max must still be -128, not padding
    cnt = rng.integers(0, AB + 1, N)
    cnt[:3] = (AB, 0, 1)
    op = rng.integers(0, 3, N)
    return x, cnt, op


def _run(k, sim, base, tag, x, cnt, op, p_valid, p_ready):
    inputs = {f"x{i}": [int(v) for v in x[:, i]] for i in range(AB)}
    inputs.update(cnt=[int(v) for v in cnt], op=[int(v) for v in op])
    cfg = {"inputs": inputs, "scalars": {}, "n": k.n, "p_valid": p_valid, "p_ready": p_ready,
           "seed": 13}
    cfg_path, res = base / f"{tag}.json", base / f"{tag}.result.json"
    cfg_path.write_text(json.dumps(cfg))
    runner.run(sim, "stream_tb", base / tag, module_dirs=[Path(__file__).parent],
               extra_env={"STREAM_TB_CONFIG": str(cfg_path), "STREAM_TB_RESULT": str(res)})
    return json.loads(res.read_text())


def _check(route, base):
    k, sim = _build(base, route)
    x, cnt, op = _beats(21)
    want = [kernels.row_lanes_ref(x[i], cnt[i], op[i]) for i in range(N)]
    r = _run(k, sim, base, "gated", x, cnt, op, p_valid=0.6, p_ready=0.5)
    assert r["out"] == want and r["done"] == 1
    r = _run(k, sim, base, "full", x, cnt, op, p_valid=1.0, p_ready=1.0)
    assert r["out"] == want
    return r["edges"]


def test_row_lanes_reference():
    """The Python definition on hand-picked beats (padding lanes never count)."""
    lanes = [5, -7, 100, -128, 3, 3, 3, 3]
    assert kernels.row_lanes_ref(lanes, 3, kernels.ROW_SUM) == 98
    assert kernels.row_lanes_ref(lanes, 3, kernels.ROW_MAX) == 100
    assert kernels.row_lanes_ref(lanes, 2, kernels.ROW_MAX) == 5
    assert kernels.row_lanes_ref(lanes, 0, kernels.ROW_MAX) == -128
    assert kernels.row_lanes_ref(lanes, 4, kernels.ROW_SUMSQ) == 25 + 49 + 10000 + 16384


def test_row_lanes_static(tmp_path):
    """The accelerator's route: bit-exact under random back-pressure, and a whole beat per
    cycle at full rate (bus rate: AB int8 lanes per cycle)."""
    edges = _check("static", tmp_path)
    assert edges[-1] - edges[0] == N - 1


@pytest.mark.slow
@pytest.mark.parametrize("route", ["dynamic", "calyx"])
def test_row_lanes_other_routes(tmp_path, route):
    _check(route, tmp_path)
