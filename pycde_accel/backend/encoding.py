"""Accelerator commands as values, and their 32-byte encoding (docs/accelerator-contract.md).

Every command is :data:`CMD_WORDS` little-endian 32-bit words; word 0 = op | flags << 8 |
dst << 16. The word of each field, its width in the engines, the opcodes and the flag masks
come from :mod:`pycde_accel.contract` (``LOAD``, ``EXEC``, ``STORE``, ``VEC``):

* :class:`Load`  (op 1): w1 addr, w2 beats, w3 rows, w4 stride, w5 index, w6 word;
  dst A/B/P/X/S (:data:`DST_A` ...), flags LANES, COMMIT, ZERO.
* :class:`Exec`  (op 2): w1 K, w2 a_word, w3 b_word; flags REL_A, REL_B, CHAIN, DW.
* :class:`Store` (op 3): w1 addr, w2 valid_rows, w3 stride, w4 p_index; flags RELU, PER_TENSOR.
* :class:`Vec`   (op 4): w1 n, w2 x_off, w3 dst, w4 ma, w5 mb, w6 shift (ma, mb signed);
  flags MAX, RELU, TO_X, LUT_SET, LUT, MUL.
* :class:`Fence` (op 5): no fields: the barrier between layers of one run (it stamps the
  performance counters).

``encode()`` / :func:`decode` are exact inverses for every field value that fits 32 bits
(signed fields: two's complement); a value that does not fit is a ValueError. ``to_json()`` is
the command as ``design.json`` lists it.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass
from typing import ClassVar

from .. import contract as CT
from ..contract import (CMD_BYTES, CMD_WORDS, DST_A, DST_B, DST_NAMES, DST_P,  # noqa: F401
                        DST_S, DST_X, OP_EXEC, OP_FENCE, OP_LOAD, OP_STORE, OP_VEC)

# flag masks under the names the compiler uses
LANES, COMMIT, ZERO = CT.LOAD_LANES, CT.LOAD_COMMIT, CT.LOAD_ZERO
REL_A, REL_B, CHAIN, DW = CT.EXEC_REL_A, CT.EXEC_REL_B, CT.EXEC_CHAIN, CT.EXEC_DW
S_RELU, S_PER_TENSOR = CT.STORE_RELU, CT.STORE_PER_TENSOR
V_MAX, V_RELU, V_TO_X = CT.VEC_MAX, CT.VEC_RELU, CT.VEC_TO_X
V_LUT_SET, V_LUT, V_MUL = CT.VEC_LUT_SET, CT.VEC_LUT, CT.VEC_MUL
V_ROWRED = CT.VEC_ROWRED

#: flag names per opcode: {op: {mask: name}}
_FLAG_NAMES = {c.op: {f.value: f.name for f in c.flags} for c in CT.COMMANDS}

_W0 = struct.Struct(f"<{CMD_WORDS}I")


@dataclass(frozen=True)
class Command:
    """Base of the four commands; ``SPEC`` is the contract's
    :class:`~pycde_accel.contract.CommandSpec`."""

    SPEC: ClassVar[CT.CommandSpec]
    OP: ClassVar[int] = 0
    KIND: ClassVar[str] = "?"

    def _fields(self) -> tuple[str, ...]:
        return self.SPEC.field_names

    def words(self) -> list[int]:
        spec = self.SPEC
        dst = self.dst if spec.has_dst else 0
        ws = [0] * CMD_WORDS
        ws[0] = (spec.op << CT.W0_OP[0] | (self.flags & 0xFF) << CT.W0_FLAGS[0]
                 | (dst & 0xFF) << CT.W0_DST[0])
        for f in spec.fields:
            v = int(getattr(self, f.name))
            lo, hi = (-(1 << 31), (1 << 31) - 1) if f.signed else (0, (1 << 32) - 1)
            if not lo <= v <= hi:
                raise ValueError(f"{self.KIND}: field {f.name}={v} does not fit 32 bits")
            ws[f.word] = v & 0xFFFFFFFF
        return ws

    def encode(self) -> bytes:
        return _W0.pack(*self.words())

    def to_json(self) -> dict:
        d = {"op": self.KIND}
        if self.SPEC.has_dst:
            d["dst"] = DST_NAMES[self.dst]
        d["flags"] = [n for b, n in _FLAG_NAMES[self.OP].items() if self.flags & b]
        for name in self._fields():
            d[name] = getattr(self, name)
        return d


@dataclass(frozen=True)
class Load(Command):
    dst: int = DST_A
    addr: int = 0
    beats: int = 1
    rows: int = 1
    stride: int = 0
    index: int = 0
    word: int = 0
    flags: int = 0
    SPEC: ClassVar[CT.CommandSpec] = CT.LOAD
    OP: ClassVar[int] = CT.LOAD.op
    KIND: ClassVar[str] = CT.LOAD.kind


@dataclass(frozen=True)
class Exec(Command):
    K: int = 1
    a_word: int = 0
    b_word: int = 0
    flags: int = 0
    SPEC: ClassVar[CT.CommandSpec] = CT.EXEC
    OP: ClassVar[int] = CT.EXEC.op
    KIND: ClassVar[str] = CT.EXEC.kind


@dataclass(frozen=True)
class Store(Command):
    addr: int = 0
    valid_rows: int = 1
    stride: int = 0
    p_index: int = 0
    flags: int = 0
    SPEC: ClassVar[CT.CommandSpec] = CT.STORE
    OP: ClassVar[int] = CT.STORE.op
    KIND: ClassVar[str] = CT.STORE.kind


@dataclass(frozen=True)
class Vec(Command):
    n: int = 1
    x_off: int = 0
    dst: int = 0          # not the routing byte: a DRAM address (or X index with TO_X), word 3
    ma: int = 0
    mb: int = 0
    shift: int = 0
    flags: int = 0
    SPEC: ClassVar[CT.CommandSpec] = CT.VEC
    OP: ClassVar[int] = CT.VEC.op
    KIND: ClassVar[str] = CT.VEC.kind


@dataclass(frozen=True)
class Fence(Command):
    """A barrier between layers (no fields): dispatch holds it until every earlier command
    finished; it records the performance counters (the layer's stamp)."""
    flags: int = 0
    SPEC: ClassVar[CT.CommandSpec] = CT.FENCE
    OP: ClassVar[int] = CT.FENCE.op
    KIND: ClassVar[str] = CT.FENCE.kind


COMMANDS = {c.OP: c for c in (Load, Exec, Store, Vec, Fence)}

for _cls in COMMANDS.values():      # the classes' fields are the contract's, in its order
    _names = tuple(f.name for f in dataclasses.fields(_cls) if f.name not in ("flags", "dst")
                   or (f.name == "dst" and not _cls.SPEC.has_dst))
    assert _names == _cls.SPEC.field_names, (_cls, _names)
del _cls, _names


def decode(words) -> Command:
    """8 words -> the command (ValueError for an unknown op)."""
    ws = [int(w) & 0xFFFFFFFF for w in words]
    op = ws[0] >> CT.W0_OP[0] & 0xFF
    flags = ws[0] >> CT.W0_FLAGS[0] & 0xFF
    dst = ws[0] >> CT.W0_DST[0] & 0xFF
    if op not in COMMANDS:
        raise ValueError(f"unknown command op {op}")
    cls = COMMANDS[op]
    kw = {"flags": flags}
    for f in cls.SPEC.fields:
        v = ws[f.word]
        if f.signed and v >= 1 << 31:
            v -= 1 << 32
        kw[f.name] = v
    if cls.SPEC.has_dst:
        kw["dst"] = dst
    return cls(**kw)


def encode_list(cmds) -> bytes:
    return b"".join(c.encode() for c in cmds)


def decode_bytes(data: bytes) -> list[Command]:
    n = len(data) // CMD_BYTES
    return [decode(_W0.unpack_from(data, CMD_BYTES * i)) for i in range(n)]
