"""``python -m pycde_accel ir``: --list, --stage built on demand, clear one-line errors."""

from __future__ import annotations

import re
import subprocess

import pytest

from pycde_accel.cli import main
from pycde_accel.config import AccelConfig
from pycde_accel.toolchain import verilator_bin


def test_ir_list(capsys):
    # no MODEL: the default model's route (frontend's model, then its post-op kernels); no
    # --schedule: the config's, the route gen builds the accelerator's kernels by
    assert main(["ir", "--list"]) == 0
    default = capsys.readouterr().out
    assert main(["ir", "--list", "--schedule", AccelConfig().schedule]) == 0
    assert capsys.readouterr().out == default
    assert main(["ir", "--list", "--schedule", "dynamic"]) == 0
    names = [ln.split()[0] for ln in capsys.readouterr().out.splitlines()]
    assert names == ["00_linalg", "01_postops", "02_bufferize", "03_scf", "04_cf", "05_handshake",
                     "06_handshake_opt", "07_hw", "08_sv"]
    assert main(["ir", "--kernel", "clamp", "--list", "--schedule", "dynamic"]) == 0
    names = [ln.split()[0] for ln in capsys.readouterr().out.splitlines()]
    assert names == ["00_linalg", "01_bufferize", "02_scf", "03_cf", "04_handshake",
                     "05_handshake_opt", "06_hw", "07_sv"]
    assert main(["ir", "--kernel", "clamp", "--list", "--schedule", "static"]) == 0
    names = [ln.split()[0] for ln in capsys.readouterr().out.splitlines()]
    assert names == ["00_linalg", "01_bufferize", "02_scf", "03_pipeline", "04_hw", "05_sv"]
    assert main(["ir", "--kernel", "clamp", "--list", "--schedule", "calyx"]) == 0
    names = [ln.split()[0] for ln in capsys.readouterr().out.splitlines()]
    assert names == ["00_linalg", "01_bufferize", "02_scf", "03_scf_while", "04_calyx",
                     "05_calyx_opt", "06_hw", "07_sv"]
    assert main(["ir", "mlp", "--list", "--schedule", "static"]) == 0
    assert "04_pipeline" in capsys.readouterr().out
    assert main(["ir", "mlp", "--list", "--schedule", "calyx"]) == 0
    names = [ln.split()[0] for ln in capsys.readouterr().out.splitlines()]
    assert names[-4:] == ["05_calyx", "06_calyx_opt", "07_hw", "08_sv"]


