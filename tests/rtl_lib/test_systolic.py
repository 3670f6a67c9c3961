"""The systolic core in Verilator: bit-exact matmuls, back-pressure, cycle counts, refusals.

One Verilator build per array shape (cached by SV hash and shared by the xdist workers); each
test is one cocotb simulation holding several runs of back-to-back tiles.
"""

from __future__ import annotations

import pytest

from pycde_accel.config import AccelConfig
from pycde_accel.errors import ConfigError
from pycde_accel.rtl_lib.systolic import (first_result_latency, make_systolic_core,
                                          run_cycles, tile_occupancy)

from systolic_sim import build_core, run_systolic  # next to this file (pyproject: pythonpath)

SHAPES = [(1, 1), (2, 3), (4, 4), (3, 5)]
#: the default run builds 1x1 and 3x5 (a square and a non-square core); 2x3 and 4x4 run in the
#: slow set (each shape is one more Verilator build)
SHAPE_PARAMS = [pytest.param(r, c, id=f"{r}x{c}",
                             marks=[pytest.mark.slow] if (r, c) in ((2, 3), (4, 4)) else [])
                for r, c in SHAPES]


def _core(cache_root, rows, cols, **kw):
    cfg = AccelConfig(rows=rows, cols=cols, **kw)
    return cfg, build_core(cfg, cache_root)


def check_timing(cfg: AccelConfig, res: dict) -> None:
    """Without back-pressure, every measured edge equals the docstring's formula."""
    rows, cols = cfg.rows, cfg.cols
    assert res["cycles"] == run_cycles(rows, cols, res["ks"]), res
    for t, (li, fo) in enumerate(zip(res["last_in"], res["first_out"])):
        assert fo - li == first_result_latency(rows, cols), (t, res)
    for t in range(1, len(res["ks"])):
        gap = res["last_in"][t] - res["last_in"][t - 1]
        assert gap == tile_occupancy(rows, res["ks"][t]), (t, res)
    assert res["last_in"][0] - res["first_in"] == res["ks"][0] - 1


@pytest.mark.parametrize("rows,cols", SHAPE_PARAMS)
def test_random_matmuls_and_cycle_formula(cache_root, tmp_path, rows, cols):
    cfg, sim = _core(cache_root, rows, cols)
    runs = [{"name": f"single_k{k}", "ks": [k], "seed": 10 + k}
            for k in sorted({1, max(rows - 1, 1), rows, 17, 256})]
    runs += [
        {"name": "b2b_k256", "ks": [256] * 4, "seed": 1},
        {"name": "b2b_mixed", "ks": [7, 1, 300, 2, rows, 3, 33, 1], "seed": 2},
        {"name": "b2b_k1", "ks": [1] * 6, "seed": 3},
    ]
    results = run_systolic(sim, cfg, runs, tmp_path)
    assert [r["name"] for r in results] == [r["name"] for r in runs]
    for res in results:
        check_timing(cfg, res)


@pytest.mark.parametrize("target", ["ice40-up5k", "xc7a100t"])
def test_other_targets_infer_the_multiply_with_the_same_latency(cache_root, tmp_path, target):
    """Off ECP5 the PE infers its multiply (no MULT18X18D, no simulation model) with the same
    pipeline depth: the same results and the same cycle formula."""
    cfg, sim = _core(cache_root, 3, 2, target=target)
    assert not any(s.name == "MULT18X18D_sim.sv" for s in sim.sources)
    runs = [{"name": "b2b_mixed", "ks": [7, 1, 300, 2, 3, 3, 33, 1], "seed": 2},
            {"name": "minmax", "ks": [40, 1, 4], "mode": "minmax", "seed": 3},
            {"name": "bp", "ks": [5, 1, 9], "seed": 4, "bp": {"a": 0.6, "b": 0.8, "c": 0.4}}]
    results = run_systolic(sim, cfg, runs, tmp_path)
    check_timing(cfg, results[0])
    check_timing(cfg, results[1])
    assert results[2]["cycles"] >= run_cycles(3, 2, results[2]["ks"])


