"""Run a ``<kernel>_stream`` module (lowering.stream) through stream_tb.py in Verilator."""

from __future__ import annotations

import json
from pathlib import Path

from pycde_accel.lowering import build_kernel
from pycde_accel.lowering.stream import emit_stream
from pycde_accel.sim import runner


def build_stream(kernel, base: Path, route: str):
    lowered = build_kernel(kernel, base / "k", route=route)
    filelist = emit_stream(kernel, lowered, base / "sv")
    return runner.build(filelist, f"{kernel.name}_stream", cache_root=base / "build")


def run_stream(kernel, sim, base: Path, tag: str, inputs: dict, scalars: dict,
               p_valid: float, p_ready: float, seed: int = 3) -> dict:
    """Outputs (``out``), ``done`` pulses and the cycle of each result (``edges``)."""
    cfg = {"inputs": {k: [int(v) for v in vs] for k, vs in inputs.items()},
           "scalars": {k: int(v) for k, v in scalars.items()}, "n": kernel.n,
           "p_valid": p_valid, "p_ready": p_ready, "seed": seed}
    cfg_path, res = base / f"{tag}.json", base / f"{tag}.result.json"
    cfg_path.write_text(json.dumps(cfg))
    runner.run(sim, "stream_tb", base / tag, module_dirs=[Path(__file__).parent],
               extra_env={"STREAM_TB_CONFIG": str(cfg_path), "STREAM_TB_RESULT": str(res)})
    return json.loads(res.read_text())
