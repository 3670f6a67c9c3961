"""Command encoding: the word layout of docs/accelerator-contract.md, binary and JSON round trip."""

import struct

import pytest
from hypothesis import given, settings, strategies as st

from pycde_accel.backend import commands as C

U32 = st.integers(0, (1 << 32) - 1)
S32 = st.integers(-(1 << 31), (1 << 31) - 1)
F8 = st.integers(0, 255)

CMDS = st.one_of(
    st.builds(C.Load, dst=st.integers(0, 4), addr=U32, beats=U32, rows=U32, stride=U32, index=U32, word=U32, flags=F8),
    st.builds(C.Exec, K=U32, a_word=U32, b_word=U32, flags=F8),
    st.builds(C.Store, addr=U32, valid_rows=U32, stride=U32, p_index=U32, flags=F8),
    st.builds(C.Vec, n=U32, x_off=U32, dst=U32, ma=S32, mb=S32, shift=U32, flags=F8))


@settings(max_examples=200, deadline=None)
@given(cmds=st.lists(CMDS, max_size=6))
def test_round_trip(cmds):
    data = C.encode_list(cmds)
    assert len(data) == C.CMD_BYTES * len(cmds)
    assert C.decode_bytes(data) == cmds
    for c in cmds:
        j = c.to_json()
        assert j["op"] == c.KIND and all(j[k] == getattr(c, k) for k in j if k not in ("op", "dst", "flags"))


def test_word_layout_matches_the_spec():
    w = struct.unpack("<8I", C.Load(C.DST_B, 0x1000, 3, 8, 64, 2, 5, C.LANES | C.COMMIT).encode())
    assert w == (1 | 3 << 8 | 1 << 16, 0x1000, 3, 8, 64, 2, 5, 0)
    w = struct.unpack("<8I", C.Exec(200, 7, 9, C.REL_A | C.REL_B).encode())
    assert w == (2 | 3 << 8, 200, 7, 9, 0, 0, 0, 0)
    w = struct.unpack("<8I", C.Store(0x40, 3, 16, 8, C.S_RELU | C.S_PER_TENSOR).encode())
    assert w == (3 | 3 << 8, 0x40, 3, 16, 8, 0, 0, 0)
    w = struct.unpack("<8I", C.Vec(4, 1, 0x80, -3, 5, 7, C.V_MAX | C.V_TO_X).encode())
    assert w == (4 | 5 << 8, 4, 1, 0x80, (1 << 32) - 3, 5, 7, 0)


def test_refusals():
    with pytest.raises(ValueError, match="unknown command op"):
        C.decode([9, 0, 0, 0, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="ma="):
        C.Vec(ma=1 << 31).encode()
    with pytest.raises(ValueError, match="addr="):
        C.Load(addr=-1).encode()
