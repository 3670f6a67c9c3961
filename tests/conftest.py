"""Shared test set-up.

Tests write nothing into the repo or the current folder: hypothesis keeps a storage folder
(example database, constants cache, patches) that defaults to ``./.hypothesis``; every test
process points it at a temporary folder removed at exit.

Fixtures: ``model_file`` writes small model files (every supported op, an unsupported op, a
dynamic shape) under tmp_path; ``fe_cache`` runs the frontend once per model spec and module;
``build_accel(cfg)`` emits the whole accelerator for ``cfg`` and returns its (lazily built,
session-cached) Verilator build. The ``bench/`` folder is on ``sys.path`` (``gemm_bench``).
"""

import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import configuration

# bench helpers the tests share (bench/gemm_bench.py: one standalone GEMM layer)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

_HYPOTHESIS_HOME = tempfile.TemporaryDirectory(prefix="pycde-accel-hypothesis-")
configuration.set_hypothesis_home_dir(_HYPOTHESIS_HOME.name)


def pytest_collection_modifyitems(config, items):
    """Tests in an xdist group run first (``--dist loadgroup`` in pyproject.toml: a group goes
    to one worker, in order): the group of the default array's placements is the slow set's
    longest chain, so it starts at once and the other workers run the rest beside it."""
    items.sort(key=lambda it: it.get_closest_marker("xdist_group") is None)   # stable



@pytest.fixture(scope="session", autouse=True)
def synth_cache(tmp_path_factory):
    """Synthesis results the tests make are kept in one cache folder per test session (shared by
    the xdist workers and the commands the tests run), never in the user's cache: a run starts
    cold and leaves nothing behind."""
    import os
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    root = base / "synth-cache"
    root.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as m:
        m.setenv("PYCDE_ACCEL_SYNTH_CACHE", str(root))
        yield root

# ---- model files the tests write under tmp_path --------------------------------------------
KITCHEN_SINK = '''\
import torch
from torch import nn


class KitchenSink(nn.Module):
    """Every supported op: conv (stride, padding) + BN, maxpool with padding, standalone ReLU,
    reshape/permute/transpose, bmm and matmul of two activations, flatten, Linear + BN1d,
    dropout, fused ReLU, residual add, and two outputs."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2, stride=1, padding=1)
        self.act = nn.ReLU()
        self.fc = nn.Linear(16, 8)
        self.bn1 = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.5)
        self.proj = nn.Linear(8, 8, bias=False)

    def forward(self, x):
        y = self.act(self.pool(self.bn(self.conv(x))))
        z = y.reshape(2, 4, 25).permute(0, 2, 1)
        zz = torch.bmm(z.transpose(1, 2), z)
        f = zz.flatten(1)
        h = self.drop(self.bn1(self.fc(f)))
        h2 = torch.relu(self.proj(h)) + h
        m = torch.matmul(h2.view(2, 2, 4).transpose(1, 2), h2.view(2, 2, 4))
        return m.view(2, 16), torch.relu(h2)


def build():
    torch.manual_seed(0)
    m = KitchenSink()
    with torch.no_grad():
        for bn in (m.bn, m.bn1):
            bn.running_mean.normal_(0, 0.2)
            bn.running_var.uniform_(0.5, 1.5)
            bn.weight.normal_(1, 0.2)
            bn.bias.normal_(0, 0.1)
    return m.eval(), (torch.randn(2, 2, 8, 8),)
'''

UNSUPPORTED = '''\
import torch
from torch import nn


class CumSum(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), CumSum())

    def forward(self, x):
        return self.features(x)


def build():
    return Net(), (torch.randn(1, 4),)
'''
# the line of "return torch.cumsum(x, 1)" above (the innermost frame of the refused op)
UNSUPPORTED_LINE = UNSUPPORTED.splitlines().index("        return torch.cumsum(x, 1)") + 1

DYNAMIC = '''\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x[x > 0] * 2


def build():
    return Net(), (torch.randn(1, 8),)
'''


SOURCES = {"kitchen_sink": KITCHEN_SINK, "unsupported": UNSUPPORTED, "dynamic": DYNAMIC}


@pytest.fixture
def model_file(tmp_path):
    """``model_file("kitchen_sink")`` writes that model under tmp_path and returns its path;
    ``model_file(name, text)`` writes ``text`` instead; ``model_file.sources`` are the models."""
    def write(name: str, text: str | None = None):
        path = tmp_path / f"{name}.py"
        path.write_text(SOURCES[name] if text is None else text)
        return path
    write.sources = SOURCES
    return write


@pytest.fixture
def unsupported_line():
    return UNSUPPORTED_LINE


# ---- the whole accelerator and frontend results, shared by the simulation tests ------------
@pytest.fixture(scope="module")
def fe_cache():
    """``fe_cache(spec)``: ``frontend.run(spec, eval_batches=1)``, once per spec and module."""
    from pycde_accel import frontend

    cache = {}

    def get(spec):
        if spec not in cache:
            cache[spec] = frontend.run(spec, eval_batches=1)
        return cache[spec]
    return get


@pytest.fixture(scope="session")
def build_accel(tmp_path_factory):
    """``build_accel(cfg)``: ``simulate.build_accelerator`` for ``cfg`` in a fresh folder, with
    the Verilator builds cached for the session (``pytest_cache_root``), so tests that build the
    same config share one build; a worker process emits each config's SV once."""
    from pycde_accel.sim.runner import pytest_cache_root
    from pycde_accel.simulate import build_accelerator
    builds = {}

    def build(cfg, rowred=False):
        """``rowred``: with the row-reduction unit (models with softmax or LayerNorm)."""
        if (cfg, rowred) not in builds:
            work = tmp_path_factory.mktemp(f"accel{cfg.rows}x{cfg.cols}")
            builds[cfg, rowred] = build_accelerator(
                cfg, work, cache_root=pytest_cache_root(tmp_path_factory), rowred=rowred)
        return builds[cfg, rowred]
    return build


@pytest.fixture(scope="session")
def bench_fmax():
    """``bench/fmax.py`` loaded as a module (bench/ is scripts, not a package)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "bench" / "fmax.py"
    spec = importlib.util.spec_from_file_location("bench_fmax", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
