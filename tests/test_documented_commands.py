"""Every ``python -m pycde_accel ...`` command the README and the ``--help`` texts print runs as
printed, in a fresh copy of the repository, from its root, and exits 0.

Where the commands come from (parsed out of the text, never copied here):

* README.md: every line of a ```` ```sh ```` block that runs ``python -m pycde_accel`` (the
  ``pip install ... &&`` before the quick start is left to ``.ci/run``, which runs both quick-start
  lines whole); one block is one scenario, its commands run in order in one copy, as a reader
  would type them (the README's ``report`` reuses the ``synth`` above it). Inline code spans
  that are whole commands, without placeholders (``[MODEL]``, ``DIR``, ``NAME``...), are a
  scenario each; ``COMMAND`` stands for every subcommand.
* ``--help`` of the program and of each subcommand: every line of its ``examples:`` section,
  a scenario each (a line with ``&&`` runs whole).

Each scenario gets its own copy of the files git tracks (``git ls-files``) and runs there
through ``bash -c`` with the relative paths as written. ``python`` is this interpreter (its bin
folder first on PATH). ``PYTHONSAFEPATH=1``: without it ``python -m pycde_accel`` run from the
copy's root puts the copy's folder first on sys.path, so ``pycde_accel`` would be imported from
the copy while the editable install's finder maps its subpackages (``pycde_accel.rtl_lib`` ->
``rtl_lib/``, ``pycde_accel.sim``...) into the original checkout: two halves of two trees. With
it the installed package is used for everything (as for a user with a non-editable install),
and the copy only provides what the commands name: ``examples/``, and the folder they write
into. Verilator builds are shared through the session's build cache (``PYCDE_ACCEL_CACHE``).

Scenarios that simulate, synthesize with the open flow or explore (``sim``, ``report``,
open-flow ``synth``, ``dse``) are slow; ``gen``, ``ir``, ``--help`` and vendor-script ``synth``
run in the default set.
"""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pycde_accel import cli
from pycde_accel.config import AccelConfig
from pycde_accel.fpga import get_device
from pycde_accel.sim import runner

REPO = Path(__file__).resolve().parents[1]
PREFIX = "python -m pycde_accel"
PLACEHOLDER = re.compile(r"\[|\||\b(MODEL|DIR|NAME|RxC|P|N)\b")


def _commands_of_line(line: str) -> str | None:
    """The ``python -m pycde_accel`` part of a shell line (comment and a leading ``pip
    install ... &&`` dropped), or None."""
    line = re.sub(r"\s+#.*$", "", line.strip())
    parts = [p.strip() for p in line.split("&&")]
    keep = [p for p in parts if p.startswith(PREFIX + " ") or p == PREFIX]
    if not keep:
        return None
    assert all(p.startswith(PREFIX) or p.startswith("pip ") for p in parts), line
    return " && ".join(keep)


def readme_scenarios() -> list[tuple[str, list[str]]]:
    text = (REPO / "README.md").read_text()
    out = []
    for i, block in enumerate(re.findall(r"```sh\n(.*?)```", text, re.S)):
        cmds = [c for c in map(_commands_of_line, block.splitlines()) if c]
        if cmds:
            out.append((f"README block {i + 1}", cmds))
    subcommands = sorted(_subparsers())
    for span in re.findall(r"`([^`\n]+)`", text):
        if not span.startswith(PREFIX + " "):
            continue
        rest = span[len(PREFIX):]
        if not rest.startswith(" ") or rest.startswith(" ."):      # python -m pycde_accel.backend
            continue
        if "COMMAND" in span:
            for sc in subcommands:
                out.append((f"README `{span}`", [span.replace("COMMAND", sc)]))
        elif not PLACEHOLDER.search(rest):
            out.append((f"README `{span}`", [span]))
    return out


def _subparsers() -> dict:
    parser = cli.build_parser()
    for action in parser._actions:
        if hasattr(action, "choices") and isinstance(action.choices, dict):
            return action.choices
    raise AssertionError("no subcommands")


def help_scenarios() -> list[tuple[str, list[str]]]:
    texts = {"--help": cli.build_parser().format_help()}
    for name, sub in _subparsers().items():
        texts[f"{name} --help"] = sub.format_help()
    out = []
    for where, text in texts.items():
        lines = text.splitlines()
        if "examples:" not in lines:
            continue
        for line in lines[lines.index("examples:") + 1:]:
            if not line.strip():
                break
            cmd = _commands_of_line(line)
            assert cmd, f"{where}: an example that is not a command: {line!r}"
            out.append((where, [cmd]))
    return out


def _dedup(scenarios):
    seen, out = set(), []
    for where, cmds in scenarios:
        key = tuple(cmds)
        if key not in seen:
            seen.add(key)
            out.append((where, cmds))
    return out


def _is_slow(cmd: str) -> bool:
    for part in cmd.split("&&"):
        words = part.split()[3:]
        sub = words[0] if words else "--help"
        if "--help" in words:
            continue
        if sub in ("sim", "report", "dse"):
            return True
        if sub == "synth":
            target = words[words.index("--target") + 1] if "--target" in words else "ecp5-85f"
            if get_device(target).open_flow:
                return True
    return False


