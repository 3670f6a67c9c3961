"""pycde_accel.workers: spawned, supervised workers. A task that dies, stalls (with children of
its own) or raises becomes an error line naming it, its process group is gone, and the other
tasks' results are all there; a parent that has used torch's thread pools still gets answers
(a forked child of such a parent can wait forever; spawned ones start clean)."""

from __future__ import annotations

import os
import time

import pytest

from pycde_accel.workers import run_jobs

JOBS = '''\
import os, signal, subprocess, sys, time


def job(kind, arg):
    if kind == "ok":
        return arg * 2
    if kind == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "exit":
        os._exit(3)
    if kind == "raise":
        raise RuntimeError(f"bad input {arg}\\nsecond line")
    if kind == "stall":
        # a child in the worker's process group, as a Verilator build would be; its pid is
        # left in a file so the test can check that it was killed with the worker
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(arg, "w") as fh:
            fh.write(str(p.pid))
        time.sleep(600)
    if kind == "torch":
        import torch
        return float(torch.ones(256, 256).matmul(torch.ones(256, 256)).sum())
    raise ValueError(kind)


STATE = {}


def setup(value):
    STATE["v"] = value


def read_state(_):
    return STATE.get("v")
'''


@pytest.fixture
def jobs_mod(tmp_path, monkeypatch):
    """A module of job functions the spawned workers can import (spawn passes sys.path)."""
    import importlib
    (tmp_path / "t_worker_jobs.py").write_text(JOBS)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("t_worker_jobs")
    yield mod
    import sys
    sys.modules.pop("t_worker_jobs", None)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_dead_stalled_and_failing_tasks_are_named_and_the_rest_finish(jobs_mod, tmp_path):
    pidfile = tmp_path / "child.pid"
    tasks = [("ok", 1), ("die", 0), ("stall", str(pidfile)), ("ok", 2), ("raise", 7),
             ("exit", 0), ("ok", 3)]
    names = [f"candidate c{i}" for i in range(len(tasks))]
    limits = [60, 60, 8, 60, 60, 60, 60]
    t0 = time.monotonic()
    outs = run_jobs(jobs_mod.job, tasks, jobs=2, limits=limits, names=names)
    took = time.monotonic() - t0
    assert [o.value for o in outs if o.ok] == [2, 4, 6]
    assert outs[1].error == "candidate c1: the worker process died (killed by SIGKILL)"
    assert outs[2].error == "candidate c2 did not finish within 8 s"
    assert outs[4].error == "candidate c4: RuntimeError: bad input 7"
    assert outs[5].error == "candidate c5: the worker process died (exit code 3)"
    assert took < 60                 # the stalled one was stopped at its limit, not awaited
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child), "the stalled task's child outlived its worker"


def test_init_runs_in_each_worker(jobs_mod):
    outs = run_jobs(jobs_mod.read_state, [(0,), (1,), (2,)], jobs=2,
                    init=(jobs_mod.setup, ("handed over",)))
    assert [o.value for o in outs] == ["handed over"] * 3


def test_workers_after_torch_threads_in_parent(jobs_mod):
    """The parent has run torch's intra-op pool (as the frontend does); two workers that use
    it too still answer."""
    import torch
    torch.ones(512, 512).matmul(torch.ones(512, 512))
    outs = run_jobs(jobs_mod.job, [("torch", 0), ("torch", 0)], jobs=2, limits=[120, 120])
    assert [o.value for o in outs] == [256.0 ** 3, 256.0 ** 3]
