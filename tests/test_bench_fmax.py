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
