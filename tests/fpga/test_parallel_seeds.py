"""bench/fmax.py's place_seeds with --jobs: the other seeds start from Yosys's netlist while
the first seed is placed, and give what one at a time gives."""

from __future__ import annotations


def test_seeds_placed_side_by_side(bench_fmax, tiny_sv, ecp5_run, tmp_path, monkeypatch,
                                   capsys):
    monkeypatch.setenv("PYCDE_ACCEL_SYNTH_CACHE", "off")
    fmax = bench_fmax
    rep, by_seed, cp = fmax.place_seeds(tiny_sv, "TinyMac", tmp_path / "tiny", [1, 2], 100.0,
                                        "tiny", jobs=2)
    assert list(by_seed) == [1, 2] and all(v and v > 0 for v in by_seed.values())
    # nextpnr is deterministic for a seed: seed 1 here is the fixture's seed-1 placement
    assert by_seed[1] == ecp5_run[0].fmax_mhz
    assert (tmp_path / "tiny-seed2" / "nextpnr.json").is_file()
    assert cp is not None and cp.delay_ns > 0
    out = capsys.readouterr().out.splitlines()
    started = out.index("tiny: nextpnr-ecp5: place and route, seed 2, towards 100 MHz")
    first_done = next(i for i, l in enumerate(out) if l.startswith("tiny: nextpnr-ecp5: done in"))
    assert started < first_done, out
