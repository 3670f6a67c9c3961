"""The descriptor encodings: binary and JSON round trips (hypothesis), header checks, refusals."""

import dataclasses
import json

import pytest
from hypothesis import given, settings, strategies as st

from pycde_accel.backend import program as P

U32 = st.integers(0, (1 << 32) - 1)
S32 = st.integers(-(1 << 31), (1 << 31) - 1)
FLAGS = st.integers(0, 63)


def _strategy(cls):
    kw = {"flags": FLAGS}
    for f in dataclasses.fields(cls):
        if f.name in ("flags", "index", "name", "module"):
            continue
        signed = P._signed_field(f.name)
        base = S32 if signed else U32
        kw[f.name] = st.tuples(base, base, base, base) if isinstance(f.default, tuple) else base
    kw["name"] = st.text(max_size=8)
    kw["module"] = st.text(max_size=8)
    return st.builds(cls, **kw)


DESCS = st.one_of(*[_strategy(c) for c in P.OPS.values()])


@settings(max_examples=60, deadline=None)
@given(layers=st.lists(DESCS, max_size=5), rows=st.integers(1, 64), cols=st.integers(1, 64),
       axi=st.sampled_from([4, 8, 16, 32, 64]))
def test_binary_and_json_round_trip(layers, rows, cols, axi):
    layers = tuple(dataclasses.replace(d, index=i) for i, d in enumerate(layers))
    prog = P.Program(rows, cols, axi, layers)
    data = prog.encode()
    assert len(data) == prog.nbytes == 4 * (P.HEADER_WORDS + P.DESC_WORDS * len(layers))
    names = [(d.name, d.module) for d in layers]
    back = P.Program.decode(data + b"\0" * 7, names)
    assert back == prog
    assert [(d.name, d.module) for d in back.layers] == names
    # the JSON form survives a trip through text and equals the binary one
    j = json.loads(json.dumps(prog.to_json()))
    assert P.Program.from_json(j) == prog
    assert P.Program.from_json(j).encode() == data


def test_header_layout_and_magic():
    prog = P.Program(4, 4, 8, (P.Gemm(0, P.RELU | P.BIAS, M=3, N=5, K=7),))
    data = prog.encode()
    assert data[:4] == b"PACC"
    assert int.from_bytes(data[4:8], "little") == P.VERSION
    assert int.from_bytes(data[8:12], "little") == 1
    w0 = int.from_bytes(data[32:36], "little")
    assert w0 == P.Gemm.OP | (P.RELU | P.BIAS) << 8
    # fields follow in dataclass order: a_base, b_base, c_base, p_base, M, N, K
    assert int.from_bytes(data[32 + 4 * 6:32 + 4 * 7], "little") == 3


@pytest.mark.parametrize("offset,value,msg", [(0, 0, "magic"), (4, 1, "version"), (12, 16, "descriptor size"),
                                              (28, 12345, "checksum")])
def test_decode_refuses_corruption(offset, value, msg):
    data = bytearray(P.Program(2, 2, 8, (P.Relu(0),)).encode())
    data[offset:offset + 4] = value.to_bytes(4, "little")
    with pytest.raises(P.ProgramError, match=msg):
        P.Program.decode(bytes(data))


def test_truncated_and_unknown_op():
    data = P.Program(2, 2, 8, (P.Copy(0),)).encode()
    with pytest.raises(P.ProgramError, match="needs"):
        P.Program.decode(data[:-4])
    bad = bytearray(data)
    bad[32] = 99
    bad[28:32] = (int.from_bytes(data[28:32], "little") + 99 - P.Copy.OP).to_bytes(4, "little")
    with pytest.raises(P.ProgramError, match="unknown op"):
        P.Program.decode(bytes(bad))


def test_field_overflow_is_refused():
    with pytest.raises(ValueError, match="a_stride_m"):
        P.Program(1, 1, 8, (P.Gemm(0, a_stride_m=1 << 31),)).encode()
    with pytest.raises(ValueError, match="M="):
        P.Gemm(0, M=-1).words()


def test_every_descriptor_fits():
    for cls in P.OPS.values():
        assert len(cls().words()) == P.DESC_WORDS


def test_word_map_matches_encoding():
    for cls in P.OPS.values():
        wm = P.word_map(cls)
        assert max(wm.values()) < P.DESC_WORDS
        for name, w in wm.items():
            base = name.split("[")[0]
            default = getattr(cls(), base)
            if isinstance(default, tuple):
                i = int(name.split("[")[1][:-1])
                val = tuple(7 if j == i else 0 for j in range(len(default)))
            else:
                val = 7
            assert cls(**{base: val}).words()[w] == 7, (cls.KIND, name)
    assert P.word_map(P.Gemm)["a_base"] == 2 and P.word_map(P.Gemm)["in_stride_w"] == 31
