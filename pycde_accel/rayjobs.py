"""Ray as the engine of :func:`pycde_accel.workers.run_jobs`: the same tasks, the same
:class:`~pycde_accel.workers.Outcome` per task, in task order, on a Ray cluster.

``run_jobs_ray(fn, tasks, address=..., jobs=J, limits=..., names=..., init=...)`` runs
``fn(*task)`` as one Ray task each (``max_retries=0``: a task that fails is reported, not run
twice). ``address``: a running cluster (``ray://host:10001``, ``host:6379``, ``auto``); None
starts a local Ray instance with ``J`` CPUs for the call (or for a :func:`session`) and stops
it after. Ray is an optional extra (``pip install -e '.[ray]'``); without it ``--ray`` is a
one-line error.

- ``init`` (``(function, args)``) is called once in each Ray worker process before its first
  task of this call (its args travel once through the object store, not with every task),
  as ``run_jobs`` calls it once per worker: e.g. the frontend result the parent computed.
- At most ``J`` tasks (default: the cluster's CPUs) are handed out at once, so a task's time
  limit (``limits[i]`` seconds) counts from the moment it starts, as in ``run_jobs``; a task
  past its limit is cancelled with its worker process killed (``ray.cancel(force=True)``) and
  becomes ``"<name> did not finish within N s"``; a worker that dies becomes ``"<name>: the
  worker process died (...)"``; an exception ``"<name>: <Type>: <first line>"``.
- Results come back through the object store; work folders named in the tasks are folders
  of the node that runs them (on one machine: the caller's).
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from typing import Callable, Iterator, Sequence

from .errors import UserError
from .workers import Outcome, _one_line, _secs

Progress = Callable[[str], None]

#: init tokens this worker process has run (a Ray worker serves many tasks)
_DONE: set = set()


def _quiet(_: str) -> None:
    pass


def _ray():
    try:
        import ray
    except ImportError:
        raise UserError("--ray needs Ray, an optional extra: pip install -e '.[ray]' "
                        "(ray==2.60.0)") from None
    return ray


@contextlib.contextmanager
def session(address: str | None = None, jobs: int | None = None) -> Iterator[None]:
    """Connected to Ray for the block: to ``address``, or to a local instance with ``jobs``
    CPUs started for it; disconnected (the local instance stopped) after. Nested: the outer
    connection is kept."""
    ray = _ray()
    if ray.is_initialized():
        yield
        return
    kw = dict(include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False,
              configure_logging=True)
    if address:
        kw["address"] = address
    else:
        kw["address"] = "local"
        if jobs:
            kw["num_cpus"] = jobs
    try:
        ray.init(**kw)
    except Exception as e:
        where = f"the cluster at {address}" if address else "a local Ray instance"
        raise UserError(f"--ray: cannot reach {where}: {_one_line(e)}") from None
    try:
        yield
    finally:
        ray.shutdown()


def _task(payload, fn, args):
    """One task in a Ray worker: ``init`` once per worker and call, then ``fn(*args)``."""
    token, init = payload
    if init is not None and token not in _DONE:
        try:
            init[0](*init[1])
        except Exception as e:
            return None, f"worker set-up failed: {_one_line(e)}", 0.0
        _DONE.add(token)
    t0 = time.monotonic()
    try:
        return fn(*args), None, time.monotonic() - t0
    except Exception as e:
        return None, _one_line(e), time.monotonic() - t0


def run_jobs_ray(fn: Callable, tasks: Sequence[tuple], *, address: str | None = None,
                 jobs: int | None = None, limits: Sequence[float | None] | None = None,
                 names: Sequence[str] | None = None, init: tuple | None = None,
                 progress: Progress = _quiet) -> list[Outcome]:
    """``fn(*tasks[i])`` as Ray tasks (module docstring); one Outcome per task, in order."""
    ray = _ray()
    n = len(tasks)
    limits = list(limits) if limits is not None else [None] * n
    names = list(names) if names is not None else [f"task {i}" for i in range(n)]
    outcomes: list[Outcome | None] = [None] * n
    with session(address, jobs):
        slots = jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
        remote = ray.remote(max_retries=0)(_task)
        payload = ray.put((uuid.uuid4().hex, init))
        pending = list(range(n))
        running: dict = {}                     # ObjectRef -> (index, started)
        try:
            while pending or running:
                while pending and len(running) < slots:
                    i = pending.pop(0)
                    running[remote.remote(payload, fn, tuple(tasks[i]))] = (i, time.monotonic())
                now = time.monotonic()
                waits = [s + limits[i] - now for i, s in running.values() if limits[i] is not None]
                timeout = max(0.0, min(waits)) if waits else None
                done, _ = ray.wait(list(running), num_returns=1, timeout=timeout)
                for ref in done:
                    i, started = running.pop(ref)
                    try:
                        value, err, secs = ray.get(ref)
                        out = Outcome(value, None if err is None else f"{names[i]}: {err}", secs)
                    except Exception as e:      # the worker died, or Ray could not run it
                        kind = type(e).__name__
                        why = ("the worker process died" if "Crash" in kind or "Died" in kind
                               else "Ray could not run it")
                        out = Outcome(error=f"{names[i]}: {why} ({kind})",
                                      seconds=time.monotonic() - started)
                    outcomes[i] = out
                    progress(f"{names[i]}: {'done' if out.ok else 'failed'} after "
                             f"{out.seconds:.0f} s")
                now = time.monotonic()
                for ref, (i, started) in list(running.items()):
                    if limits[i] is not None and now >= started + limits[i]:
                        ray.cancel(ref, force=True)
                        running.pop(ref)
                        outcomes[i] = Outcome(error=f"{names[i]} did not finish within "
                                                    f"{_secs(limits[i])} s",
                                              seconds=now - started)
        finally:
            for ref in running:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
    return outcomes  # type: ignore[return-value]