def test_ir_stage_of_a_kernel(tmp_path, capsys):
    assert main(["ir", "--kernel", "clamp", "--stage", "hw", "--schedule", "dynamic",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "hw.module @clamp(" in out
    assert (tmp_path / "ir/05_handshake_opt.mlir").exists()
    assert not (tmp_path / "ir/07_sv.mlir").exists()  # built only as far as asked
    assert main(["ir", "--kernel", "clamp", "--stage", "02_scf", "--schedule", "dynamic",
                 "--out", str(tmp_path)]) == 0
    assert "scf.for" in capsys.readouterr().out


def test_ir_unknown_stage_is_one_line(capsys):
    assert main(["ir", "--stage", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such stage" in err


def test_ir_calyx_route_of_a_kernel_reaches_sv(tmp_path, capsys):
    rc = main(["ir", "--kernel", "clamp", "--schedule", "calyx", "--stage", "sv",
               "--out", str(tmp_path)])
    assert rc == 0 and "hw.module @clamp" in capsys.readouterr().out
    assert "calyx.component @clamp" in (tmp_path / "ir/04_calyx.mlir").read_text()
    sv = (tmp_path / "sv/clamp.sv").read_text()
    assert "module clamp(" in sv and "1'bz" not in sv     # every cell's clk/reset driven


#: post-op kernels each built-in model needs (frontend graph order): per Linear/Conv a
#: requantize of its accumulator (+relu when fused), per add a residual_add, per MaxPool a maxpool
EXPECTED_KERNELS = {
    "mlp": ["linear_requantize_relu_pc", "linear_1_requantize_relu_pc", "linear_2_requantize_pc"],
    "lenet5": ["conv2d_requantize_relu_pc", "max_pool2d_maxpool", "conv2d_1_requantize_relu_pc",
               "max_pool2d_1_maxpool", "linear_requantize_relu_pc", "linear_1_requantize_relu_pc",
               "linear_2_requantize_pc"],
    "resblock": ["conv2d_requantize_relu_pc", "conv2d_1_requantize_relu_pc",
                 "conv2d_2_requantize_pc", "add_residual_add", "max_pool2d_maxpool",
                 "linear_requantize_pc"],
}


@pytest.mark.parametrize("model", sorted(EXPECTED_KERNELS))
def test_ir_chain_of_builtin_model(model, tmp_path, capsys):
    """Every stage of the model route builds for each built-in, down to SV: 00 is the whole
    model; 01 its post-op kernels (the matmuls stay on the systolic core), which reach SV."""
    assert main(["ir", model, "--list", "--schedule", "dynamic"]) == 0
    tags = [ln.split()[0] for ln in capsys.readouterr().out.splitlines()]
    assert tags[0] == "00_linalg" and tags[1] == "01_postops" and tags[-1].endswith("_sv")
    rc = main(["ir", model, "--stage", tags[-1], "--schedule", "dynamic", "--out", str(tmp_path)])
    assert rc == 0, capsys.readouterr().err
    capsys.readouterr()
    for tag in tags:
        assert (tmp_path / f"ir/{tag}.mlir").stat().st_size > 0, tag
    assert not list((tmp_path / "ir").glob("*.failed-input.mlir"))
    assert "func.func @forward" in (tmp_path / "ir/00_linalg.mlir").read_text()
    want = EXPECTED_KERNELS[model]
    postops = (tmp_path / "ir/01_postops.mlir").read_text()
    assert re.findall(r"func\.func @(\w+)\(", postops) == want
    assert "linalg.matmul" not in postops and "linalg.conv" not in postops
    hw = (tmp_path / "ir/07_hw.mlir").read_text()
    sv = (tmp_path / f"sv/{model}.sv").read_text()
    for k in want:
        assert f"hw.module @{k}(" in hw
        assert f"module {k}(" in sv
    assert "struct packed" not in sv and "automatic" not in sv and str(tmp_path) not in sv
    # helper modules are per kernel, so no module is defined twice
    mods = re.findall(r"^module (\w+)\(", sv, re.M)
    assert len(mods) == len(set(mods))
    lint = subprocess.run([verilator_bin(), "--lint-only", "-Wno-fatal", "-Wno-WIDTH",
                           "-Wno-MULTITOP", str(tmp_path / f"sv/{model}.sv")],
                          capture_output=True, text=True)
    assert lint.returncode == 0, lint.stderr[-2000:]
    # asking again reuses what is on disk; the stage printed is the file
    assert main(["ir", model, "--stage", "hw", "--schedule", "dynamic",
                 "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out == hw


def test_ir_static_route_of_a_model_reaches_sv(tmp_path, capsys):
    """The static schedule (pipeline dialect) for resblock: every kernel one hw.module."""
    model = "resblock"
    assert main(["ir", model, "--list", "--schedule", "static"]) == 0
    tags = [ln.split()[0] for ln in capsys.readouterr().out.splitlines()]
    assert tags == ["00_linalg", "01_postops", "02_bufferize", "03_scf", "04_pipeline", "05_hw",
                    "06_sv"]
    rc = main(["ir", model, "--schedule", "static", "--stage", "sv", "--out", str(tmp_path)])
    assert rc == 0, capsys.readouterr().err
    for tag in tags:
        assert (tmp_path / f"ir/{tag}.mlir").stat().st_size > 0, tag
    piped = (tmp_path / "ir/04_pipeline.mlir").read_text()
    assert piped.count("pipeline.scheduled") == len(EXPECTED_KERNELS[model])
    sv = (tmp_path / f"sv/{model}.sv").read_text()
    for k in EXPECTED_KERNELS[model]:
        assert f"module {k}(" in sv
    lint = subprocess.run([verilator_bin(), "--lint-only", "-Wno-fatal", "-Wno-WIDTH",
                           "-Wno-MULTITOP", str(tmp_path / f"sv/{model}.sv")],
                          capture_output=True, text=True)
    assert lint.returncode == 0, lint.stderr[-2000:]


def test_ir_calyx_route_of_a_model_reaches_sv(tmp_path, capsys):
    rc = main(["ir", "mlp", "--schedule", "calyx", "--stage", "sv", "--out", str(tmp_path)])
    assert rc == 0
    calyx = (tmp_path / "ir/05_calyx.mlir").read_text()
    sv = (tmp_path / "sv/mlp.sv").read_text()
    for k in EXPECTED_KERNELS["mlp"]:
        assert f"calyx.component @{k}(" in calyx
        assert f"module {k}(" in sv
