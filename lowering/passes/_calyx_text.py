"""A small parser of CIRCT's custom (pretty) op form, for the passes over calyx IR.

Why text: pycde 0.12.1's CIRCT has no Python bindings for the calyx dialect (no op classes, no
builders for components, cells or groups), and the generic op form of a ``calyx.component``
encodes its ports in four parallel attributes (names, types, directions as an APInt, port
attributes) that would all have to be kept in step by hand. The custom form names every cell
port in its SSA name (``%arg_mem_0.addr0``) and a component's ports in its header, which is what
the calyx passes reason about. So those passes print the module in custom form, rewrite it with
this parser, and parse the result back into the same context (:func:`replace_module`), where
MLIR's verifier checks it.

Grammar (what the parser accepts; it is a tokenizer plus a recursive-descent parser, not a
line matcher):

    block   := op*
    op      := token+ (region token*)* NEWLINE      -- tokens at bracket depth 0 up to the newline
    region  := '{' NEWLINE block '}'               -- a '{' that ends its line opens a region

Inside an op, brackets ``( [ { <`` nest and a newline inside them does not end the op. Every
token keeps the whitespace before it, so an op that no pass touches prints back byte for byte.
:class:`Op` gives the structure the passes need on top of that: results, op name, symbol,
operand SSA names, and the parse of the ops they rewrite (``calyx.assign``, a component's
port list, a cell's result/port names).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r"""
    (?P<nl>\n)
  | (?P<ws>[ \t\r]+)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<arrow>->)
  | (?P<ssa>%[A-Za-z0-9_$.\-]+(?:\#[0-9]+)?)
  | (?P<sym>@[A-Za-z0-9_$.\-]+|@"(?:[^"\\]|\\.)*")
  | (?P<dtype>![A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<num>-?[0-9]+(?:\.[0-9]+)?)
  | (?P<id>[A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<caret>\^[A-Za-z0-9_$.]+)
  | (?P<hash>\#[A-Za-z0-9_$.]+)
  | (?P<punct>[()\[\]{}<>,:=?*+|&~])
""", re.VERBOSE)

_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSE = {v: k for k, v in _OPEN.items()}


@dataclass
class Tok:
    kind: str
    text: str
    ws: str = ""  # the whitespace before the token

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"{self.kind}:{self.text!r}"


class ParseError(ValueError):
    pass


def tokenize(text: str) -> list[Tok]:
    out: list[Tok] = []
    ws = ""
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            line = text.count("\n", 0, pos) + 1
            raise ParseError(f"line {line}: cannot tokenize {text[pos:pos + 20]!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            ws += m.group()
            continue
        out.append(Tok(kind, m.group(), ws))
        ws = ""
    out.append(Tok("eof", "", ws))
    return out


@dataclass
class Op:
    """One op: its tokens before, between and after its regions; regions are lists of ops."""

    parts: list[list[Tok]]          # len(regions) + 1 token runs
    regions: list["Region"] = field(default_factory=list)

    # ---- structure -------------------------------------------------------------------
    @property
    def head(self) -> list[Tok]:
        return self.parts[0]

    def _eq_index(self) -> int | None:
        """Index of the ``=`` that separates results from the op name, if the op has results."""
        head = self.head
        i = 0
        while i < len(head) and head[i].kind == "ssa":
            i += 1
            if i < len(head) and head[i].text == ",":
                i += 1
                continue
            break
        if i and i < len(head) and head[i].text == "=":
            return i
        return None

    @property
    def results(self) -> list[str]:
        eq = self._eq_index()
        return [] if eq is None else [t.text for t in self.head[:eq] if t.kind == "ssa"]

    @property
    def name(self) -> str:
        eq = self._eq_index()
        tok = self.head[0 if eq is None else eq + 1]
        return tok.text.strip('"')

    @property
    def sym(self) -> str | None:
        eq = self._eq_index()
        for t in self.head[(0 if eq is None else eq + 1):]:
            if t.kind == "sym":
                return t.text[1:]
        return None

    def uses(self) -> list[str]:
        """SSA names this op reads (every SSA token after ``=``, regions not included)."""
        eq = self._eq_index()
        skip = 0 if eq is None else eq + 1
        return [t.text for i, part in enumerate(self.parts) for j, t in enumerate(part)
                if t.kind == "ssa" and (i > 0 or j >= skip)]

    def rename(self, mapping: dict[str, str]) -> None:
        """Rename SSA values (uses and results) in this op and its regions."""
        for part in self.parts:
            for t in part:
                if t.kind == "ssa" and t.text in mapping:
                    t.text = mapping[t.text]
        for r in self.regions:
            for op in r.ops:
                op.rename(mapping)

    def walk(self):
        yield self
        for r in self.regions:
            for op in r.ops:
                yield from op.walk()

    def text(self) -> str:
        out = []
        for i, part in enumerate(self.parts):
            out.extend(t.ws + t.text for t in part)
            if i < len(self.regions):
                out.append(self.regions[i].text())
        return "".join(out)


@dataclass
class Region:
    open_: Tok            # the '{'
    ops: list[Op]
    close: Tok            # the '}'
    nl: Tok               # the newline after '{'

    def text(self) -> str:
        body = "".join(op.text() for op in self.ops)
        return self.open_.ws + "{" + self.nl.ws + "\n" + body + self.close.ws + "}"

    def find(self, name: str) -> list[Op]:
        return [op for op in self.ops if op.name == name]

    def walk_ops(self):
        for op in self.ops:
            yield from op.walk()

    def remove(self, victim: Op) -> None:
        """Remove ``victim`` from this region or any region nested in it."""
        if victim in self.ops:
            self.ops.remove(victim)
            return
        for op in self.ops:
            for r in op.regions:
                r.remove(victim)


class _Parser:
    def __init__(self, toks: list[Tok]):
        self.toks = toks
        self.i = 0

    def peek(self, k: int = 0) -> Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def block(self, top: bool) -> tuple[list[Op], list[Tok]]:
        """Ops up to a '}' at the start of a line (or EOF at top level); returns the trailing
        newline tokens before it too (kept as part of the last op's text)."""
        ops: list[Op] = []
        while True:
            while self.peek().kind == "nl":
                tok = self.toks[self.i]
                self.i += 1
                if ops:
                    ops[-1].parts[-1].append(tok)
                else:
                    ops.append(Op([[tok]]))  # a leading blank line: an empty "op"
            t = self.peek()
            if t.kind == "eof":
                if not top:
                    raise ParseError("unexpected end of input inside a region")
                return ops, []
            if t.text == "}":
                if top:
                    raise ParseError("unbalanced '}'")
                return ops, []
            ops.append(self.op())

    def op(self) -> Op:
        parts: list[list[Tok]] = [[]]
        regions: list[Region] = []
        depth: list[str] = []
        while True:
            t = self.peek()
            if t.kind == "eof":
                if depth:
                    raise ParseError(f"unclosed {depth[-1]!r} at end of input")
                return Op(parts, regions)
            if t.kind == "nl" and not depth:
                self.i += 1
                parts[-1].append(t)
                return Op(parts, regions)
            if t.text == "{" and not depth and self.peek(1).kind == "nl":
                nl = self.peek(1)
                self.i += 2
                ops, _ = self.block(top=False)
                close = self.peek()
                self.i += 1
                regions.append(Region(t, ops, close, nl))
                parts.append([])
                continue
            self.i += 1
            if t.kind == "punct":
                if t.text in _OPEN:
                    depth.append(t.text)
                elif t.text in _CLOSE and depth and depth[-1] == _CLOSE[t.text]:
                    depth.pop()
                elif t.text in _CLOSE and t.text != ">":
                    raise ParseError(f"unbalanced {t.text!r}")
            parts[-1].append(t)


def parse(text: str) -> Region:
    """The whole printed module as a region-less top block (its ops in a :class:`Region`)."""
    p = _Parser(tokenize(text))
    ops, _ = p.block(top=True)
    return Region(Tok("punct", "{"), ops, Tok("punct", "}"), Tok("nl", "\n"))


def parse_ops(text: str) -> list[Op]:
    """Ops from a snippet (one op per line), for inserting."""
    return parse(text).ops


def print_module(top: Region) -> str:
    return "".join(op.text() for op in top.ops)


# ---- the constructs the calyx passes rewrite ------------------------------------------------

@dataclass
class Assign:
    dst: str
    src: str
    guard: list[Tok]   # the guard's tokens (empty if unguarded)
    ty: str


def parse_assign(op: Op) -> Assign:
    """``calyx.assign DST = [GUARD ?] SRC : TYPE``."""
    toks = [t for t in op.head if t.kind != "nl"]
    if toks[0].text != "calyx.assign" or toks[2].text != "=":
        raise ParseError(f"not a calyx.assign: {op.text().strip()}")
    dst = toks[1].text
    rest = toks[3:]
    colon = max(i for i, t in enumerate(rest) if t.text == ":")
    value, ty = rest[:colon], "".join(t.text for t in rest[colon + 1:])
    guard: list[Tok] = []
    if any(t.text == "?" for t in value):
        q = max(i for i, t in enumerate(value) if t.text == "?")
        guard, value = value[:q], value[q + 1:]
    if len(value) != 1 or value[0].kind != "ssa":
        raise ParseError(f"assign source is not one value: {op.text().strip()}")
    return Assign(dst, value[0].text, guard, ty)


def assign_text(indent: str, dst: str, src: str, ty: str, guard: str = "") -> str:
    g = f"{guard} ? " if guard else ""
    return f"{indent}calyx.assign {dst} = {g}{src} : {ty}\n"


@dataclass
class Port:
    name: str        # without '%'
    ty: str
    attrs: str       # the attribute dict text, '' if none


@dataclass
class Component:
    """A ``calyx.component @name(INPUTS) -> (OUTPUTS) {`` header, parsed."""

    op: Op
    name: str
    inputs: list[Port]
    outputs: list[Port]
    wires: Region
    control: Region

    def set_ports(self) -> None:
        """Rewrite the header tokens from ``inputs``/``outputs``."""
        head = self.op.head
        start = next(i for i, t in enumerate(head) if t.kind == "sym")
        end = _match(head, _index_after_outputs(head, start))
        lst = lambda ps: ", ".join(  # noqa: E731
            f"%{p.name}: {p.ty}" + (f" {p.attrs}" if p.attrs else "") for p in ps)
        new = tokenize(f"({lst(self.inputs)}) -> ({lst(self.outputs)})")[:-1]
        new[0].ws = ""
        self.op.parts[0] = head[:start + 1] + new + head[end + 1:]

    def cells(self) -> list[Op]:
        body = self.op.regions[0]
        return [op for op in body.ops if op.name.startswith("calyx.") and op.results
                and op.name not in ("calyx.wires", "calyx.control")]


def _match(toks: list[Tok], i: int) -> int:
    """Index of the bracket closing the one at ``i``."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].text in _OPEN and toks[j].kind == "punct":
            depth += 1
        elif toks[j].text in _CLOSE and toks[j].kind == "punct":
            depth -= 1
            if depth == 0:
                return j
    raise ParseError("unbalanced brackets in a component header")


def _index_after_outputs(head: list[Tok], sym_i: int) -> int:
    lp = sym_i + 1
    rp = _match(head, lp)
    if head[rp + 1].text != "->":
        raise ParseError("component header without '->'")
    return rp + 2


def _ports(toks: list[Tok]) -> list[Port]:
    """``%name: type {attrs}, ...`` (the tokens inside the parentheses)."""
    out: list[Port] = []
    i = 0
    while i < len(toks):
        name = toks[i]
        if name.kind != "ssa" or toks[i + 1].text != ":":
            raise ParseError(f"bad port list near {name.text!r}")
        j = i + 2
        ty = []
        while j < len(toks) and toks[j].text not in (",", "{"):
            ty.append(toks[j].text)
            j += 1
        attrs = ""
        if j < len(toks) and toks[j].text == "{":
            k = _match(toks, j)
            attrs = "".join((t.ws if n else "") + t.text for n, t in enumerate(toks[j:k + 1]))
            j = k + 1
        out.append(Port(name.text[1:], "".join(ty), attrs))
        i = j + 1 if j < len(toks) and toks[j].text == "," else j
    return out


def component(op: Op) -> Component:
    if op.name != "calyx.component":
        raise ParseError(f"not a component: {op.name}")
    head = op.head
    s = next(i for i, t in enumerate(head) if t.kind == "sym")
    rp = _match(head, s + 1)
    out_l = _index_after_outputs(head, s)
    out_r = _match(head, out_l)
    body = op.regions[0]
    wires = next(o for o in body.ops if o.name == "calyx.wires").regions[0]
    control = next(o for o in body.ops if o.name == "calyx.control").regions[0]
    return Component(op, head[s].text[1:], _ports(head[s + 2:rp]), _ports(head[out_l + 1:out_r]),
                     wires, control)


def cell_ports(op: Op) -> dict[str, str]:
    """A cell's port name -> SSA name (``%reg.write_en`` -> ``write_en``)."""
    out = {}
    for r in op.results:
        base, _, port = r[1:].rpartition(".")
        if not base:
            raise ParseError(f"cell result {r} does not name its port")
        out[port] = r
    return out


def cell_types(op: Op) -> list[str]:
    """The result types after the last top-level ':' of a cell op."""
    head = [t for t in op.head if t.kind != "nl"]
    colon = max(i for i, t in enumerate(head) if t.text == ":")
    tys, cur = [], ""
    for t in head[colon + 1:]:
        if t.text == ",":
            tys.append(cur)
            cur = ""
        else:
            cur += t.text
    tys.append(cur)
    return tys


def replace_module(module, text: str) -> None:
    """Parse ``text`` in ``module``'s context and make it ``module``'s body and attributes."""
    from ._util import attrs_of, ir_of

    ir = ir_of(module)
    new = ir.Module.parse(text, module.context)
    for op in list(module.body.operations):
        op.operation.erase()
    for op in list(new.body.operations):
        module.body.append(op.operation)
    old = attrs_of(module.operation)
    for k in old:
        del module.operation.attributes[k]
    for k, v in attrs_of(new.operation).items():
        module.operation.attributes[k] = v

