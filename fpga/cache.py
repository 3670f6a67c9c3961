"""A cache of open-synthesis runs: the same sources, top, device, seed, clock and tool versions
give the same netlist and placement (Yosys and nextpnr are deterministic with a fixed seed), so
an identical run is answered from the cache instead of rerunning the tools.

The accelerator's SV depends on its config only, not on the model it runs, so every model
compiled for one config synthesizes the same design: ``synth`` of a second model, or ``synth``
then ``report`` in another folder, costs seconds instead of minutes.

``key(...)``: a sha256 over every staged source (its path under the work folder and its bytes),
the top, the device, seed, target clock, ``place`` and the tool versions. An entry is a folder
``<root>/<key>/`` holding the tools' outputs (``fpga.yosys`` and ``fpga.nextpnr`` files: the
script, logs, cell statistics, netlist, nextpnr report), written into a temporary sibling and
renamed into place, so a half-written entry is never used. ``restore`` copies an entry into
the work folder; the caller then parses those files exactly as after a real run.

``locked(key)``: held around look-up, run and store, so two identical runs at once (two
processes of a test run, two DSE workers, two shells) run the tools once: the second waits for
the first and is answered from its entry.

Root: ``$PYCDE_ACCEL_SYNTH_CACHE``, else ``$XDG_CACHE_HOME/pycde-accel/synth``, else
``~/.cache/pycde-accel/synth``; delete it to reclaim the space. ``PYCDE_ACCEL_SYNTH_CACHE=off``
disables the cache.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from . import nextpnr, yosys

#: the files a run leaves in the work folder that an entry keeps (those that exist)
OUTPUTS = (yosys.SCRIPT, yosys.LOG, yosys.STDOUT_LOG, yosys.STAT, yosys.NETLIST,
           nextpnr.LOG, nextpnr.REPORT, nextpnr.STALLED_LOG, nextpnr.PATHS)
#: bump when what an entry holds, or how it is keyed, changes
VERSION = "1"


def root() -> Path | None:
    """The cache folder, or None when the cache is off."""
    env = os.environ.get("PYCDE_ACCEL_SYNTH_CACHE")
    if env == "off":
        return None
    if env:
        return Path(os.path.abspath(env))
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.path.abspath(base)) / "pycde-accel" / "synth"


def key(work: Path, files: list[str], top: str, device: str, seed: int, freq_mhz: float,
        place: bool, tools: dict[str, str], script: str = "") -> str:
    """The entry of one run: the sources' bytes, the tools' versions, the Yosys ``script``
    (a change to the flow's own commands is a new entry) and the placement's settings."""
    h = hashlib.sha256()
    for part in (VERSION, top, device, str(seed), repr(float(freq_mhz)), str(place), script,
                 *(f"{k}={v}" for k, v in sorted(tools.items()))):
        h.update(part.encode() + b"\0")
    for f in files:
        h.update(f.encode() + b"\0")
        h.update(hashlib.sha256((work / f).read_bytes()).digest())
    return h.hexdigest()[:32]


@contextlib.contextmanager
def locked(k: str, waiting=lambda: None):
    """Hold entry ``k``'s lock (an flock on ``<root>/.<k>.lock``) for the body; ``waiting()`` is
    called once if another process holds it. No lock when the cache is off or its folder cannot
    be written (the run then goes ahead unlocked)."""
    r = root()
    fh = None
    if r is not None:
        try:
            r.mkdir(parents=True, exist_ok=True)
            fh = open(r / f".{k}.lock", "w")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                waiting()
                fcntl.flock(fh, fcntl.LOCK_EX)
        except OSError:
            if fh is not None:
                fh.close()
            fh = None
    try:
        yield
    finally:
        if fh is not None:
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()


def restore(k: str, work: Path) -> bool:
    """Copy entry ``k`` into ``work``; False when there is none (or the cache is off)."""
    r = root()
    entry = r / k if r else None
    if entry is None or not entry.is_dir():
        return False
    for f in OUTPUTS:
        if (entry / f).is_file():
            shutil.copy2(entry / f, work / f)
    return True


def store(k: str, work: Path) -> None:
    """Keep the tools' outputs in ``work`` as entry ``k`` (best effort: a cache that cannot be
    written is no error)."""
    r = root()
    if r is None or (r / k).is_dir():
        return
    try:
        r.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{k}.", dir=r))
        for f in OUTPUTS:
            if (work / f).is_file():
                shutil.copy2(work / f, tmp / f)
        os.replace(tmp, r / k)
    except OSError:
        shutil.rmtree(locals().get("tmp", r / f".{k}.none"), ignore_errors=True)
