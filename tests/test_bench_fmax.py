"""bench/fmax.py's choices that need no placement: the largest array the device's multipliers
hold next to the kernels', and the refused --seeds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pycde_accel.contract import MAX_ARRAY_DIM

ROOT = Path(__file__).resolve().parents[1]


def test_largest_array_fills_the_multipliers(bench_fmax):
    fmax = bench_fmax
    # the 85F's 156 MULT18X18D, 13 taken by the kernels, 8-byte beats: 17 rows of 8 columns
    assert fmax.largest_array(13, 156, 8) == (17, 8)
    for kernel, device, beat in [(13, 156, 8), (0, 156, 8), (5, 28, 4), (13, 256, 16)]:
        rows, cols = fmax.largest_array(kernel, device, beat)
        assert cols % beat == 0 and rows <= MAX_ARRAY_DIM and cols <= MAX_ARRAY_DIM
        assert rows * cols <= device - kernel
        # no other legal shape holds more PEs
        assert all(min((device - kernel) // c, MAX_ARRAY_DIM) * c <= rows * cols
                   for c in range(beat, MAX_ARRAY_DIM + 1, beat))
    assert fmax.largest_array(156, 156, 8) is None


def test_zero_seeds_is_refused():
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "fmax.py"), "--seeds", "0"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and "--seeds" in r.stderr and "Traceback" not in r.stderr


def test_each_seeds_worst_register_pairs_are_printed(bench_fmax, tmp_path, capsys):
    """``log_near_critical`` prints the first lines of each seed's ``paths.txt`` (the seed
    folders as ``place_seeds`` names them), and skips a seed that has none."""
    from pycde_accel.fpga import nextpnr

    lines = ["header", "", "  1.  7.865 ns (slack -1.198, routing 5.173, 5 LUT steps)  a -> b",
             "       clk-to-q   0.525  a_TRELLIS_FF_Q/Q",
             "  2.  7.801 ns (slack -1.134, routing 6.096, 6 LUT steps)  c -> d"]
    (tmp_path / "accel").mkdir()
    (tmp_path / "accel" / nextpnr.PATHS).write_text("\n".join(lines) + "\n")
    (tmp_path / "accel-seed3").mkdir()
    (tmp_path / "accel-seed3" / nextpnr.PATHS).write_text(lines[2] + "\n")
    bench_fmax.log_near_critical("accel", tmp_path, [1, 2, 3], top=1)
    out = capsys.readouterr()
    text = out.out + out.err
    assert "seed 1: the 1 worst register pairs" in text and "a -> b" in text
    assert "c -> d" not in text and "seed 2" not in text
    assert "seed 3: the 1 worst register pairs" in text
