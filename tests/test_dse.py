"""pycde_accel.dse: the sweep space (max_k with its accumulator), the budget filter (configs
that do not fit the device are never ranked, and every reason a config is refused is listed),
ranking by predicted latency (cycles over the fitted Fmax model), the model's monotonic
behaviour, Pareto front correctness, the CLI, and one candidate confirmed in Verilator
(bit-exact, measured cycles within 5% of the prediction)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pycde_accel import dse
from pycde_accel.config import AccelConfig, required_acc_width
from pycde_accel.fpga import fit
from pycde_accel.fpga.devices import get_device
from pycde_accel.sim.runner import pytest_cache_root

SMALL = dict(rows=(2, 4, 16), cols=(4, 8, 16), axi=(32, 64), spad=(256,), spad_c=(64,))


@pytest.fixture(scope="module")
def swept():
    """A tiny sweep of resblock (every GEMM K fits 256) for the ECP5-85F (156 DSP: 16x16 PEs
    and the kernels' 13 do not fit)."""
    cfgs = dse.space(**SMALL, target="ecp5-85f")
    return cfgs, dse.sweep("resblock", cfgs, jobs=1)


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


def test_space_sweeps_max_k_with_its_accumulator():
    cfgs = dse.space(rows=(4,), cols=(8,), axi=(64,), spad=(256,), spad_c=(64,),
                     max_k=(131071, 4095, 31), spad_b=(128, 256))
    got = sorted({(c.max_k, c.acc_width) for c in cfgs})
    assert got == [(31, 20), (4095, 27), (131071, 32)]
    assert all(c.acc_width == required_acc_width(8, c.max_k) for c in cfgs)
    assert sorted({c.spad_b_depth for c in cfgs}) == [128, 256] and len(cfgs) == 6
    keys = {dse.Candidate(config=c).key for c in cfgs}
    assert "4x8/axi64/spad256/c64/b128/k4095" in keys and "4x8/axi64/spad256/c64" in keys


def test_budget_refuses_oversized(swept):
    cfgs, cands = swept
    assert len(cands) == len(cfgs)
    by = {(c.config.rows, c.config.cols, c.config.axi_data_width): c for c in cands}
    big = by[(16, 16, 64)]                          # 256 + 13 DSP > 156
    assert big.status == "no-fit" and "269 DSP" in big.reason and big.predicted_cycles is None
    for c in cands:
        assert (c.status == "no-fit") == (c.resources["dsp"] > 156 or c.resources["bram"] > 208
                                          or c.resources["lut"] > 83640)
    assert by[(16, 8, 64)].ok and by[(2, 8, 64)].ok and by[(2, 4, 32)].ok


def test_ranking_by_predicted_latency(swept):
    _, cands = swept
    ok = [c for c in cands if c.ok]
    assert ok and cands[:len(ok)] == ok             # ranked ones first
    lat = [c.latency_us() for c in ok]
    assert lat == sorted(lat)
    for c in ok:                                     # latency = cycles / the model's Fmax
        assert c.fmax_source == "model"
        assert c.fmax_mhz == pytest.approx(fit.predict_fmax(c.config, get_device("ecp5-85f")))
        assert c.latency_us() == pytest.approx(c.predicted_cycles / c.fmax_mhz)
        # GMAC/s of the model's MACs, and its share of 156 DSP x Fmax
        assert c.model_macs == 88832
        assert c.gmacs() == pytest.approx(88832 / c.latency_us() / 1e3)
        assert c.peak_fraction() == pytest.approx(c.gmacs() / (156 * c.fmax_mhz / 1e3))
    by = {(c.config.rows, c.config.cols, c.config.axi_data_width): c for c in ok}
    assert by[(2, 8, 64)].predicted_cycles < by[(2, 4, 32)].predicted_cycles


def _cand(cyc, fmax, dsp=16, bram=10, lut=4000):
    c = dse.Candidate(config=AccelConfig(), resources={"dsp": dsp, "bram": bram, "lut": lut},
                      predicted_cycles=cyc, fmax_mhz=fmax, fmax_source="model")
    return c


def test_rank_is_by_time_not_cycles():
    """Fewer cycles at a much lower clock lose: 10000 cycles at 50 MHz (200 us) rank behind
    15000 at 100 MHz (150 us); the Pareto front agrees."""
    slow_clock, fast_clock = _cand(10_000, 50.0, dsp=64), _cand(15_000, 100.0, dsp=64)
    assert dse.rank([slow_clock, fast_clock]) == [fast_clock, slow_clock]
    assert dse.pareto([slow_clock, fast_clock]) == [fast_clock]
    assert slow_clock.latency_us() == pytest.approx(200.0)
    # once placed (--synth), the real Fmax and the latency at it stand beside the model's
    fast_clock.synth = {"fmax_mhz": 75.0, "lut": 1, "ff": 1, "dsp": 64, "bram": 1}
    assert fast_clock.placed_latency_us() == pytest.approx(200.0)
    assert fast_clock.fmax_model_error_pct == pytest.approx(100 * (100 - 75) / 75)
    row = dse._row(1, fast_clock)
    assert "  75.0     200.0" in row and " 100.0     150.0" in row
    assert fast_clock.to_dict()["placed_us"] == 200.0
    text = "\n".join(dse.table_lines(dse.DseResult("m", "ecp5-85f", {}, [slow_clock, fast_clock])))
    assert "75.00 MHz placed (model 100.00, +33.3%), 200.0 us" in text


def test_fmax_model_fits_its_points_and_is_monotonic():
    P = fit.FmaxPoint
    pts = (P(4, 8, 32, 64, 1024, 256, 110.0, "a"), P(8, 8, 32, 64, 1024, 256, 100.0, "b"),
           P(16, 8, 32, 64, 1024, 256, 80.0, "c"))
    f = fit.fit_fmax(pts)
    assert f.b_ns_per_kbit > 0
    assert all(abs(r) < 5 for r in f.residuals_pct())
    # more PEs, or a wider accumulator, is never predicted faster
    sizes = [(r, c) for r in (1, 2, 4, 8, 12, 16, 32) for c in (4, 8, 16)]
    for acc in (20, 27, 32):
        mhz = sorted(((r * c, f.mhz(AccelConfig(rows=r, cols=c, acc_width=acc, max_k=1)))
                      for r, c in sizes))
        assert all(b[1] <= a[1] for a, b in zip(mhz, mhz[1:]) if b[0] > a[0])
    assert f.mhz(AccelConfig(acc_width=27, max_k=4095)) > f.mhz(AccelConfig())
    assert f.mhz(AccelConfig(rows=1, cols=4)) <= fit.ARRAY_CEILING_MHZ
    # points that say a larger array is faster give a flat line, never a falling period
    up = fit.fit_fmax((P(4, 8, 32, 64, 1024, 256, 90.0, "a"), P(16, 8, 32, 64, 1024, 256, 95.0, "b")))
    assert up.b_ns_per_kbit == 0.0
    assert up.mhz(AccelConfig(rows=4)) == up.mhz(AccelConfig(rows=32))
    # the recorded points: the model is within 10% of each, and each names where it came from
    real = fit.fit_fmax()
    assert real.points and all(p.source for p in real.points)
    assert all(abs(r) < 10 for r in real.residuals_pct())
    big, small = AccelConfig(rows=16, cols=16), AccelConfig(rows=2, cols=4)
    dev = get_device("ecp5-85f")
    assert fit.predict_fmax(big, dev) <= fit.predict_fmax(AccelConfig(), dev) \
        <= fit.predict_fmax(small, dev)
    assert fit.predict_fmax(AccelConfig(), get_device("xc7a100t")) is None


def test_refused_candidate_lists_every_reason():
    """Over DSP and block RAM on the 25F, and too short a max_k and too few post-op records
    for resblock: four reasons, each named, none hidden behind the first."""
    cfg = AccelConfig(rows=8, cols=8, spad_a_depth=1 << 15, spad_b_depth=1 << 15,
                      spad_c_depth=2, max_k=16, acc_width=20, target="ecp5-25f")
    c = dse.evaluate("resblock", cfg)
    assert c.status == "no-fit" and not c.ok and c.predicted_cycles is None
    assert len(c.reasons) == 4, c.reasons
    need = fit.estimate(cfg, get_device("ecp5-25f")).dsp       # 64 PEs + the post-op kernels
    assert f"{need} DSP multipliers" in c.reasons[0] and "has 28" in c.reasons[0]
    assert "block RAMs" in c.reasons[1] and "but it has 56" in c.reasons[1]
    assert "exceeds config max_k=16" in c.reasons[2]
    assert "spad_c_depth=2" in c.reasons[3]
    assert c.reason == "; ".join(c.reasons)
    # the compiler's reasons alone: a config that fits is "refused" with both
    ok_budget = dse.evaluate("resblock", cfg.replace(spad_a_depth=256, spad_b_depth=256,
                                                     target="ecp5-85f"))
    assert ok_budget.status == "refused" and len(ok_budget.reasons) == 2
    lines = dse.table_lines(dse.DseResult("resblock", "ecp5-25f", {}, [c, ok_budget]))
    text = "\n".join(lines)
    assert "refused (2), every reason:" in text
    for r in c.reasons + ok_budget.reasons:
        assert f"    - {r}" in lines


def test_refused_for_the_same_reasons_are_listed_once():
    """Configs refused for one set of reasons (an array too large at every scratchpad depth)
    share one entry that names them and counts the rest; ``top`` counts distinct sets."""
    big = [dse.Candidate(config=AccelConfig(rows=8, cols=32, spad_a_depth=d, spad_b_depth=d),
                         resources={}, status="no-fit", reasons=["needs 269 DSP multipliers"])
           for d in (256, 512, 1024, 2048)]
    odd = dse.Candidate(config=AccelConfig(max_k=16, acc_width=20), resources={},
                        status="refused", reasons=["K=400 exceeds config max_k=16", "spad_c"])
    lines = dse.table_lines(dse.DseResult("mlp", "ecp5-85f", {}, [*big, odd]))
    i = lines.index("refused (5), every reason:")
    assert lines[i + 1] == (f"  {big[0].key}, {big[1].key}, {big[2].key} and 1 more "
                            f"(no-fit, 4 configs):")
    assert lines[i + 2:] == ["    - needs 269 DSP multipliers", f"  {odd.key} (refused):",
                             "    - K=400 exceeds config max_k=16", "    - spad_c"]
    short = dse.table_lines(dse.DseResult("mlp", "ecp5-85f", {}, [*big, odd]), top=1)
    assert short[-1] == "  ... and 1 more (1 other set of reasons) in dse.json"


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
        return _cand(cyc, 100.0, dsp, bram, lut)
    a, b, c, d, e = (cand(100, 64, 10, 9000), cand(200, 16, 10, 4000), cand(150, 64, 20, 9000),
                     cand(300, 16, 8, 4000), cand(200, 16, 10, 4000))
    front = dse.pareto([c, b, a, d, e])
    assert front == [a, b, d]                      # c dominated by a; e duplicates b


def test_cli_dse(tmp_path):
    out = tmp_path / "dse"
    p = subprocess.run([sys.executable, "-m", "pycde_accel", "dse", "resblock", "--target",
                        "ecp5-85f", "--rows", "2,32", "--cols", "8", "--axi", "64", "--spad",
                        "256", "--spad-c", "64", "--max-k", "131071,4095", "--confirm", "0",
                        "--jobs", "1", "--top", "3", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Pareto front" in p.stdout and "2x8" in p.stdout and "GMAC/s" in p.stdout
    assert "Fmax model" in p.stdout and "refused (2), every reason:" in p.stdout
    d = json.loads((out / "dse.json").read_text())
    # the narrower accumulator (max_k 4095: 27 bits) is less fabric at the same cycles
    assert d["target"] == "ecp5-85f" and d["best"] == "2x8/axi64/spad256/c64/k4095"
    assert d["counts"] == {"ok": 2, "no-fit": 2}
    best = d["candidates"][0]
    assert best["acc_width"] == 27 and best["fmax_source"] == "model"
    assert best["gmacs"] > 0 and 0 < best["peak_fraction"] < 1
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
                        "512,1024", "--spad-c", "256", "--max-k", "131071", "--confirm", "2",
                        "--jobs", "2",
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