def test_ecp5_core_simulates_the_dsp_model(cache_root):
    cfg, sim = _core(cache_root, 2, 2)
    assert cfg.target.startswith("ecp5")
    assert [s.name for s in sim.sources][-1] == "MULT18X18D_sim.sv"


@pytest.mark.parametrize("rows,cols", SHAPE_PARAMS)
def test_extreme_operands(cache_root, tmp_path, rows, cols):
    cfg, sim = _core(cache_root, rows, cols)
    runs = [{"name": f"{mode}", "ks": [300, 1, rows + 1], "mode": mode, "seed": 5}
            for mode in ("min", "max", "minmax")]
    for res in run_systolic(sim, cfg, runs, tmp_path):
        check_timing(cfg, res)


@pytest.mark.parametrize("rows,cols", SHAPE_PARAMS)
def test_random_backpressure_loses_nothing(cache_root, tmp_path, rows, cols):
    cfg, sim = _core(cache_root, rows, cols)
    probs = [(0.5, 0.5, 0.5), (1.0, 1.0, 0.2), (0.3, 0.9, 1.0), (0.9, 0.3, 0.7),
             (0.7, 0.7, 0.1)]
    runs = [{"name": f"bp{i}", "ks": [5, 1, 2, rows, 40, 1, 3, 9], "seed": 100 + i,
             "bp": {"a": pa, "b": pb, "c": pc}} for i, (pa, pb, pc) in enumerate(probs)]
    runs.append({"name": "bp_long", "ks": [256, 1, 256], "seed": 7, "mode": "minmax",
                 "bp": {"a": 0.8, "b": 0.8, "c": 0.3}})
    results = run_systolic(sim, cfg, runs, tmp_path)  # the bench checks data and counts
    for res in results:  # back-pressure can only make a run slower than the formula
        assert res["cycles"] >= run_cycles(rows, cols, res["ks"])


@pytest.mark.parametrize("rows,cols", [pytest.param(1, 1, id="1x1"),
                                       pytest.param(4, 4, id="4x4", marks=pytest.mark.slow)])
def test_reset_mid_tile_leaves_nothing_behind(cache_root, tmp_path, rows, cols):
    cfg, sim = _core(cache_root, rows, cols)
    runs = [{"name": "after_reset", "ks": [5, 1, 7], "seed": 1, "reset_after": 40},
            {"name": "after_short_reset", "ks": [2, 9], "seed": 2, "reset_after": 2}]
    for res in run_systolic(sim, cfg, runs, tmp_path):
        check_timing(cfg, res)


def test_max_k_at_the_accumulator_limit(cache_root, tmp_path):
    """acc_width=20 holds exactly max_k=31 products of -128 * -128 (31 * 2^14 < 2^19)."""
    cfg, sim = _core(cache_root, 2, 2, acc_width=20, max_k=31)
    runs = [{"name": m, "ks": [31, 31, 1], "mode": m, "seed": 1} for m in ("min", "minmax")]
    runs.append({"name": "random", "ks": [31, 2, 30], "seed": 2})
    for res in run_systolic(sim, cfg, runs, tmp_path):
        check_timing(cfg, res)


def test_k_4096_all_min(cache_root, tmp_path):
    """A long tile (4096 beats) with the largest products: no overflow in 32 bits."""
    cfg, sim = _core(cache_root, 2, 3)
    runs = [{"name": "k4096", "ks": [4096], "mode": "min", "seed": 1}]
    for res in run_systolic(sim, cfg, runs, tmp_path):
        check_timing(cfg, res)


@pytest.mark.slow
def test_default_max_k_all_min(cache_root, tmp_path):
    """The default config's max_k (131071, the most a 32-bit accumulator proves for int8) with
    the largest products: no overflow in 32 bits (about 3 minutes in cocotb)."""
    cfg, sim = _core(cache_root, 2, 3)
    runs = [{"name": "kmax", "ks": [cfg.max_k], "mode": "min", "seed": 1}]
    for res in run_systolic(sim, cfg, runs, tmp_path):
        check_timing(cfg, res)


