"""bench/vs_cpu.py runs on one tiny model (few CPU repetitions, the clock given): both CPU times
and the accelerator's, bit-exact, the targets printed, the JSON line with its keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pycde_accel.sim.runner import pytest_cache_root

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path_factory, *args):
    env = {**os.environ, "PYCDE_ACCEL_CACHE": str(pytest_cache_root(tmp_path_factory))}
    return subprocess.run([sys.executable, str(ROOT / "bench" / "vs_cpu.py"), *args],
                          capture_output=True, text=True, timeout=1800, cwd=ROOT, env=env)


@pytest.mark.slow
def test_vs_cpu_on_mlp(tmp_path_factory):
    """About 20 CPU seconds with the 8x8 build cached (frontend, 16k simulated cycles)."""
    r = _run(tmp_path_factory, "--only", "mlp", "--reps", "3", "--warmup", "1", "--fmax", "80")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    fig = json.loads(lines[-1])
    m = fig["models"]["mlp"]
    assert list(fig["models"]) == ["mlp"] and m["bit_exact"] is True
    assert m["cpu_1t_us"] > 0 and m["cpu_all_us"] > 0 and m["cycles"] > 0
    assert m["accel_us"] == round(m["cycles"] / 80, 2)
    assert abs(m["speedup_vs_cpu_1t"] - m["cpu_1t_us"] / m["accel_us"]) < 1e-3 * m["speedup_vs_cpu_1t"]
    assert m["model_macs"] == 109184
    # the perf model's worst layer against these cycles (the 5% bound)
    assert m["max_model_error_pct"] is not None and 0 <= m["max_model_error_pct"] < 5
    # one model: the geomean and the minimum are its speedup; no VGG run, no peak fraction
    assert fig["min_speedup_vs_cpu_1t"] == fig["geomean_speedup_vs_cpu_1t"] == round(
        m["speedup_vs_cpu_1t"], 4)
    assert fig["device_peak_fraction"] is None
    assert fig["fmax_mhz"] == 80 and "--fmax 80" in fig["fmax_source"]
    # the board memory charged at the given clock: 1.6 GB/s at 80 MHz is 20 bytes/cycle, of
    # which the 64-bit bus moves 16 (a beat each way)
    assert fig["memory"]["clock_mhz"] == 80 and fig["memory"]["board_bytes_per_cycle"] == 20.0
    assert fig["memory"]["charged_bytes_per_cycle"] == 16.0
    # the bound: every one of the 85F's 156 DSPs busy every cycle at 150 MHz
    assert m["cpu_1t_gmacs"] == round(109184 / m["cpu_1t_us"] / 1e3, 4)
    assert abs(m["speedup_bound_vs_cpu_1t"] - 156 * 0.15 / m["cpu_1t_gmacs"]) < 1e-3 * \
        m["speedup_bound_vs_cpu_1t"]
    assert fig["geomean_speedup_bound_vs_cpu_1t"] == m["speedup_bound_vs_cpu_1t"]
    assert fig["targets"] == {"device_peak_fraction": 0.5, "geomean_speedup_vs_cpu_1t": 1.0}
    # the CPU named and measured on the fixed reference at the start and the end
    assert fig["cpu_model"] and isinstance(fig["cpu_model"], str)
    runs = fig["cpu_ref_gflops_1t_runs"]
    assert len(runs) == 2 and min(runs) > 0 and fig["cpu_ref_gflops_1t"] == max(runs)
    assert m["cpu_1t_spread_pct"] >= 0
    out = r.stdout
    assert "--fmax 80 (given on the command line)" in out and "note: --reps 3 < 50" in out
    assert "device_peak_fraction" in out and "not measured" in out
    met = fig["geomean_speedup_vs_cpu_1t"] >= 1.0
    assert ("geomean_speedup_vs_cpu_1t" in fig["targets_missed"]) == (not met)
    assert ("MISSED by" in out) == (not met)


def test_vs_cpu_refuses_an_unknown_model(tmp_path_factory):
    r = _run(tmp_path_factory, "--only", "nope", "--fmax", "80")
    assert r.returncode == 2 and r.stderr.startswith("error: unknown model(s) nope")
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_copied_network_counts_once():
    """The example resblock is the built-in's network written with torch.relu instead of a
    ReLU module: one signature, so the geomean counts it once. The example LeNet-5 (16x16
    input) and a resblock whose stem has another stride are other networks."""
    import vs_cpu  # bench/ is on the path (tests/conftest.py)
    from torch import nn

    from pycde_accel import frontend

    def sig(model):
        return vs_cpu.network_signature(frontend.run(model, seed=0, eval_batches=1).graph)

    assert sig("resblock") == sig(str(ROOT / "examples" / "resblock.py"))
    assert sig("lenet5") != sig(str(ROOT / "examples" / "lenet5.py"))

    from pycde_accel.frontend import capture, graph
    from pycde_accel.frontend.loader import load_model

    m = load_model("resblock")
    strided = m.module
    strided.stem[0] = nn.Conv2d(3, 8, 3, padding=1, stride=2)
    strided.fc = nn.Linear(8 * 2 * 2, 10)
    g = graph.fuse_relu(capture.capture(strided.eval(), m.example_inputs))
    assert vs_cpu.network_signature(g) != sig("resblock")
