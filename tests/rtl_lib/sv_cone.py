"""Walks of an emitted SV module's combinational logic, for the tests that check where a
signal's logic starts (a placed path's structure) without placing the design.

``definitions(sv)``: every combinational name of the module -> its expression (``wire x = ...;``
and ``assign x = ...;``). ``cone(sv, expr)``: every name ``expr`` depends on through those
definitions (the wires passed and the registers and ports where the walk ends). ``leaves(sv,
expr)``: the registers and ports alone. ``next_value(sv, reg)``: the expression a register
takes on a clock edge outside reset."""

from __future__ import annotations

import re

_NAME = re.compile(r"[A-Za-z_]\w*")


def definitions(sv: str) -> dict[str, str]:
    out = {m.group(1): m.group(2) for m in
           re.finditer(r"wire\s+(?:\[[^\]]*\]\s*)*(\w+)\s*=\s*(.*?);", sv, re.S)}
    out.update({m.group(1): m.group(2) for m in
                re.finditer(r"assign\s+(\w+)\s*=\s*(.*?);", sv, re.S)})
    return out


def cone(sv: str | dict, expr: str) -> set[str]:
    defs = definitions(sv) if isinstance(sv, str) else sv
    seen, todo = set(), set(_NAME.findall(expr))
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in defs:
            todo |= set(_NAME.findall(defs[n]))
    return seen


def leaves(sv: str | dict, expr: str) -> set[str]:
    defs = definitions(sv) if isinstance(sv, str) else sv
    return {n for n in cone(defs, expr) if n not in defs}


def next_value(sv: str, reg: str) -> str:
    hits = re.findall(rf"\b{reg}\s*<=\s*(.*?);", sv, re.S)
    vals = [h for h in hits if not re.fullmatch(r"\d+'[hbd][0-9a-fA-F]+", h.strip())]
    assert len(vals) == 1, (reg, hits)
    return vals[0]
