"""The Python API: ``pycde_accel.compile(module, example_inputs, config) -> Design`` with
``emit``, ``simulate``, ``synthesize`` and ``report`` returning result objects (nothing printed)."""

import contextlib
import json
import shutil

import numpy as np
import pytest
import torch
from torch import nn

import pycde_accel
from pycde_accel import backend, flow
from pycde_accel.errors import ConfigError, UserError
from pycde_accel.frontend import reference
from pycde_accel.sim.runner import pytest_cache_root


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 24)
        self.fc2 = nn.Linear(24, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def _net():
    torch.manual_seed(1)
    return Net(), (torch.randn(2, 16),)


@pytest.fixture(scope="module")
def design():
    return pycde_accel.compile(*_net(), config=pycde_accel.AccelConfig())


def test_compile_an_in_memory_module(design, capsys):
    assert design.name == "Net" and design.config.array == "8x8"
    assert [l["op"] for l in design.layers] == ["gemm", "gemm"]
    assert all(l["cmd_count"] > 0 for l in design.layers)
    assert design.accuracy["top1_agreement"] >= 0.9
    pred = design.predict()
    if pred is not None:
        assert len(pred.layers) == 2 and pred.total_cycles > 0
    assert capsys.readouterr() == ("", "")      # nothing printed


def test_compile_refuses_bad_arguments():
    m, x = _net()
    with pytest.raises(UserError, match="needs example inputs"):
        pycde_accel.compile(m)
    with pytest.raises(UserError, match="dtype torch.int32; float inputs expected"):
        pycde_accel.compile(m, (x[0].int(),))
    with pytest.raises(UserError, match="got a builtins.object as the module|got a object as the module"):
        pycde_accel.compile(object(), x)
    with pytest.raises(ConfigError, match="unknown field"):
        pycde_accel.compile(m, x, config={"rowz": 4})
    with pytest.raises(ConfigError, match="rows must be an integer >= 1"):
        pycde_accel.compile(m, x, config={"rows": 0})
    with pytest.raises(UserError, match="unsupported op aten._?log_softmax"):
        pycde_accel.compile(nn.Sequential(nn.Linear(4, 4), nn.LogSoftmax(1)), (torch.randn(1, 4),))


@contextlib.contextmanager
def _compiled_once():
    """A context in which the back end refuses to run: the Design hands its one compiled
    program down to emit, simulate and synthesize."""
    def again(*_a, **_k):
        raise AssertionError("the model was compiled again")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(backend, "compile_program", again)
        yield


def test_simulate_other_inputs_bit_exact(design, tmp_path_factory, capsys):
    x = np.random.default_rng(5).standard_normal((2, 16))
    with _compiled_once():
        r = design.simulate((x,), cache_root=pytest_cache_root(tmp_path_factory))
    assert r.bit_exact, r.mismatches
    qm = design.frontend.quantized
    want = reference.run(qm, reference.quantize_inputs(qm, [x])).outputs[0]
    assert np.array_equal(r.outputs[0], want)
    assert [l["name"] for l in r.layers] == [l["name"] for l in design.layers]
    assert r.total_cycles == sum(l["cycles"] for l in r.layers) > 0
    with pytest.raises(UserError, match=r"input 0 has shape \(3, 16\)"):
        design.simulate((np.zeros((3, 16)),))
    # report from the result, without another simulation
    out = tmp_path_factory.mktemp("rep")
    rep = design.report(out, sim=r)
    assert rep.data["total_cycles"] == r.total_cycles and rep.data["bit_exact"]
    assert {p.name for p in out.iterdir()} >= {"report.md", "report.html", "report.json"}
    assert capsys.readouterr() == ("", "")


@pytest.fixture(scope="module")
def emitted(design, tmp_path_factory):
    out = tmp_path_factory.mktemp("api") / "emit"
    with _compiled_once():
        return design.emit(out)


def test_emit(emitted, capsys):
    e = emitted
    assert e.top == "pycde_accel_top" and e.sv_files and all(f.is_file() for f in e.sv_files)
    d = json.loads(e.design_json.read_text())
    assert d["model"] == {"name": "Net", "spec": "Net"} and d["config"]["rows"] == 8
    assert all(f.is_file() for f in e.host_files)
    assert capsys.readouterr() == ("", "")


def test_synthesize_for_a_vendor_target(design, emitted, tmp_path, monkeypatch):
    """Vivado handoff: the project scripts list every SV file of the design and its top (the
    generation itself is the emitted folder, copied, to keep the test short)."""
    seen = []

    def write_gen(fe, folder, config, *, progress=None, compiled=None):
        seen.append((fe, config, compiled))
        shutil.copytree(emitted.out, folder, dirs_exist_ok=True)
    monkeypatch.setattr(flow, "write_gen", write_gen)
    r = design.synthesize("xc7a100t", out=tmp_path / "v")
    assert r.report is None and r.top == "pycde_accel_top"
    assert seen[0][0] is design.frontend and seen[0][1].target == "xc7a100t"
    assert seen[0][2] is None           # another target than compiled for: compiled anew
    tcl = (tmp_path / "v" / "vivado" / "build.tcl").read_text()
    assert "-top pycde_accel_top" in tcl
    for f in emitted.sv_files:
        assert f"../sv/{f.name}" in tcl
    with pytest.raises(UserError, match="unknown target 'nope'"):
        design.synthesize("nope")
