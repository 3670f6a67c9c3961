"""Dependencies point down the flow: read from every import statement of the project.

Every ``.py`` file of the project's package folders (``[tool.setuptools.package-dir]`` in
pyproject.toml: ``lowering/`` is ``pycde_accel.lowering``, ``rtl_lib/`` ``pycde_accel.rtl_lib``
...) is parsed with ``ast``; every ``import``/``from ... import`` in it, at module level or
inside a function, relative or absolute, becomes an edge to the project module it names
(``from pkg import name`` names the submodule ``pkg.name`` if there is one, else ``pkg``).
Importing a submodule also runs its parent packages' ``__init__``; those implicit edges are not
counted (they would join every module into one cycle through ``pycde_accel/__init__.py``).

The rules (see the README's layout):

* rtl_lib (the PyCDE modules) imports nothing from lowering, sim, fpga, the assembly layer
  (``pycde_accel.assemble``, which hands the lowered kernels into the engines) or the CLI;
* lowering (the MLIR pipelines) imports nothing from rtl_lib or sim;
* nothing but ``pycde_accel.__main__`` imports the CLI (``pycde_accel.cli``);
* no import cycle among the project's modules (module-level and function-local imports
  together).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RTL_LIB = "pycde_accel.rtl_lib"
LOWERING = "pycde_accel.lowering"
CLI = "pycde_accel.cli"
#: what each layer must not import (a module or a whole package)
FORBIDDEN = {
    RTL_LIB: ("pycde_accel.lowering", "pycde_accel.sim", "pycde_accel.fpga", CLI,
              "pycde_accel.assemble"),
    LOWERING: ("pycde_accel.rtl_lib", "pycde_accel.sim", CLI),
}


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under the package folders of
    ``root/pyproject.toml`` (``__init__.py`` is its package's name)."""
    cfg = tomllib.loads((root / "pyproject.toml").read_text())
    dirs = cfg["tool"]["setuptools"]["package-dir"]
    mods: dict[str, Path] = {}
    for pkg, d in dirs.items():
        base = root / d
        for f in sorted(base.rglob("*.py")):
            parts = list(f.relative_to(base).with_suffix("").parts)
            if "__pycache__" in parts:
                continue
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([pkg, *parts])
            # a folder mapped to its own package (lowering/ ...) is not a subpackage of another
            if mods.get(name, f) != f:
                raise AssertionError(f"{name} is both {mods[name]} and {f}")
            mods[name] = f
    return mods


def imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """``(line, module)`` for every project module that ``path`` (module ``name``) imports,
    at any depth of its syntax tree."""
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name in modules]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name if is_pkg else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module
            for a in node.names:
                sub = f"{mod}.{a.name}"
                if sub in modules:
                    out.append((node.lineno, sub))
                elif mod in modules:
                    out.append((node.lineno, mod))
    return sorted(set(out))


def import_graph(root: Path = ROOT) -> tuple[dict[str, Path], dict[str, list[tuple[int, str]]]]:
    modules = project_modules(root)
    return modules, {m: imports(m, p, modules) for m, p in modules.items()}


def _within(mod: str, pkg: str) -> bool:
    return mod == pkg or mod.startswith(pkg + ".")


def violations(modules, graph) -> list[str]:
    bad = []
    for layer, banned in FORBIDDEN.items():
        for m in sorted(graph):
            if not _within(m, layer):
                continue
            for line, target in graph[m]:
                if any(_within(target, b) for b in banned):
                    bad.append(f"{_rel(modules[m])}:{line}: {m} imports {target}")
    for m in sorted(graph):
        for line, target in graph[m]:
            if _within(target, CLI) and m not in ("pycde_accel.__main__", CLI):
                bad.append(f"{_rel(modules[m])}:{line}: {m} imports {target}")
    return bad


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)


def cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (or a module importing
    itself), each sorted; Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for _, w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or any(t == v for _, t in graph.get(v, ())):
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def _describe(comp: list[str], modules, graph) -> str:
    """One cycle through the component ``comp``, with the file and line of each import."""
    inside = set(comp)
    start = comp[0]
    prev: dict[str, tuple[str, int]] = {}
    todo = [start]
    while todo:  # breadth first from start, back to start
        v = todo.pop(0)
        for line, w in graph[v]:
            if w in inside and w not in prev:
                prev[w] = (v, line)
                todo.append(w)
        if start in prev:
            break
    hops, w = [], start
    while True:
        v, line = prev[w]
        hops.append(f"{_rel(modules[v])}:{line} -> {w}")
        w = v
        if w == start:
            break
    return f"{start}: " + ", ".join(reversed(hops))


# ---- the tests ------------------------------------------------------------------------------

def test_rtl_lib_and_lowering_import_only_downwards_and_only_main_imports_the_cli():
    modules, graph = import_graph()
    assert violations(modules, graph) == []


def test_no_import_cycle():
    modules, graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(_describe(c, modules, graph) for c in found)


def test_the_graph_sees_function_local_and_relative_imports():
    """The reader itself, on the real tree: the CLI's only importer is found, every package
    folder of pyproject.toml contributes modules, and function-local imports count."""
    modules, graph = import_graph()
    for d in ("lowering", "rtl_lib", "sim", "fpga"):
        assert f"pycde_accel.{d}" in modules and modules[f"pycde_accel.{d}"].parent.name == d
    assert any(t == CLI for _, t in graph["pycde_accel.__main__"])
    # flow.emit's import of the assembly layer sits inside a function
    assert any(t == "pycde_accel.assemble" for _, t in graph["pycde_accel.flow"])


def test_the_checks_catch_a_layer_violation_and_a_cycle(tmp_path):
    """On a made-up tree: a function-local relative import from rtl_lib into lowering, an
    absolute import of the CLI, and a cycle through a ``from . import`` of a submodule."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools]\npackage-dir = { "pycde_accel" = "pkg", '
        '"pycde_accel.rtl_lib" = "rtl", "pycde_accel.lowering" = "low" }\n')
    files = {
        "pkg/__init__.py": "",
        "pkg/cli.py": "",
        "pkg/a.py": "def f():\n    from . import b\n",
        "pkg/b.py": "import pycde_accel.cli\nfrom .a import f\n",
        "rtl/__init__.py": "",
        "rtl/x.py": "def g():\n    if True:\n        from ..lowering.k import h\n",
        "low/__init__.py": "",
        "low/k.py": "h = 1\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    modules, graph = import_graph(tmp_path)
    assert graph["pycde_accel.rtl_lib.x"] == [(3, "pycde_accel.lowering.k")]
    assert graph["pycde_accel.a"] == [(2, "pycde_accel.b")]
    assert cycles(graph) == [["pycde_accel.a", "pycde_accel.b"]]
    bad = [b.split(": ", 1)[1] for b in violations(modules, graph)]
    assert bad == ["pycde_accel.rtl_lib.x imports pycde_accel.lowering.k",
                   "pycde_accel.b imports pycde_accel.cli"]
