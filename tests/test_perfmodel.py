"""pycde_accel.perfmodel against the Verilator model of the whole accelerator: every layer of the
built-in models within 5% of the simulated cycle counter (8x8/64-bit default; 4x8 and a GEMM
layer too), plus the model's own invariants (bounds, burst splitting, report dicts). One
Verilator build per config for the session (pytest_cache_root), shared with tests/test_sim.py."""

from __future__ import annotations

import pytest

from pycde_accel import perfmodel
from pycde_accel.backend import commands as C
from pycde_accel.backend import compile_program
from gemm_bench import gemm_program
from pycde_accel.config import AccelConfig
from pycde_accel.simulate import report_lines, run_layers, simulate

CFG = AccelConfig()
CFG_4X8 = AccelConfig(rows=4, cols=8)
BOUND = 0.05




@pytest.fixture(scope="module")
def accel(build_accel):
    return build_accel(CFG)


def _check_layers(r):
    assert r.bit_exact, r.mismatches
    assert r.predicted_cycles is not None
    assert r.predicted_cycles == sum(l["predicted_cycles"] for l in r.layers)
    for l in r.layers:
        err = abs(l["predicted_cycles"] - l["cycles"]) / l["cycles"]
        assert err <= BOUND, (f"{l['name']}: predicted {l['predicted_cycles']} vs simulated "
                              f"{l['cycles']} ({100 * err:.1f}%)")
    assert abs(r.predicted_cycles - r.total_cycles) / r.total_cycles <= BOUND


@pytest.mark.parametrize("model", ["mlp", "lenet5", "resblock"])
def test_builtin_within_5pct(accel, fe_cache, tmp_path, model):
    r = simulate(fe_cache(model), CFG, tmp_path, sim=accel)
    _check_layers(r)
    # the sim table shows the prediction beside the measurement
    lines = report_lines(r)
    assert "predicted" in lines[0]
    assert str(r.layers[0]["predicted_cycles"]) in lines[1]
    assert f"predicted {r.predicted_cycles}" in "\n".join(lines)


def test_gemm_layer_within_5pct(accel, tmp_path):
    b = gemm_program(CFG, 100, 40, 200, seed=1)
    runs, _ = run_layers(CFG, accel, b.compiled.layers, b.compiled.load_inputs([b.a]), tmp_path,
                         stall_cycles=0)
    pred = perfmodel.predict(b.compiled, CFG)
    assert abs(pred.layers[0].cycles - runs[0]["cycles"]) <= BOUND * runs[0]["cycles"]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["mlp", "lenet5", "resblock"])
def test_builtin_within_5pct_4x8(build_accel, fe_cache, tmp_path, model):
    sim = build_accel(CFG_4X8)
    _check_layers(simulate(fe_cache(model), CFG_4X8, tmp_path, sim=sim))


# ---- the model alone (no Verilator) -------------------------------------------------------
@pytest.mark.parametrize("host", [False, True])
def test_prediction_is_above_every_bound_and_reported(fe_cache, host):
    compiled = compile_program(fe_cache("lenet5"), CFG, host_im2col=host)
    pred = perfmodel.predict(compiled, CFG)
    assert len(pred.layers) == len(compiled.layers)
    for lp in pred.layers:
        assert lp.cycles >= max(lp.bounds.values()) > 0
    d = pred.to_dict()
    assert d["total_cycles"] == pred.total_cycles == sum(l["predicted_cycles"] for l in d["layers"])
    conv = d["layers"][0]
    # the DMA im2col over 1 channel padded to 8: its loads and the fetch bound it; with the
    # input im2col'd by the host (K = 25, 4 beats per pixel) the loads still do with the
    # default 4 store lanes, where one lane (R*C cycles per tile) made the STOREs bound it
    assert conv["op"] == "gemm" and conv["bottleneck"] == "read"
    if host:
        cfg1 = AccelConfig(store_lanes=1)
        d1 = perfmodel.predict(compile_program(fe_cache("lenet5"), cfg1, host_im2col=True),
                               cfg1).to_dict()
        assert d1["layers"][0]["bottleneck"] == "store"
        assert d1["layers"][0]["predicted_cycles"] > conv["predicted_cycles"]
    # maxpool: the vector engine takes a beat per cycle (AB lane kernels), so the loads of its
    # taps (X and S, one beat per cycle on the one read channel) bound it
    mp = pred.layers[1]
    assert d["layers"][1]["bottleneck"] == "read"
    assert mp.bounds["vector"] < mp.bounds["read"]
    assert 0 < conv["overlap"]


def test_compute_bound_gemm_approaches_tiles_times_k():
    """A large GEMM is core-bound: tiles x K plus fill/drain, within 2%."""
    b = gemm_program(CFG, 128, 128, 512, seed=1)
    pred = perfmodel.predict(b.compiled, CFG).layers[0]
    core = pred.bounds["core"]
    assert core == 16 * 16 * 512
    assert core <= pred.cycles <= 1.02 * core


