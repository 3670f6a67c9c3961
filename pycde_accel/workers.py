"""Supervised worker processes: parallel jobs that cannot deadlock, hang or take the others down.

``run_jobs(fn, tasks, jobs=J, limits=..., names=..., init=...)`` calls ``fn(*task)`` for every
task in up to ``J`` worker processes and returns one :class:`Outcome` per task, in task order:
the value ``fn`` returned, or an error line that starts with the task's name.

- Workers are started with the ``spawn`` method (a fresh interpreter), never forked from the
  caller. A forked child inherits the locks of every thread of its parent (torch's OpenMP and
  intra-op pools, MLIR's thread pool) in whatever state they were, but not the threads that
  would release them; its first parallel region then waits forever. Data a job needs reaches
  the worker as its arguments (pickled) or through ``init``: ``(function, args)`` that each
  worker calls once before its first task (e.g. loading a file the parent wrote).
- Each worker leads its own process group, and every child it starts (Verilator, make, g++,
  Yosys ...) is in that group. A task that runs past its time limit (``limits[i]`` seconds from
  the moment it was handed out; ``None``: no limit) has the whole group killed (SIGKILL) and
  becomes ``"<name> did not finish within N s"``; a worker that dies without answering (a
  signal, ``os._exit``, the OOM killer) becomes ``"<name>: the worker process died (...)"``. In
  both cases a fresh worker takes the remaining tasks and every other outcome is kept. A task
  whose function raises gives ``"<name>: <Type>: <first line of the message>"``.
- When ``run_jobs`` returns or raises (KeyboardInterrupt included) no worker group it started
  is left running; a worker whose parent is killed outright gets SIGKILL from the kernel
  (``PR_SET_PDEATHSIG``, Linux).
"""

from __future__ import annotations

import collections
import os
import signal
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


@dataclass
class Outcome:
    """What one task gave: ``value`` when ``error`` is None."""

    value: Any = None
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def _die_with_parent(parent: int) -> None:
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)      # PR_SET_PDEATHSIG
    except (OSError, AttributeError):                     # not Linux: EOF on the pipe ends it
        pass
    if os.getppid() != parent:                            # the parent died before prctl
        os._exit(1)


