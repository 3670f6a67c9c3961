"""bench/model.py with a config the accelerator cannot be built at: one line naming the
problem and exit status 2, no traceback and no simulation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bad_config_is_one_line():
    # a 128-bit beat is 16 bytes: the 8-column array's C-tile rows would not be whole beats
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "model.py"), "--axi", "128",
                        "--models", "mlp"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "cols=8" in lines[0], r.stderr
    assert "simulated" not in r.stdout