@pytest.mark.slow
def test_16x16(cache_root, tmp_path):
    cfg, sim = _core(cache_root, 16, 16)
    runs = [{"name": "b2b", "ks": [256, 1, 16, 17, 300], "seed": 1},
            {"name": "min", "ks": [40, 2], "mode": "min", "seed": 2},
            {"name": "bp", "ks": [20, 3, 16, 64], "seed": 3,
             "bp": {"a": 0.6, "b": 0.8, "c": 0.4}}]
    results = run_systolic(sim, cfg, runs, tmp_path)
    check_timing(cfg, results[0])
    check_timing(cfg, results[1])


@pytest.mark.parametrize("change,needle", [
    ({"rows": 0}, "rows must be an integer >= 1"),
    ({"cols": 0}, "cols must be an integer >= 1"),
    ({"data_width": 1}, "data_width must be an integer >= 2"),
    ({"acc_width": 1}, "acc_width must be an integer >= 2"),
    ({"acc_width": 16}, "acc_width=16 can overflow"),
    ({"max_k": 1 << 20}, "can overflow"),
])
def test_generator_refuses_bad_configs(change, needle):
    with pytest.raises(ConfigError, match=needle) as info:
        make_systolic_core(AccelConfig().replace(**change))
    assert "\n" not in str(info.value)


