"""The op registry: every kind is one module of pycde_accel.ops, reachable from the graph
module, named in capture's "supported" list, and no stage outside the ops package tests a
node's (or a layer descriptor's) type."""

from __future__ import annotations

import ast
from pathlib import Path

import pycde_accel
from pycde_accel import ops
from pycde_accel.backend import program as P
from pycde_accel.frontend import capture, graph as g

ROOT = Path(pycde_accel.__file__).resolve().parents[1]
BUILTIN = {"input", "linear", "conv2d", "relu", "maxpool2d", "add", "reshape", "transpose", "matmul"}


def test_registry_holds_the_builtin_kinds_one_module_each():
    assert BUILTIN <= set(ops.REGISTRY)
    for kind, cls in ops.REGISTRY.items():
        assert cls.kind == kind
        assert cls.__module__ == f"pycde_accel.ops.{kind}"
        assert getattr(g, cls.__name__) is cls
        assert issubclass(cls, ops.Node)
        if cls.SUPPORTED:
            assert cls.SUPPORTED in capture.SUPPORTED
    for target, cls in ops.ATEN.items():
        assert target in cls.ATEN


def _type_tests(path: Path, names: set[str]) -> list[str]:
    """``isinstance(x, <a registered node or descriptor class>)`` calls in one file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance" and len(node.args) == 2:
            used = {n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(node.args[1])
                    if isinstance(n, (ast.Attribute, ast.Name))}
            if used & names:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_type_tests_on_node_kinds_outside_the_ops_package():
    names = {c.__name__ for c in ops.REGISTRY.values()} | {c.__name__ for c in P.OPS.values()}
    files = [p for d in ("pycde_accel", "lowering", "rtl_lib", "sim") for p in (ROOT / d).rglob("*.py")
             if "ops" not in p.relative_to(ROOT).parts]
    assert len(files) > 50
    assert [hit for p in files for hit in _type_tests(p, names)] == []
