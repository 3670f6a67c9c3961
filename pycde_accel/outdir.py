"""Output folders that appear whole or not at all, and never replace anything but an output.

``staged_output(path)`` yields a fresh staging folder to write into, a hidden sibling of
``path`` (or, when ``path``'s parents do not exist yet, a hidden folder in the nearest one that
does: no parent folder is created before the output is complete). When the block succeeds the
stage gets the marker file :data:`MARKER` and replaces ``path``; when it raises (a refusal, a
failure, an interrupt) the stage is deleted and ``path`` is left exactly as it was, with no
parent folder created. The replacement itself runs with SIGINT/SIGTERM held back, so an
interrupt cannot land between removing the old folder and moving the new one in.

``update=True`` starts the stage as a copy of the existing output (minus the names in
``drop``): for commands that add to an earlier output (``sim`` next to ``gen``'s files,
``report`` next to ``synth``'s), which then read and keep what they reuse.

What may be replaced (:func:`check_out`): a folder that does not exist, an empty one, or one
that carries :data:`MARKER` (an earlier output of this tool). Refused, with one line: the empty
string, a file, the current folder or any folder holding it (``.``, ``..``), the home folder or
one holding it, the filesystem root, the repository this package runs from, and a folder holding
the model file; a non-empty folder without the marker (the user's own files) is never touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from .errors import UserError

#: The file that marks a folder as an output of this tool (which may then replace it).
MARKER = ".pycde-accel"
MARKER_TEXT = "pycde-accel output folder: pycde-accel may replace it (and everything in it)\n"


def _contains(folder: Path, inner: Path) -> bool:
    """``inner`` is ``folder`` or inside it (both absolute and resolved)."""
    return inner == folder or folder in inner.parents


def _repo_root() -> Path | None:
    here = Path(__file__).resolve().parent.parent
    return here if (here / "pyproject.toml").is_file() else None


def model_file(spec) -> Path | None:
    """The file of a model spec ``path/to/file.py[:function]`` (None for a built-in or an
    in-memory model)."""
    if not isinstance(spec, str) or not spec:
        return None
    path = spec
    if ":" in spec and not spec.endswith(".py"):
        path = spec.rsplit(":", 1)[0]
    return Path(path) if path.endswith(".py") else None


def check_out(path: os.PathLike | str, *, model=None) -> Path:
    """The resolved folder for ``--out path`` if this tool may write (and replace) it there;
    else UserError. Creates nothing."""
    text = os.fspath(path)
    if not text.strip():
        raise UserError("--out is empty: name an output folder (e.g. --out build)")
    final = Path(os.path.abspath(os.path.expanduser(text)))
    with contextlib.suppress(OSError):
        final = final.resolve()
    home = Path.home().resolve()
    if final == Path(final.anchor) or _contains(final, home):
        what = ("is the filesystem root" if final == Path(final.anchor) else
                "is the home folder" if final == home else "holds the home folder")
        raise UserError(f"--out {text}: {what}; name a folder of its own for the output")
    cwd = Path.cwd().resolve()
    if _contains(final, cwd):
        what = "is the current folder" if final == cwd else "holds the current folder"
        raise UserError(f"--out {text}: {what}; name a folder of its own for the output "
                        f"(e.g. --out build)")
    repo = _repo_root()
    if repo is not None and _contains(final, repo):
        raise UserError(f"--out {text}: holds the pycde-accel repository ({repo}); name a folder "
                        f"of its own for the output")
    mf = model_file(model)
    if mf is not None:
        mf = Path(os.path.abspath(mf))
        with contextlib.suppress(OSError):
            mf = mf.resolve()
        if _contains(final, mf.parent):
            raise UserError(f"--out {text}: holds the model file {model_file(model)}; name "
                            f"another folder for the output")
    if final.exists() or final.is_symlink():
        if not final.is_dir():
            raise UserError(f"--out {text}: exists and is not a folder")
        if not (final / MARKER).is_file():
            try:
                empty = not any(final.iterdir())
            except OSError as e:
                raise UserError(f"--out {text}: cannot read it ({e.strerror})") from None
            if not empty:
                raise UserError(f"--out {text}: holds files that are not an output of pycde-accel "
                                f"(no {MARKER} in it); it is left alone: name another folder "
                                f"or empty it")
    probe = final
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise UserError(f"--out {text}: cannot write there ({probe} is not a writable folder)")
    if probe == final and not os.access(final.parent, os.W_OK | os.X_OK):
        raise UserError(f"--out {text}: cannot write there: the output is staged next to it, and "
                        f"its parent folder {final.parent} is not writable")
    return final


def is_output(path: os.PathLike | str) -> bool:
    """``path`` is a folder written by this tool (it carries :data:`MARKER`)."""
    return (Path(path) / MARKER).is_file()


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    sigs = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not on this platform
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextlib.contextmanager
def staged_output(path: os.PathLike | str, *, model=None, update: bool = False,
                  drop: Iterable[str] = ()) -> Iterator[Path]:
    """Yield a staging folder that replaces ``path`` when the block succeeds (see the module
    docstring). ``model``: the model spec, whose file's folder is refused as ``path``."""
    final = check_out(path, model=model)
    shown = os.fspath(path)
    anchor = final.parent
    while not anchor.exists():
        anchor = anchor.parent
    try:
        stage = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".pycde-accel-stage",
                                      dir=anchor))
    except OSError as e:
        raise UserError(f"--out {shown}: cannot write there: the output is staged next to it, and "
                        f"its parent folder {anchor} refuses a new folder ({e.strerror})") from None
    made: list[Path] = []
    try:
        if update and final.is_dir():
            skip = set(drop) | {MARKER}
            for entry in sorted(final.iterdir()):
                if entry.name in skip:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.copytree(entry, stage / entry.name, symlinks=True)
                else:
                    shutil.copy2(entry, stage / entry.name, follow_symlinks=False)
        yield stage
        (stage / MARKER).write_text(MARKER_TEXT)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(stage, 0o777 & ~umask)       # mkdtemp makes it 0700
        with _signals_held():
            missing = []
            p = final.parent
            while not p.exists():
                missing.append(p)
                p = p.parent
            for p in reversed(missing):
                p.mkdir()
                made.append(p)
            old = None
            if final.exists():
                old = final.with_name(f".{final.name}.{stage.name}.old")
                os.rename(final, old)
            try:
                os.rename(stage, final)
            except BaseException:
                if old is not None:
                    os.rename(old, final)
                raise
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        for p in reversed(made):
            with contextlib.suppress(OSError):
                p.rmdir()
        raise
