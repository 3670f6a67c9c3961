"""fpga.paths: every register-to-register path of a synthesized netlist, estimated before placement."""

import json
import subprocess
import sys

import pytest

from pycde_accel.fpga.paths import DelayModel, analyze, base_name, main


def _cell(typ, ins: dict, outs: dict, params=None):
    conns = {**ins, **outs}
    dirs = {**{p: "input" for p in ins}, **{p: "output" for p in outs}}
    return {"type": typ, "parameters": params or {}, "port_directions": dirs,
            "connections": {p: list(b) for p, b in conns.items()}}


def _netlist(cells: dict, ports: dict | None = None) -> dict:
    return {"modules": {"top": {"attributes": {"top": "1"}, "ports": ports or {},
                                "cells": cells, "netnames": {}}}}


def _ff(name_d, d, q):
    return _cell("TRELLIS_FF", {"CLK": [1], "DI": [d]}, {"Q": [q]})


def test_two_luts_between_flops_add_up():
    m = DelayModel()
    cells = {
        "ctl.count_TRELLIS_FF_Q": _ff("c", 10, 2),
        "l1": _cell("LUT4", {"A": [2], "B": ["0"], "C": ["0"], "D": ["0"]}, {"Z": [3]}),
        "l2": _cell("LUT4", {"A": [3], "B": [2], "C": ["0"], "D": ["0"]}, {"Z": [4]}),
        "ctl.flag_TRELLIS_FF_Q": _ff("f", 4, 5),
    }
    res = analyze(_netlist(cells), m)
    ep = next(e for e in res.endpoints if e.name == "ctl.flag_TRELLIS_FF_Q/DI")
    # net 2 drives three inputs (the FF's D of count is net 10, undriven): fanout 2 at l1/l2
    r2 = m.route_ns + m.route_fanout_ns * 1.0
    expect = m.clk_to_q + r2 + m.lut + m.route_ns + m.lut + m.route_ns + m.setup
    assert ep.arrival == pytest.approx(expect)
    assert ep.path == ["ctl.count_TRELLIS_FF_Q", "l1", "l2", "ctl.flag_TRELLIS_FF_Q"]
    assert ep.group == "ctl.count -> ctl.flag"
    assert res.over(expect - 0.01) and not res.over(expect + 0.01)
    assert res.unknown == {}


def test_carry_chain_has_no_routing_between_cells():
    m = DelayModel()
    cells = {
        "a": _ff("a", 20, 2),
        "c0": _cell("CCU2C", {"A0": [2], "B0": ["0"], "C0": ["0"], "D0": ["0"], "A1": ["0"],
                              "B1": ["0"], "C1": ["0"], "D1": ["0"], "CIN": ["0"]},
                    {"S0": [3], "S1": [4], "COUT": [5]}),
        "c1": _cell("CCU2C", {"A0": ["0"], "B0": ["0"], "C0": ["0"], "D0": ["0"], "A1": ["0"],
                              "B1": ["0"], "C1": ["0"], "D1": ["0"], "CIN": [5]},
                    {"S0": [6], "S1": [7], "COUT": [8]}),
        "sum_hi": _ff("s", 7, 9),
    }
    res = analyze(_netlist(cells), m)
    ep = next(e for e in res.endpoints if e.name == "sum_hi/DI")
    expect = m.clk_to_q + m.route_ns + m.carry_in + m.carry_sum + m.route_ns + m.setup
    assert ep.arrival == pytest.approx(expect)
    assert ep.path == ["a", "c0", "c1", "sum_hi"]


def test_block_ram_output_register_sets_the_start_time():
    m = DelayModel()
    for mode, start in (("NOREG", m.bram_noreg), ("OUTREG", m.bram_reg)):
        cells = {"ram": _cell("DP16KD", {"CLKA": [1], "ADA0": [2]}, {"DOA0": [3]},
                              {"REGMODE_A": mode}),
                 "q": _ff("q", 3, 4)}
        ep = next(e for e in analyze(_netlist(cells), m).endpoints if e.name == "q/DI")
        assert ep.arrival == pytest.approx(start + m.route_ns + m.setup)


def test_unknown_cells_are_counted_and_break_paths():
    cells = {"x": _cell("MYSTERY", {"I": [2]}, {"O": [3]}), "q": _ff("q", 3, 4)}
    res = analyze(_netlist(cells))
    assert res.unknown == {"MYSTERY": 1}
    ep = next(e for e in res.endpoints if e.name == "q/DI")
    assert ep.path == ["x", "q"]


def test_base_name_folds_buses_and_techmap_suffixes():
    assert base_name("vector.ma_tokens_TRELLIS_FF_Q_12") == "vector.ma_tokens"
    assert base_name("store.param_m0.0.0_DOA1") == base_name("store.param_m0.0.0_DOA2")
    assert base_name("fifo_rd_addr_5_LUT4_Z") == "fifo_rd_addr"


def test_cli_prints_groups_and_refuses_a_bad_file(tmp_path, capsys):
    cells = {"a": _ff("a", 9, 2),
             "l": _cell("LUT4", {"A": [2]}, {"Z": [3]}),
             "b": _ff("b", 3, 4)}
    f = tmp_path / "netlist.json"
    f.write_text(json.dumps(_netlist(cells)))
    assert main([str(f), "--mhz", "1000"]) == 0
    out = capsys.readouterr().out
    assert "over 1.00 ns (1000 MHz)" in out and "a -> b" in out
    bad = tmp_path / "nope.json"
    r = subprocess.run([sys.executable, "-m", "pycde_accel.fpga.paths", str(bad)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "nope.json" in r.stderr


def test_real_netlist_estimate_is_near_the_placed_path(ecp5_run):
    rep, work = ecp5_run
    res = analyze(json.loads((work / "netlist.json").read_text()))
    assert res.unknown == {}
    worst = max(e.arrival for e in res.endpoints)
    # an estimate, not a placement: within a factor of two of nextpnr's critical path
    assert 0.5 * rep.critical_path.delay_ns < worst < 2.0 * rep.critical_path.delay_ns