def test_c_leaves_from_the_fifo_head_register(tmp_path):
    """``c_data``/``c_last`` are the output FIFO's head register (``fifo_head``), not the LUT
    RAM's read mux: the RAM read -> the matmul unit's C slice was the placed 8x8's worst path on
    four seeds. The RAM is chunks of at most ``FIFO_CHUNK`` bits, each addressed by kept
    pointer copies of its own (``fifo_rd_c<i>``, ``fifo_wr_c<i>``) and its part of the head
    picked by its own ``fifo_few`` copy. (The back-pressured runs above check that the head
    keeps every beat and its cycle.)"""
    import re

    from pycde_accel.rtl_lib.emit import emit_core
    from pycde_accel.rtl_lib.systolic import FIFO_CHUNK

    from sv_cone import definitions, leaves, next_value

    rows, cols = 4, 4
    out = emit_core(AccelConfig(rows=rows, cols=cols), tmp_path / "sv")
    sv = (tmp_path / "sv" / f"{out.top}.sv").read_text()
    defs = definitions(sv)
    for port in ("c_data", "c_last"):
        expr = re.search(rf"assign\s+{port}\s*=\s*(.*?);", sv, re.S).group(1)
        assert leaves(defs, expr) == {"fifo_head"}, (port, sorted(leaves(defs, expr)))
    rams = re.findall(r"\)\s*fifo_ram_(\d+)\s*\((.*?)\);", sv, re.S)
    width = cols * 32 + 1
    assert len(rams) == -(-width // FIFO_CHUNK) >= 2, len(rams)
    for c, body in rams:
        ports = dict(re.findall(r"\.(\w+)\s*\((.*?)\)\s*(?:,|$)", body, re.S))
        ra, wa = leaves(defs, ports["raddr"]), leaves(defs, ports["waddr"])
        assert ra and all(n.startswith(f"_fifo_rd_c{c}_b") for n in ra), ra
        assert wa and all(n.startswith(f"_fifo_wr_c{c}_b") for n in wa), wa
    head = leaves(defs, next_value(sv, "fifo_head"))
    assert {f"_fifo_few_{c}_q" for c, _ in rams} <= head, sorted(head)
    assert not {"fifo_rd_inc", "fifo_wr", "fifo_nonempty"} & head, sorted(head)


def test_the_output_fifo_flags_are_bits_of_its_occupancy(tmp_path):
    """``c_valid`` is bit 0 of the output FIFO's thermometer occupancy (``fifo_occ``) and each
    ``fifo_few`` copy's next value reads only that register, the push flag and ``c_ready``:
    no pointer compare (fifo_nonempty -> the pointer compares -> a ``fifo_few`` copy was the
    placed 8x8's critical path on seed 1 at 3ea0699). That the flags keep every beat and its
    cycle is the back-pressured runs' above."""
    import re

    from pycde_accel.rtl_lib.emit import emit_core

    from sv_cone import definitions, leaves

    out = emit_core(AccelConfig(rows=4, cols=4), tmp_path / "sv")
    sv = (tmp_path / "sv" / f"{out.top}.sv").read_text()
    defs = definitions(sv)
    valid = re.search(r"assign\s+c_valid\s*=\s*(.*?);", sv, re.S).group(1)
    assert leaves(defs, valid) == {"fifo_occ"}, sorted(leaves(defs, valid))
    few = re.findall(r"\bfifo_few_\d+\s*\(\s*\.clk.*?\.d\s*\((.*?)\),\s*\.q", sv, re.S)
    assert len(few) >= 2, few
    for d in few:
        assert leaves(defs, d) <= {"fifo_occ", "out_push", "c_ready"}, sorted(leaves(defs, d))


def test_the_credit_check_is_a_bit_of_the_credits_thermometer(tmp_path):
    """The free output FIFO rows (``credits``) are a thermometer code of ``out_fifo_depth``
    bits, so the admission's credit check is the flop ``credits[rows - 1]`` and every bit's
    next value is a mux of the register's bits by the two events, no adder or compare (the
    pop -> four LUTs of compares and muxes -> ``credit_ok`` was the placed 8x8's third path on
    seed 2 at de882f7). That the credits admit and hold back tiles at the right cycles is
    the formula and back-pressure runs' above."""
    import re

    from pycde_accel.rtl_lib.emit import emit_core
    from pycde_accel.rtl_lib.systolic import out_fifo_depth

    from sv_cone import cone, definitions, leaves, next_value

    rows, cols = 4, 4
    depth = out_fifo_depth(rows, cols)
    out = emit_core(AccelConfig(rows=rows, cols=cols), tmp_path / "sv")
    sv = (tmp_path / "sv" / f"{out.top}.sv").read_text()
    defs = definitions(sv)
    assert re.search(rf"reg\s+\[{depth - 1}:0\]\s+credits\b", sv), "credits is no thermometer"
    adm = leaves(defs, next_value(sv, "last_ok"))
    assert "credits" in adm and "last_gap_ok" in adm, sorted(adm)
    nxt = next_value(sv, "credits")
    arith = [n for n in cone(defs, nxt) if n in defs and re.search(r"[-+<>]", defs[n])]
    assert not re.search(r"[-+<>]", nxt) and not arith, arith


def test_the_last_beat_admission_is_one_flop_and_the_fed_form_has_none(tmp_path):
    """``a_ready`` reads one flop of the admission (``last_ok``: room for the tile AND the gap
    since the last tile), not the credits and the gap counter. The fed form (the matmul
    unit's) has no admission: no credits, and it takes every beat offered; its feeder runs
    the admission beside its head (the core's flop read by the feeder's take and the feeder's
    head read by the core's credits were the placed 8x8's two worst paths on seed 2 at
    fc1165b). That the admission admits at the right cycles is the formula and back-pressure
    runs' above, and for the fed form the matmul unit's and the whole-model sims'."""
    import re

    from pycde_accel.rtl_lib.emit import emit_core

    from sv_cone import definitions, leaves

    def ready_of(sv):
        return leaves(definitions(sv), re.search(r"assign\s+a_ready\s*=\s*(.*?);", sv,
                                                 re.S).group(1))

    out = emit_core(AccelConfig(rows=4, cols=4), tmp_path / "sv")
    sv = (tmp_path / "sv" / f"{out.top}.sv").read_text()
    ready = ready_of(sv)
    assert "last_ok" in ready and not {"credits", "last_gap_ok"} & ready, sorted(ready)

    out = emit_core(AccelConfig(rows=4, cols=4), tmp_path / "fed", fed=True)
    sv = (tmp_path / "fed" / f"{out.top}.sv").read_text()
    assert out.top.endswith("_fed") and not re.search(r"\b(credits|last_ok|last_gap)\b", sv)
    assert ready_of(sv) == {"b_valid", "rst"}, sorted(ready_of(sv))