def _worker(conn, init, parent: int) -> None:
    """The worker's main loop: run tasks sent over ``conn`` until None or EOF."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    _die_with_parent(parent)
    # Ctrl-C is the parent's to handle (it kills the group); the worker must not die half-way
    # through writing a result.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    init_error = None
    if init is not None:
        try:
            init[0](*init[1])
        except Exception as e:
            init_error = f"worker set-up failed: {_one_line(e)}"
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        index, fn, args = msg
        t0 = time.monotonic()
        if init_error is not None:
            reply = (index, None, init_error, 0.0)
        else:
            try:
                reply = (index, fn(*args), None, time.monotonic() - t0)
            except Exception as e:
                reply = (index, None, _one_line(e), time.monotonic() - t0)
        try:
            conn.send(reply)
        except Exception as e:                            # an unpicklable result
            conn.send((index, None, f"result cannot be sent back: {_one_line(e)}",
                       time.monotonic() - t0))


class _Worker:
    def __init__(self, ctx, init) -> None:
        parent_conn, child_conn = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child_conn, init, os.getpid()),
                                daemon=True)
        self.proc.start()
        child_conn.close()
        self.conn = parent_conn
        try:                      # the child does it too; whichever comes first wins the race
            os.setpgid(self.proc.pid, self.proc.pid)
        except OSError:
            pass
        self.task: int | None = None
        self.started = 0.0
        self.deadline: float | None = None

    def kill(self) -> None:
        """SIGKILL the worker's process group (its children too) and reap it."""
        pid = self.proc.pid
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:           # no such group (it never got to setpgid): the worker alone
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.proc.join(10)
        self.conn.close()

    def retire(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(10)
        if self.proc.is_alive():
            self.kill()
        else:
            try:                  # children it may have left behind in its group
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.conn.close()


def _death(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _secs(limit: float) -> str:
    return f"{limit:.0f}" if limit >= 10 else f"{limit:g}"


def run_jobs(fn: Callable, tasks: Sequence[tuple], *, jobs: int,
             limits: Sequence[float | None] | None = None, names: Sequence[str] | None = None,
             init: tuple[Callable, tuple] | None = None,
             progress: Progress = _quiet) -> list[Outcome]:
    """Run ``fn(*tasks[i])`` in up to ``jobs`` supervised worker processes (module docstring);
    ``fn``, ``init[0]`` and the tasks must be picklable (module-level functions, plain data)."""
    import multiprocessing as mp
    from multiprocessing.connection import wait

    n = len(tasks)
    limits = list(limits) if limits is not None else [None] * n
    names = list(names) if names is not None else [f"task {i}" for i in range(n)]
    outcomes: list[Outcome | None] = [None] * n
    pending = collections.deque(range(n))
    ctx = mp.get_context("spawn")
    workers: list[_Worker] = []

    def give(w: _Worker) -> bool:
        """Hand ``w`` the next task; False if ``w`` is broken (the task goes back)."""
        while pending:
            i = pending.popleft()
            w.task, w.started = i, time.monotonic()
            w.deadline = None if limits[i] is None else w.started + limits[i]
            try:
                w.conn.send((i, fn, tasks[i]))
                return True
            except (OSError, ValueError):  # a dead worker's pipe: hand the task to another
                pending.appendleft(i)
                w.task = None
                return False
            except Exception as e:         # the task cannot be pickled
                outcomes[i] = Outcome(error=f"{names[i]}: cannot be sent to a worker: "
                                            f"{_one_line(e)}")
                w.task = None
        return True

    def finish(w: _Worker, out: Outcome) -> None:
        i = w.task
        outcomes[i] = out
        w.task = None
        progress(f"{names[i]}: {'done' if out.ok else 'failed'} after {out.seconds:.0f} s")

    try:
        while pending or any(w.task is not None for w in workers):
            for w in list(workers):
                if w.task is None and pending and not give(w):
                    w.kill()
                    workers.remove(w)
            while pending and len(workers) < min(jobs, n):
                w = _Worker(ctx, init)
                workers.append(w)
                if not give(w):
                    w.kill()
                    workers.remove(w)
            busy = [w for w in workers if w.task is not None]
            if not busy:
                continue
            deadlines = [w.deadline for w in busy if w.deadline is not None]
            timeout = None if not deadlines else max(0.0, min(deadlines) - time.monotonic())
            ready = set(wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout))
            now = time.monotonic()
            for w in busy:
                gone = False
                if w.conn in ready:
                    try:
                        i, value, err, secs = w.conn.recv()
                    except (EOFError, OSError):
                        w.proc.join(10)
                        finish(w, Outcome(error=f"{names[w.task]}: the worker process died "
                                                f"({_death(w.proc.exitcode)})",
                                          seconds=now - w.started))
                        gone = True
                    else:
                        finish(w, Outcome(value, None if err is None else f"{names[i]}: {err}",
                                          secs))
                elif w.proc.sentinel in ready:
                    w.proc.join(10)
                    finish(w, Outcome(error=f"{names[w.task]}: the worker process died "
                                            f"({_death(w.proc.exitcode)})",
                                      seconds=now - w.started))
                    gone = True
                elif w.deadline is not None and now >= w.deadline:
                    limit = limits[w.task]
                    finish(w, Outcome(error=f"{names[w.task]} did not finish within "
                                            f"{_secs(limit)} s", seconds=now - w.started))
                    gone = True
                if gone:
                    w.kill()
                    workers.remove(w)
        for w in workers:
            w.retire()
        workers.clear()
    finally:
        for w in workers:
            w.kill()
    return outcomes  # type: ignore[return-value]
