"""Output folders that appear whole or not at all.

``staged_output(path)`` yields a fresh sibling folder to write into. When the block succeeds it
replaces ``path`` (an earlier output there is removed first); when it raises, the staging folder
is deleted and ``path`` is left exactly as it was. A failed run therefore never leaves a
half-written output behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from .errors import UserError


@contextlib.contextmanager
def staged_output(path: os.PathLike | str) -> Iterator[Path]:
    final = Path(path)
    parent = final.parent if str(final.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=parent))
    except OSError as e:
        raise UserError(f"--out {final}: cannot write there ({e.strerror})") from e
    if final.exists() and not final.is_dir():
        shutil.rmtree(stage, ignore_errors=True)
        raise UserError(f"--out {final}: exists and is not a folder")
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    if final.exists():
        shutil.rmtree(final)
    os.replace(stage, final)
    # mkdtemp makes the folder 0700; give it the usual permissions.
    os.chmod(final, 0o755)
