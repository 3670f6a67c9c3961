"""rtl_lib.stream: a stream signature's port groups (names, order, directions) and a module
declared from them; rtl_lib.bits: the width helpers."""

from __future__ import annotations

import pytest
from pycde import Clock, Input, Output, Reset
from pycde.types import Bits

from pycde_accel.rtl_lib.bits import count_width, index_width, log2
from pycde_accel.rtl_lib.stream import Stream, module


def _shape(ports: dict) -> list[tuple[str, str, int]]:
    return [(n, "in" if isinstance(p, Input) else "out", p.type.width) for n, p in ports.items()]


def test_handshake_after_the_payload_by_default():
    s = Stream(data=32, last=1)
    assert _shape(s.sink("c")) == [("c_data", "in", 32), ("c_last", "in", 1),
                                   ("c_valid", "in", 1), ("c_ready", "out", 1)]
    assert _shape(s.source("c")) == [("c_data", "out", 32), ("c_last", "out", 1),
                                     ("c_valid", "out", 1), ("c_ready", "in", 1)]


def test_handshake_where_the_signature_names_it():
    s = Stream(ready=1, valid=1, word=7, data=64)
    assert _shape(s.sink("wr")) == [("wr_ready", "out", 1), ("wr_valid", "in", 1),
                                    ("wr_word", "in", 7), ("wr_data", "in", 64)]
    assert list(Stream(id=1, resp=2).sink("m_axi_b", sep="")) == [
        "m_axi_bid", "m_axi_bresp", "m_axi_bvalid", "m_axi_bready"]


def test_handshake_is_one_bit():
    with pytest.raises(ValueError, match="valid is one bit"):
        Stream(data=8, valid=2)


def test_fields_and_forward_name_payload_and_valid():
    class Src:
        a_data, a_last, a_valid, a_ready = "d", "l", "v", "r"

    s = Stream(data=8, last=1)
    assert s.fields("b", Src, "a") == {"b_data": "d", "b_last": "l", "b_valid": "v"}

    class Dst:
        pass

    s.forward(Dst, "x", Src, "a")
    assert (Dst.x_data, Dst.x_last, Dst.x_valid) == ("d", "l", "v")
    assert not hasattr(Dst, "x_ready")


def test_module_keeps_port_order_and_name():
    io = {"clk": Clock(), "rst": Reset(), **Stream(data=8).sink("i"), **Stream(data=8).source("o"),
          "busy": Output(Bits(1))}

    def build(p):
        p.o_data, p.o_valid, p.i_ready, p.busy = p.i_data, p.i_valid, p.o_ready, p.i_valid

    cls = module("stream_probe_pass", io, build)
    assert cls.module_name == "stream_probe_pass"
    assert [p.name for p in cls._builder.inputs] == ["clk", "rst", "i_data", "i_valid", "o_ready"]
    assert [p.name for p in cls._builder.outputs] == ["i_ready", "o_data", "o_valid", "busy"]


def test_widths():
    assert [log2(n) for n in (1, 2, 3, 4, 5, 256)] == [0, 1, 2, 2, 3, 8]
    assert [index_width(n) for n in (1, 2, 3, 256)] == [1, 1, 2, 8]
    assert [count_width(n) for n in (0, 1, 2, 8, 255)] == [1, 1, 2, 4, 8]


def test_pack_puts_the_first_field_lowest_and_unpack_takes_it_apart(tmp_path):
    import re

    from pycde import generator
    from pycde import Module

    from pycde_accel.rtl_lib.emit import emit_module
    from pycde_accel.rtl_lib.stream import pack, unpack

    caught = []

    class PackProbe(Module):
        module_name = "pack_probe"
        a, b, c = Input(Bits(3)), Input(Bits(5)), Input(Bits(8))
        w_in = Input(Bits(16))
        w = Output(Bits(16))
        a2, b2, c2 = Output(Bits(3)), Output(Bits(5)), Output(Bits(8))

        @generator
        def build(p):
            p.w = pack({"a": p.a, "b": p.b, "c": p.c})
            f = unpack(p.w_in, {"a": 3, "b": 5, "c": 8})
            p.a2, p.b2, p.c2 = f["a"], f["b"], f["c"]
            try:
                unpack(p.w_in, {"a": 3, "b": 5})
            except ValueError as e:
                caught.append(str(e))

    out = emit_module(PackProbe, tmp_path / "sv")
    text = re.sub(r"\s+", " ", "".join(f.read_text() for f in out.files))
    assert "{c, b, a}" in text
    for name, hi, lo in (("a2", 2, 0), ("b2", 7, 3), ("c2", 15, 8)):
        assert re.search(rf"\b{name}\b[^;]*w_in\[{hi}:{lo}\]", text), (name, text)
    assert caught == ["unpack: the fields take 8 bits of a 16-bit word"]