def test_memory_latency_costs_cycles():
    cmds = gemm_program(CFG, 64, 64, 64, seed=1).compiled.commands[0]
    base = perfmodel.predict_layer(cmds, CFG)
    slow = perfmodel.predict_layer(cmds, CFG, read_latency=40, write_latency=40)
    assert slow > base


def test_bursts_follow_the_dma_splitter():
    # 4 KiB pages: 512 beats of 8 bytes; bursts <= 256 beats
    assert perfmodel._bursts(0, 300, 1, 0, 8) == [256, 44]
    assert perfmodel._bursts(4096 - 16, 4, 1, 0, 8) == [2, 2]
    assert perfmodel._bursts(0, 3, 2, 4096 - 8, 8) == [3, 1, 2]
    assert sum(perfmodel._bursts(64, 98, 8, 784, 8)) == 98 * 8


def test_read_port_frees_when_the_last_burst_is_in_the_splitter_register():
    # rtl_lib.axi_dma: the splitter's output register holds one burst beyond the
    # MAX_OUTSTANDING in flight, and the splitter is idle the cycle after the last burst
    # entered it; rtl_lib.accel: the command reaches it through a one-entry register (rd_cmd_q)
    # that takes a command only while it is empty and the splitter idle, and offers it the
    # cycle after it took it
    from pycde_accel.contract import MAX_OUTSTANDING
    from pycde_accel.perfmodel.dma import ReadDma

    dma = ReadDma(3)
    assert dma.ready(0)
    dma.issue(0, [24] * (MAX_OUTSTANDING + 1))
    dma.step(0)
    assert not dma.split_q                 # offered at 1, not in the cycle it entered
    assert not dma.ready(0)
    dma.step(1)
    assert not dma.ready(1)                # the splitter took it: busy
    for t in range(2, 21):
        dma.step(t)
    assert dma.inflight == MAX_OUTSTANDING
    assert dma.held == 24 and not dma.idle()
    assert dma.ready(20)                   # the last burst waits in the output register
    dma.issue(20, [8])
    assert not dma.ready(20)               # the register holds it now
    dma.step(21)
    assert list(dma.split_q) == [8] and not dma.cmd_q
    assert not dma.ready(21)
    dma.step(22)                           # the output register is still taken: no move on
    assert list(dma.split_q) == [8] and not dma.ready(22)


@pytest.mark.parametrize("schedule,add_per_beat", [("dynamic", 9), ("static", 8)])
def test_vector_rates(schedule, add_per_beat):
    """LOAD X, LOAD S, VEC of n beats: MAX takes one cycle per beat (AB lane kernels), so it
    keeps pace with its S beats; ADD AB+1 with the handshake kernel (one restart bubble per
    run), AB with the static pipeline (vector_engine docstring)."""
    cfg = CFG.replace(schedule=schedule)
    ab, n = 8, 200
    add = [C.Load(dst=C.DST_X, addr=0, beats=n, rows=1, stride=0, index=0),
           C.Load(dst=C.DST_S, addr=4096, beats=n, rows=1, stride=0),
           C.Vec(n=n, x_off=0, dst=8192, ma=1, mb=1, shift=0)]
    mx = add[:2] + [C.Vec(n=n, x_off=0, dst=8192, flags=C.V_MAX)]
    mx_to_x = add[:2] + [C.Vec(n=n, x_off=0, dst=0, flags=C.V_MAX | C.V_TO_X)]
    t_add = perfmodel.predict_layer(add, cfg)
    t_max = perfmodel.predict_layer(mx, cfg)
    # the X load's n beats come first on the in-order read channel, then S at the engine's pace
    assert n + n * add_per_beat <= t_add <= n + n * add_per_beat + 60
    # MAX: bound by the read channel (X, then S, one beat per cycle each), not by AB per beat
    assert 2 * n <= t_max <= 2 * n + 60 < n + n * ab
    assert 2 * n <= perfmodel.predict_layer(mx_to_x, cfg) <= 2 * n + 60
    # ADD and MAX differ by ADD's AB (+ bubble) cycles per beat against MAX's one
    assert abs(t_add - t_max - n * (add_per_beat - 1)) <= 30


def test_core_result_latency_follows_the_rtl():
    """The model's first-result offset is the PE pipeline plus the matmul unit's C slice: a
    PE stage added in the RTL without the model following would shift every layer."""
    from pycde_accel.perfmodel.timing import CORE_RESULT_EXTRA
    from pycde_accel.rtl_lib.matmul_unit import C_SLICE_LATENCY
    from pycde_accel.rtl_lib.pe import PE_LATENCY

    assert CORE_RESULT_EXTRA == PE_LATENCY + C_SLICE_LATENCY
