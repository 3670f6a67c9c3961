"""Child processes that end with the command that started them.

Every tool the flow starts (the CIRCT lowering worker, Verilator and its make/g++, the native
simulation harness, Yosys, nextpnr) runs through :func:`run` or :func:`spawn` + :func:`ending`: in a process
group of its own (``start_new_session``), which is ended as a whole (SIGTERM, then SIGKILL
after :data:`GRACE_S`) when the caller is interrupted, a timeout expires or anything else
raises while the child runs. SIGTERM first, so that make deletes the half-written target it
was building and a later build starts clean.

:func:`guard` is what the CLI wraps a command in: SIGINT and SIGTERM end every descendant of
the process at once (also those started by libraries, such as cocotb's runner or the DSE's
worker pool, and orphans, which a child subreaper gets back) and then raise
``KeyboardInterrupt`` in the main thread, so staged outputs are removed on the way out.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterator

#: seconds between SIGTERM and SIGKILL when a child process group is ended
GRACE_S = 3.0


def end_group(proc: subprocess.Popen, grace: float = GRACE_S) -> None:
    """End ``proc``'s process group (SIGTERM, then SIGKILL) and reap ``proc``."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        pgid = None
    if pgid is not None and pgid != os.getpgrp():
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _group_alive(pgid):
            if proc.poll() is not None and not _group_alive(pgid):
                break
            time.sleep(0.05)
        _signal_group(pgid, signal.SIGKILL)
    else:
        proc.kill()
    with contextlib.suppress(Exception):
        proc.wait(timeout=10)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # zombies still count for killpg; look at their states
    return any(st != "Z" for _pid, _ppid, grp, st in _processes() if grp == pgid)


def run(cmd, *, timeout: float | None = None, input=None, capture_output: bool = False,
        **kw) -> subprocess.CompletedProcess:
    """``subprocess.run`` in a new process group that is ended if anything interrupts it
    (``subprocess.TimeoutExpired`` carries what was captured, as subprocess.run's does)."""
    if capture_output:
        kw["stdout"] = kw["stderr"] = subprocess.PIPE
    with subprocess.Popen(cmd, start_new_session=True,
                          stdin=subprocess.PIPE if input is not None else kw.pop("stdin", None),
                          **kw) as p:
        try:
            out, err = p.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            end_group(p)
            out, err = p.communicate()
            raise subprocess.TimeoutExpired(cmd, timeout, output=out, stderr=err) from e
        except BaseException:
            end_group(p)
            raise
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def spawn(cmd, **kw) -> subprocess.Popen:
    """``subprocess.Popen`` in a new process group (use with :func:`ending`)."""
    return subprocess.Popen(cmd, start_new_session=True, **kw)


@contextlib.contextmanager
def ending(p: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """End ``p``'s process group if the block raises (an interrupt included)."""
    try:
        yield p
    except BaseException:
        end_group(p)
        raise


# ---- every descendant -------------------------------------------------------------------------
def _processes() -> list[tuple[int, int, int, str]]:
    """(pid, ppid, pgid, state) of every process visible in /proc."""
    out = []
    for d in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not d.name.isdigit():
            continue
        try:
            text = (d / "stat").read_text()
        except OSError:
            continue
        # the command name is in parentheses and may hold spaces: split after the last ')'
        f = text[text.rfind(")") + 2:].split()
        out.append((int(d.name), int(f[1]), int(f[2]), f[0]))
    return out


def descendants(pid: int | None = None) -> list[int]:
    """The live (not zombie) descendants of ``pid`` (default: this process)."""
    root = os.getpid() if pid is None else pid
    procs = _processes()
    kids: dict[int, list[int]] = {}
    state = {}
    for p, pp, _g, st in procs:
        kids.setdefault(pp, []).append(p)
        state[p] = st
    found, todo = [], [root]
    while todo:
        for c in kids.get(todo.pop(), ()):
            found.append(c)
            todo.append(c)
    return [p for p in found if state.get(p) != "Z"]


def end_descendants(grace: float = GRACE_S, spare: frozenset[int] = frozenset()) -> None:
    """SIGTERM every descendant but those in ``spare`` (and the process groups they lead), then
    SIGKILL what is left."""
    me = os.getpgrp()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = [p for p in descendants() if p not in spare]
        if not pids:
            return
        groups = {g for p, _pp, g, _st in _processes() if p in pids and g != me}
        for g in groups:
            _signal_group(g, sig)
        for p in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, sig)
        if sig == signal.SIGTERM:
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and set(descendants()) - spare:
                _reap()
                time.sleep(0.05)
    _reap()


def _reap() -> None:
    """Collect exited children nobody waits for (orphans handed to this subreaper)."""
    with contextlib.suppress(ChildProcessError, OSError):
        while True:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return


def _set_subreaper(on: bool) -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); True if it worked."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1 if on else 0, 0, 0, 0) == 0   # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Run the block so that SIGINT/SIGTERM end every child process started in it first and then
    raise ``KeyboardInterrupt``; any exception leaving the block ends those still running.
    Only in the main thread (elsewhere the block just runs)."""
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    spare = frozenset(descendants())    # what ran before the block is not the block's

    def on_signal(signum, _frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # a second Ctrl-C must not cut the cleanup
        end_descendants(spare=spare)
        raise KeyboardInterrupt

    reaper = _set_subreaper(True)
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except BaseException:
        end_descendants(spare=spare)
        raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if reaper:
            _set_subreaper(False)
