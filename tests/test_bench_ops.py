"""bench/ops.py runs (at one small case), ends with its JSON line, and --help works."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args):
    return subprocess.run([sys.executable, str(ROOT / "bench" / "ops.py"), *args], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)


def test_help():
    r = _run("--help")
    assert r.returncode == 0 and "--only" in r.stdout


def test_small_cases_print_ratios():
    r = _run("--only", "c8_")
    assert r.returncode == 0, r.stderr
    last = json.loads(r.stdout.strip().splitlines()[-1])
    cases = last["cases"]
    assert set(cases) == {"depthwise3x3_c8_6x6", "avgpool2x2_c8_4x4"}
    for c in cases.values():
        assert c["ops"] == ["wgemm"] and c["cycles"] > 0
        assert 0 < c["ratio"] <= 1.0 and 0 < c["engine_ratio"] <= 1.0
    assert cases["depthwise3x3_c8_6x6"]["bound"] == "macs"
    assert cases["avgpool2x2_c8_4x4"]["bound"] == "bus"
