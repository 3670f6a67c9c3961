"""pycde_accel.dse: the sweep space, the budget filter (configs that do not fit the device are
refused, never compiled), ranking by predicted cycles, Pareto front correctness, the CLI, and
one candidate confirmed in Verilator (bit-exact, measured cycles within 5% of the prediction)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pycde_accel import dse
from pycde_accel.config import AccelConfig
from pycde_accel.sim.runner import pytest_cache_root

SMALL = dict(rows=(2, 4, 8), cols=(4, 8), axi=(32, 64), spad=(256,), spad_c=(64,))


@pytest.fixture(scope="module")
def swept():
    """A tiny sweep of resblock (every GEMM K fits 256) for the ECP5-25F (28 DSP)."""
    cfgs = dse.space(**SMALL, target="ecp5-25f")
    return cfgs, dse.sweep("resblock", cfgs, jobs=2)


def test_space_only_buildable_configs():
    cfgs = dse.space(rows=(2, 8), cols=(4, 8, 16), axi=(32, 64, 128), spad=(512,), spad_c=(64,),
                     target="ice40-up5k")
    assert cfgs
    for c in cfgs:
        assert c.cols % (c.axi_data_width // 8) == 0
        assert c.spad_a_depth == c.spad_b_depth == 512 and c.target == "ice40-up5k"
    shapes = {(c.rows, c.cols, c.axi_data_width) for c in cfgs}
    assert (2, 4, 32) in shapes and (2, 4, 64) not in shapes and (8, 16, 128) in shapes
    assert len(cfgs) == 2 * (1 + 2 + 3)     # cols 4: 32-bit; 8: 32/64; 16: all three


def test_budget_refuses_oversized(swept):
    cfgs, cands = swept
    assert len(cands) == len(cfgs)
    by = {(c.config.rows, c.config.cols, c.config.axi_data_width): c for c in cands}
    big = by[(8, 8, 64)]                            # 64 DSP > 28
    assert big.status == "no-fit" and "DSP" in big.reason and big.predicted_cycles is None
    assert by[(4, 8, 64)].status == "no-fit"         # 32 DSP
    for c in cands:
        assert (c.status == "no-fit") == (c.resources["dsp"] > 28 or c.resources["bram"] > 56
                                          or c.resources["lut"] > 24288)
    assert by[(2, 8, 64)].ok and by[(4, 4, 32)].ok and by[(2, 4, 32)].ok


def test_ranking_by_predicted_latency(swept):
    _, cands = swept
    ok = [c for c in cands if c.ok]
    assert ok and cands[:len(ok)] == ok             # ranked ones first
    cyc = [c.predicted_cycles for c in ok]
    assert cyc == sorted(cyc)
    # wider bus and more PEs help this model: the 16-PE, 64-bit config beats the 8-PE 32-bit one
    by = {(c.config.rows, c.config.cols, c.config.axi_data_width): c for c in ok}
    assert by[(2, 8, 64)].predicted_cycles < by[(2, 4, 32)].predicted_cycles
    assert ok[0].predicted_cycles == min(cyc)


def test_pareto_front_is_exactly_the_non_dominated(swept):
    _, cands = swept
    ok = [c for c in cands if c.ok]
    front = dse.pareto(cands)
    assert front and front[0] is ok[0]              # the fastest is always on the front
    for c in front:
        assert not any(dse.dominates(d, c) for d in ok)
    objs = {dse.objectives(c) for c in front}
    assert len(objs) == len(front)
    for c in ok:
        if c not in front:
            assert (any(dse.dominates(d, c) for d in ok) or dse.objectives(c) in objs)


def test_pareto_synthetic():
    def cand(cyc, dsp, bram, lut):
        c = dse.Candidate(config=AccelConfig(), resources={"dsp": dsp, "bram": bram, "lut": lut})
        c.predicted_cycles = cyc
        return c
    a, b, c, d, e = (cand(100, 64, 10, 9000), cand(200, 16, 10, 4000), cand(150, 64, 20, 9000),
                     cand(300, 16, 8, 4000), cand(200, 16, 10, 4000))
    front = dse.pareto([c, b, a, d, e])
    assert front == [a, b, d]                      # c dominated by a; e duplicates b


def test_cli_dse(tmp_path):
    out = tmp_path / "dse"
    p = subprocess.run([sys.executable, "-m", "pycde_accel", "dse", "resblock", "--target",
                        "ecp5-25f", "--rows", "2,8", "--cols", "8", "--axi", "64", "--spad", "256",
                        "--spad-c", "64", "--confirm", "0", "--jobs", "1", "--top", "3",
                        "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Pareto front" in p.stdout and "2x8" in p.stdout
    d = json.loads((out / "dse.json").read_text())
    assert d["target"] == "ecp5-25f" and d["best"] == "2x8/axi64/spad256/c64"
    assert d["counts"] == {"ok": 1, "no-fit": 1}
    bad = subprocess.run([sys.executable, "-m", "pycde_accel", "dse", "--target", "nope",
                          "--out", str(tmp_path / "x")], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "unknown target" in bad.stderr


def test_confirm_in_simulation(tmp_path, tmp_path_factory):
    """The default 8x8 config (the build other whole-accelerator tests share) for resblock,
    next to a candidate whose worker is stopped by its time limit: that one is a named error,
    the other is still confirmed (two workers)."""
    cand = dse.evaluate("resblock", AccelConfig())
    late = dse.evaluate("resblock", AccelConfig(rows=4, cols=8))
    assert cand.ok and late.ok
    dse.confirm("resblock", [late, cand], tmp_path, jobs=2,
                cache_root=pytest_cache_root(tmp_path_factory),
                time_limit=lambda c: 0.5 if c is late else dse.confirm_time_limit(c))
    assert cand.bit_exact is True and cand.confirm_error is None
    assert abs(cand.model_error_pct) <= 5.0
    assert late.key == "4x8/axi64/spad1024/c256"
    assert late.confirm_error == f"candidate {late.key} did not finish within 0.5 s"
    assert late.simulated_cycles is None and late.bit_exact is None
    rows = "\n".join(dse.table_lines(dse.DseResult("resblock", "ecp5-85f", {}, [cand, late]), 2))
    assert str(cand.simulated_cycles) in rows
    assert f"error: candidate {late.key} did not finish within 0.5 s" in rows


def test_confirm_time_limit_scales_with_the_work(monkeypatch):
    small = dse.Candidate(config=AccelConfig(rows=2, cols=4), predicted_cycles=10_000)
    big = dse.Candidate(config=AccelConfig(rows=16, cols=16), predicted_cycles=10_000)
    long = dse.Candidate(config=AccelConfig(rows=2, cols=4), predicted_cycles=10_000_000)
    t = dse.confirm_time_limit
    assert t(small) < t(big) and t(small) < t(long) and t(small) < t(small, synth=True)
    assert t(long) - t(small) == pytest.approx((10_000_000 - 10_000) / dse.SIM_CYCLES_PER_S)
    base = t(small)
    monkeypatch.setenv("PYCDE_ACCEL_DSE_TIME_SCALE", "3")
    assert t(small) == pytest.approx(3 * base)
    monkeypatch.setenv("PYCDE_ACCEL_DSE_TIME_SCALE", "fast")
    with pytest.raises(dse.UserError, match="PYCDE_ACCEL_DSE_TIME_SCALE"):
        dse.confirm_time_limit(small)


def test_run_dse_leaves_no_output_when_it_fails(tmp_path):
    out = tmp_path / "dse"
    with pytest.raises(dse.UserError, match="no config of the sweep fits"):
        dse.run_dse("resblock", "ecp5-25f", out, configs=[AccelConfig(rows=16, cols=16)],
                    confirm_n=1, jobs=1)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_cli_dse_confirms_two_new_builds_on_lenet5(tmp_path):
    """The command of issue 21 with an empty build cache: two 12x8 candidates, each needing a
    new Verilator build, confirmed by two workers after the parent ran lenet5's frontend
    (which uses torch's thread pools: forked workers used to wait forever here)."""
    import os
    cache = tmp_path / "xdg"
    env = {k: v for k, v in os.environ.items() if k != "PYCDE_ACCEL_CACHE"}
    env["XDG_CACHE_HOME"] = str(cache)
    out = tmp_path / "OUT"
    p = subprocess.run([sys.executable, "-m", "pycde_accel", "dse", "lenet5", "--target",
                        "ecp5-85f", "--rows", "12", "--cols", "8", "--axi", "64", "--spad",
                        "512,1024", "--spad-c", "256", "--confirm", "2", "--jobs", "2",
                        "--out", str(out)], capture_output=True, text=True, timeout=3000, env=env)
    assert p.returncode == 0, p.stderr
    d = json.loads((out / "dse.json").read_text())
    assert sorted(c["key"] for c in d["candidates"]) == ["12x8/axi64/spad1024/c256",
                                                          "12x8/axi64/spad512/c256"]
    for c in d["candidates"]:
        assert c["bit_exact"] is True and c["confirm_error"] is None, c
        assert abs(c["model_error_pct"]) <= 5.0
    native = [b for b in (cache / "pycde-accel" / "verilator").glob("accel_sim_top-native-*")
              if (b / ".pycde_accel_built").exists()]
    assert len(native) == 2         # both candidates were new builds, made in this run