def _placement(cmd: str) -> tuple[str, str] | None:
    """The (array, target) an open-flow ``synth`` places (not ``--no-place``), or None."""
    for part in cmd.split("&&"):
        words = part.split()[3:]
        if words[:1] == ["synth"] and "--help" not in words and "--no-place" not in words:
            target = (words[words.index("--target") + 1] if "--target" in words
                      else AccelConfig().target)
            if get_device(target).open_flow:
                array = (words[words.index("--array") + 1] if "--array" in words
                         else AccelConfig().array)
                return array, target
    return None


SCENARIOS = _dedup(readme_scenarios() + help_scenarios())
#: the xdist group of the scenarios that place a design: they all place the same small one
#: (test_the_placements_are_one_design), so one worker runs them in turn, the first places it
#: and the others reuse that run from the synthesis cache, while the other workers run the rest
PLACEMENT_GROUP = "documented-placement"


def _param(where, cmds):
    slow = any(_is_slow(c) for c in cmds)
    marks = [pytest.mark.slow] if slow else []
    if any(_placement(c) for c in cmds):
        marks.append(pytest.mark.xdist_group(PLACEMENT_GROUP))
    return pytest.param(cmds, id=f"{where}: {' ; '.join(cmds)}", marks=marks)


def test_the_commands_were_found():
    """The parsers found what the texts hold (a change of format must not empty the test)."""
    readme = [c for _w, cmds in readme_scenarios() for c in cmds]
    assert f"{PREFIX} gen" in readme
    assert f"{PREFIX} sim examples/mlp.py --out out/mlp" in readme
    assert f"{PREFIX} report examples/lenet5.py --array 2x4 --out out/lenet" in readme
    assert f"{PREFIX} sim --help" in readme
    helps = {w for w, _c in help_scenarios()}
    assert {"--help", "gen --help", "sim --help", "synth --help", "report --help",
            "dse --help"} <= helps
    assert len(SCENARIOS) >= 20


def _copy_repo(dst: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = REPO / f
        if src.is_file():
            (dst / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / f)


def test_the_placements_are_one_design():
    """Every documented ``synth`` that places places one design, a small one (CI places it once
    and the rest come from the synthesis cache; the default 8x8 on the 85F takes 15-25 minutes
    and is shown with ``--no-place``, Yosys only); ``_param`` puts the scenarios that place in
    one xdist group."""
    placed = {_placement(c) for _w, cmds in SCENARIOS for c in cmds} - {None}
    assert len(placed) == 1, placed
    (array, target), = placed
    rows, cols = map(int, array.split("x"))
    assert rows * cols <= 8 and target == "ecp5-25f"
    assert _placement("python -m pycde_accel synth --out o") == ("8x8", "ecp5-85f")
    assert _placement("python -m pycde_accel synth --no-place --out o") is None
    assert _placement("python -m pycde_accel synth --target xc7a100t") is None
    no_place = [c for _w, cmds in SCENARIOS for c in cmds if "synth" in c and "--no-place" in c]
    assert no_place, "the default accelerator's synthesis is documented with --no-place"


def _order(scenario):
    """Grouped scenarios first, the shortest first (the lone ``synth`` places the design, the
    scenarios with more commands then find it in the cache)."""
    cmds = scenario[1]
    return (not any(_placement(c) for c in cmds), len(cmds))


@pytest.mark.parametrize("cmds", [_param(w, c) for w, c in sorted(SCENARIOS, key=_order)])
def test_documented_command_runs_as_printed(cmds, tmp_path, tmp_path_factory, request):
    if request.node.get_closest_marker("xdist_group") and os.environ.get("PYTEST_XDIST_WORKER"):
        # the group only helps if xdist keeps it on one worker (pytest 9.2 with xdist 3.8 did
        # not: both workers placed the design at once and the slow set ran out of CI's time)
        assert request.node.nodeid.endswith(f"@{PLACEMENT_GROUP}"), \
            "xdist does not group the placements: run pytest with --dist loadgroup"
    root = tmp_path / "repo"
    root.mkdir()
    _copy_repo(root)
    env = {**os.environ, "PYTHONSAFEPATH": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYCDE_ACCEL_CACHE": str(runner.pytest_cache_root(tmp_path_factory))}
    tracked = {p for p in root.rglob("*") if p.is_file()}
    for cmd in cmds:
        t0 = time.monotonic()
        p = subprocess.run(["bash", "-c", cmd], cwd=root, env=env, capture_output=True,
                           text=True, timeout=3600)
        took = time.monotonic() - t0
        print(f"exit {p.returncode} in {took:.1f} s: {cmd}")
        assert p.returncode == 0, f"{cmd}: exit {p.returncode}\n{p.stderr[-3000:]}"
    # nothing the repository holds was deleted or overwritten
    assert all(f.is_file() for f in tracked)
    assert "Traceback" not in p.stderr
