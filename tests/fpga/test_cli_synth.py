"""``python -m pycde_accel synth``: target lookup, fit check first, report or vendor files.

``flow.write_gen`` is replaced by one that writes the tiny design into ``out/sv`` (and the
frontend by nothing), so these tests
check the synth wiring without depending on the frontend or the systolic core.
"""

import json
import shutil

import pytest

from pycde_accel import cli, flow


@pytest.fixture
def fake_gen(monkeypatch, tiny_sv):
    calls = []

    def write_gen(fe, out, config, *, progress=None, compiled=None):
        calls.append(config)
        (out / "sv").mkdir(parents=True)
        for f in tiny_sv:
            shutil.copyfile(f, out / "sv" / f.name)
        (out / "sv" / "filelist.f").write_text("".join(f.name + "\n" for f in tiny_sv))
        (out / "design.json").write_text(json.dumps({"config": config.to_dict()}))

    monkeypatch.setattr(flow, "frontend_result", lambda model, seed=0: None)
    monkeypatch.setattr(flow, "write_gen", write_gen)
    return calls


def test_unknown_target_is_one_line_with_the_list(capsys, fake_gen, tmp_path):
    assert cli.main(["synth", "--target", "nope", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "ecp5-85f" in err and "ice40-up5k" in err and "xc7a100t" in err
    assert not fake_gen


def test_fit_check_refuses_before_generating(capsys, fake_gen, tmp_path):
    out = tmp_path / "o"
    assert cli.main(["synth", "--array", "16x16", "--target", "ecp5-25f", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    # 16x16 PEs need 256 DSPs before the kernels' own multipliers; the part has 28
    import re
    need = int(re.search(r"needs (\d+) DSP", err).group(1))
    assert need >= 256 and "has 28" in err and err.count("\n") == 1
    assert not fake_gen and not out.exists()


def test_open_flow_writes_the_report_under_synth(capsys, fake_gen, tmp_path):
    out = tmp_path / "o"
    # the 25F: the same flow as the 85F, and nextpnr loads a third of the chip database (the
    # conftest's ecp5_run places the same design on the 85F)
    assert cli.main(["synth", "--array", "2x4", "--target", "ecp5-25f", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "DSP 1" in printed and "Fmax clk" in printed
    rep = json.loads((out / "synth" / "report.json").read_text())
    assert rep["top"] == "TinyMac" and rep["config"]["rows"] == 2 and rep["target"] == "ecp5-25f"
    assert (out / "synth" / "report.md").is_file()
    assert fake_gen[0].target == "ecp5-25f"


def test_vendor_target_writes_project_scripts(capsys, fake_gen, tmp_path):
    out = tmp_path / "o"
    assert cli.main(["synth", "--target", "xc7a100t", "--out", str(out)]) == 0
    tcl = (out / "vivado" / "build.tcl").read_text()
    assert "read_verilog -sv [file join $here ../sv/TinyMul.sv]" in tcl
    assert "read_verilog -sv [file join $here ../sv/TinyMac.sv]" in tcl
    assert "-top TinyMac" in tcl
    assert "create_clock -period 10.000" in (out / "vivado" / "clocks.xdc").read_text()
    assert not (out / "synth").exists()


@pytest.mark.slow
def test_real_synth_of_the_generated_default_accelerator(capsys, tmp_path):
    """The whole path: flow.gen (frontend, back end, the whole accelerator at the default array)
    then Yosys, for the 85F, without the placement (``--no-place``: its 15-25 minutes are
    bench/fmax.py's; the documented commands place a small design on the 25F)."""
    out = tmp_path / "o"
    assert cli.main(["synth", "--no-place", "--target", "ecp5-85f", "--out", str(out)]) == 0
    assert "synthesis only" in capsys.readouterr().out
    rep = json.loads((out / "synth" / "report.json").read_text())
    assert rep["resources"]["dsp"] >= 64                # one MULT18X18D per PE, plus the kernels'
    assert rep["resources"]["bram"] > 0                 # scratchpads in block RAM
    assert rep["resources"]["lut"] > 0 and not rep["placed"] and rep["fmax_mhz"] is None
    assert rep["config"]["rows"] == 8 and rep["top"] == "pycde_accel_top"
    assert (out / "sv" / "filelist.f").is_file()
