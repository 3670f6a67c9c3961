"""The skid buffer (``rtl_lib.skid_buffer``) in Verilator: words in order under random
back-pressure on both sides, one beat per cycle at latency 1 without it, its outputs registers
(unchanged by its inputs within a cycle), two entries when held; and PyCDE's channel buffer
(``ESI_PipelineStage``), which the module docstring compares, on the same testbench."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pycde import Clock, Reset
from pycde.types import Bits, Channel

from pycde_accel.errors import ConfigError
from pycde_accel.rtl_lib.skid_buffer import make_skid_buffer
from pycde_accel.rtl_lib.stream import Stream, module
from pycde_accel.sim import run

TB = "tb_skid_buffer"
TB_DIRS = [Path(__file__).resolve().parent]

CASES = [  # width, beats, seed, p_in, p_out
    (32, 200, 1, 1.0, 1.0),
    (32, 300, 2, 0.7, 0.5),
    (64, 300, 3, 1.0, 0.3),
    (8, 300, 4, 0.3, 0.9),
]


def _run(sim, tmp_path, testcase, width, beats, seed, p_in, p_out):
    spec = {"width": width, "beats": beats, "seed": seed, "p_in": p_in, "p_out": p_out}
    run(sim, TB, tmp_path, module_dirs=TB_DIRS, testcase=testcase,
        extra_env={"TB_SKID_SPEC": json.dumps(spec)})


@pytest.mark.parametrize("width,beats,seed,p_in,p_out", CASES,
                         ids=["w32-full-rate", "w32-s2", "w64-s3", "w8-s4"])
def test_stream(module_sim, tmp_path, width, beats, seed, p_in, p_out):
    _run(module_sim(make_skid_buffer(width)), tmp_path, "stream", width, beats, seed, p_in, p_out)


@pytest.mark.parametrize("width", [1, 32])
def test_registered_and_two_entries(module_sim, tmp_path, width):
    _run(module_sim(make_skid_buffer(width)), tmp_path, "registered", width, 0, 7, 1.0, 1.0)


def test_name_and_refusal():
    assert make_skid_buffer(16).module_name == "skid_buffer_w16"
    with pytest.raises(ConfigError, match="width"):
        make_skid_buffer(0)


def _esi_stage(width):
    """PyCDE's channel buffer (one ``ESI_PipelineStage``) behind the skid buffer's ports."""
    s = Stream(data=width)

    def build(p):
        ch, ready = Channel(Bits(width)).wrap(p.in_data, p.in_valid)
        data, valid = ch.buffer(p.clk, p.rst, 1).unwrap(p.out_ready)
        p.in_ready, p.out_data, p.out_valid = ready, data, valid

    return module(f"esi_stage_w{width}", {"clk": Clock(), "rst": Reset(), **s.sink("in"),
                                          **s.source("out")}, build)


def test_esi_channel_buffer_behaves_the_same(module_sim, tmp_path):
    """PyCDE's channel buffer, which the module docstring compares: the same words, order and
    latency under the same random back-pressure (it is not used for the reasons given there)."""
    _run(module_sim(_esi_stage(32)), tmp_path, "stream", 32, 300, 2, 0.7, 0.5)
    _run(module_sim(_esi_stage(32)), tmp_path / "full", "stream", 32, 200, 1, 1.0, 1.0)


def _slice(kind, width):
    """``regs.register_slice`` or ``regs.fifo_slice`` behind the skid buffer's ports."""
    from pycde_accel.regs import fifo_slice, register_slice
    from pycde_accel.rtl_lib.keep_ff import toggles
    s = Stream(data=width)
    make = {"fifo": fifo_slice, "register": register_slice,
            # a read pointer copy per 12 bits, as the read router's (3 copies, a short last)
            "fifo_copies": lambda *a: fifo_slice(*a, chunk=12, toggles=toggles),
            "fifo_gate": None}[kind]

    def build(p):
        if kind == "fifo_gate":
            # the low 4 bits as the one-hot field, gated by conditions that are always 1, and
            # the offered word's low bits replaced by the gated flops: they must follow the
            # head through stays and advances (a word out of order or changed fails)
            from pycde.signals import BitsSignal
            one = Bits(1)(1)
            valid, data, ready, go = fifo_slice(p.clk, p.rst, p.in_valid, p.in_data,
                                                p.out_ready, "s", hot=(0, 4), gate=[one] * 4)
            data = BitsSignal.concat([data[4:], go])
        else:
            valid, data, ready = make(p.clk, p.rst, p.in_valid, p.in_data, p.out_ready, "s")
        p.in_ready, p.out_data, p.out_valid = ready, data, valid

    return module(f"{kind}_slice_w{width}", {"clk": Clock(), "rst": Reset(), **s.sink("in"),
                                              **s.source("out")}, build)


@pytest.mark.parametrize("kind", ["fifo", "fifo_copies", "fifo_gate", "register"])
def test_slices_keep_the_skid_buffers_handshake(block_sim, tmp_path, kind):
    """The read router's output slice (a 2-slot FIFO, so the receivers' readies reach its
    pointers only; with a copy of its read pointer per chunk of the data) and the main/skid
    register slice: the same words, order, latency 1 and full rate under random back-pressure,
    registered outputs and two entries when held."""
    from pycde_accel.rtl_lib import keep_ff
    from pycde_accel.rtl_lib.emit import emit_module
    m = _slice(kind, 32)
    sim = block_sim(m.module_name, lambda sv_dir: emit_module(m, sv_dir,
                                                               sources=[keep_ff.SOURCE]))
    _run(sim, tmp_path / "rand", "stream", 32, 300, 2, 0.7, 0.5)
    _run(sim, tmp_path / "full", "stream", 32, 200, 1, 1.0, 1.0)
    _run(sim, tmp_path / "reg", "registered", 32, 0, 7, 1.0, 1.0)
