"""``report`` from the CLI (report.md, self-contained report.html, report.json; the same bytes
when run again, which reuses the simulation) and ``--schedule`` reaching the generated design."""

import base64
import json
import os
import re
import subprocess
import sys

from pycde_accel.sim.runner import pytest_cache_root


def _cli(args, env):
    return subprocess.run([sys.executable, "-m", "pycde_accel", *args], capture_output=True,
                          text=True, env=env, timeout=1200)


def test_report_of_the_default_model(tmp_path, tmp_path_factory):
    env = dict(os.environ, PYCDE_ACCEL_CACHE=str(pytest_cache_root(tmp_path_factory)))
    out = tmp_path / "o"
    r = _cli(["report", "--out", str(out)], env)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""                       # no progress off a terminal
    names = {"report.md", "report.html", "report.json"}
    assert names <= {p.name for p in out.iterdir()}
    data = json.loads((out / "report.json").read_text())
    sim = json.loads((out / "sim" / "result.json").read_text())
    assert data["model"] == "mlp" and data["bit_exact"] is True
    assert [l["cycles"] for l in data["layers"]] == [l["cycles"] for l in sim["layers"]]
    assert data["total_cycles"] == sum(l["cycles"] for l in data["layers"]) == sim["total_cycles"]
    for l in data["layers"]:
        assert l["core_busy"] + l["core_stall"] + l["other"] == l["cycles"]
        if "predicted_cycles" in l:      # pycde_accel.perfmodel (its accuracy is tested there)
            assert l["predicted_cycles"] > 0 and "predicted_error_pct" in l
    assert data["resources"]["source"] == "estimate" and data["resources"]["device"] == "ecp5-85f"
    html = (out / "report.html").read_text()
    imgs = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(imgs) == 2 and all(base64.b64decode(i).startswith(b"\x89PNG") for i in imgs)
    assert "roofline" in html and "Cycles per layer" in html and str(tmp_path) not in html
    first = {n: (out / n).read_bytes() for n in names}
    again = _cli(["report", "--out", str(out)], env)                # reuses sim/result.json
    assert again.returncode == 0, again.stderr
    assert {n: (out / n).read_bytes() for n in names} == first
    # after 'synth' (its report.json, same config): the resource table is the measured one
    (out / "synth").mkdir()
    (out / "synth" / "report.json").write_text(json.dumps({
        "target": "ecp5-85f", "config": sim["config"], "placed": True, "fmax_mhz": 98.5,
        "resources": {"lut": 20000, "ff": 15000, "dsp": 73, "bram": 37, "carry": 5},
        "available": {"lut": 83640, "ff": 83640, "dsp": 156, "bram": 208}}))
    third = _cli(["report", "--out", str(out)], env)
    assert third.returncode == 0, third.stderr
    res = json.loads((out / "report.json").read_text())["resources"]
    assert res["source"] == "synthesis" and res["fmax_mhz"] == 98.5
    assert {r["resource"]: r["used"] for r in res["rows"]} == {"lut": 20000, "ff": 15000, "dsp": 73,
                                                               "bram": 37}
    assert "| DSP | 73 | 156 | 46.8% |" in (out / "report.md").read_text()


def test_schedule_reaches_the_design(tmp_path):
    """``--schedule dynamic`` lowers the post-op kernels through handshake (the default static
    route goes through the pipeline dialect) and is recorded in design.json."""
    out = tmp_path / "d"
    r = _cli(["gen", "--schedule", "dynamic", "--out", str(out)], dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "design.json").read_text())["config"]["schedule"] == "dynamic"
    stages = {p.name for p in (out / "ir" / "kernels" / "requantize_pc" / "ir").iterdir()}
    assert "04_handshake.mlir" in stages and "03_pipeline.mlir" not in stages
