"""The whole accelerator in Verilator (rtl_lib.accel + host driver + sim/tb_accel.py): models
end to end bit-exact with the integer reference, AXI back-pressure, shapes that are not
multiples of the array, the watchdog, and error reporting. One Verilator build per config is
shared by every test of the session (pytest_cache_root)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pycde_accel import frontend
from pycde_accel.backend import commands as C
from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError
from pycde_accel.sim.runner import pytest_cache_root
from pycde_accel.simulate import report_lines, run_layers, simulate

CFG = AccelConfig()                                  # 8x8, 64-bit AXI: the default
CFG_4X8 = AccelConfig(rows=4, cols=8)


@pytest.fixture(scope="module")
def accel(build_accel):
    return build_accel(CFG)


@pytest.fixture(scope="module")
def accel_4x8(build_accel):
    return build_accel(CFG_4X8)




@pytest.mark.parametrize("model,watchdog", [("mlp", True), ("resblock", True), ("lenet5", False)])
def test_builtin_model_bit_exact(accel, fe_cache, tmp_path, model, watchdog):
    r = simulate(fe_cache(model), CFG, tmp_path, sim=accel, stall_cycles=20000 if watchdog else 0)
    assert r.bit_exact, r.mismatches
    assert r.float_max_abs_error < 0.25
    assert r.layers
    for layer in r.layers:
        assert layer["cycles"] > 0 and layer["cmds"] == layer["cmd_count"]
        assert 0.0 <= layer["pe_utilization"] <= 1.0
        if layer["op"] == "gemm":
            # every MAC passed through the core: one beat per K element per tile
            assert layer["core_busy"] == layer["exec_cycles"]
    assert r.dma_bytes_read > 0 and r.dma_bytes_written > 0
    # the figures are the model's MACs; the array's (channel padding included) apart
    graph = fe_cache(model).quantized.graph
    assert r.macs == sum(n.macs(graph) for n in graph.nodes) > 0
    assert r.array_macs == sum(layer["array_macs"] for layer in r.layers)
    assert r.array_macs > r.macs if model == "lenet5" else r.array_macs >= r.macs  # 1-channel conv
    assert r.pe_utilization == r.macs / (r.total_cycles * CFG.rows * CFG.cols)


def test_axi_backpressure_changes_timing_not_results(accel, fe_cache, tmp_path):
    fe = fe_cache("resblock")
    calm = simulate(fe, CFG, tmp_path / "calm", sim=accel)
    busy = simulate(fe, CFG, tmp_path / "paused", sim=accel, axi_pause=0.4, seed=7)
    assert calm.bit_exact and busy.bit_exact, busy.mismatches
    for a, b in zip(calm.outputs, busy.outputs):
        np.testing.assert_array_equal(a, b)
    assert busy.total_cycles > calm.total_cycles * 1.2
    # the same bytes moved either way
    assert busy.dma_bytes_read == calm.dma_bytes_read
    assert busy.dma_bytes_written == calm.dma_bytes_written


ODD_MODEL = textwrap.dedent("""
    import torch
    from torch import nn

    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 5, 3, stride=2, padding=1)
            self.fc1 = nn.Linear(5 * 4 * 4, 19)
            self.fc2 = nn.Linear(19, 7)

        def forward(self, x):
            x = torch.relu(self.conv(x))
            x = torch.relu(self.fc1(x.flatten(1)))
            return self.fc2(x)

    def build():
        torch.manual_seed(3)
        return Odd().eval(), (torch.randn(3, 3, 7, 7),)
""")


def test_shapes_not_multiple_of_the_array(accel_4x8, tmp_path):
    """M = 3 (batch) and 48 conv pixels on 4 rows, N = 5/19/7 on 8 cols, K = 27/80/19 on 8-byte
    beats: every tile is partial somewhere; the result is still bit-exact. The RGB conv (stride
    2, padding 1, 3 images) reads its input im2col'd by the host: K = 27 in 4 beats per pixel,
    no channel padding on the array."""
    f = tmp_path / "odd.py"
    f.write_text(ODD_MODEL)
    fe = frontend.run(str(f), eval_batches=1)
    r = simulate(fe, CFG_4X8, tmp_path / "sim", sim=accel_4x8)
    assert r.bit_exact, r.mismatches
    assert [l["op"] for l in r.layers] == ["gemm", "gemm", "gemm"]
    conv = r.layers[0]
    assert conv["macs"] == conv["array_macs"] == 3 * 16 * 5 * 27 and conv["padding_waste"] == 0
    assert conv["exec_cycles"] == 12 * 27                 # 12 tiles of 4 pixels, K = 27


def _image_with(cmds, size=1 << 14, at=0x1000):
    image = bytearray(size)
    image[at:at + C.CMD_BYTES * len(cmds)] = C.encode_list(cmds)
    return bytes(image), [{"name": "hand", "cmd_addr": at, "cmd_count": len(cmds)}]


@pytest.mark.parametrize("engine", ["auto", "axiram"])
def test_watchdog_names_the_stalled_stream(accel, tmp_path, engine):
    """Three committed loads into the A scratchpad and no EXEC to release a bank: the third
    load's data cannot be written, the AXI R channel stalls, and the watchdog ends the run
    naming it instead of hanging (the RTL watchdog of the default fast engine, the Python one
    of the AxiRam engine). 8-beat loads: the router's two slices hold 4 beats, so a 4-beat
    load would leave the R channel idle, not stalled."""
    cmds = [C.Load(dst=C.DST_A, addr=0, beats=8, rows=1, stride=0, index=0, word=0,
                   flags=C.COMMIT) for _ in range(3)]
    image, layers = _image_with(cmds)
    with pytest.raises(UserError) as e:
        run_layers(CFG, accel, layers, image, tmp_path, stall_cycles=300, engine=engine)
    msg = str(e.value)
    assert "stalled" in msg and ("m_axi_r" in msg or "dma read data" in msg), msg


def test_unknown_opcode_is_reported(accel, tmp_path):
    image, layers = _image_with([C.Load(dst=C.DST_X, addr=0, beats=2, rows=1, index=0)])
    bad = bytearray(image)
    bad[0x1000:0x1004] = struct.pack("<I", 9)
    with pytest.raises(UserError, match="unknown command opcode"):
        run_layers(CFG, accel, layers, bytes(bad), tmp_path)


def test_cli_sim_default_model(tmp_path, tmp_path_factory, accel):
    """The README's main job for sim: exit 0 only when bit-exact; the table is printed."""
    env = dict(os.environ, PYCDE_ACCEL_CACHE=str(pytest_cache_root(tmp_path_factory)))
    p = subprocess.run([sys.executable, "-m", "pycde_accel", "sim", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, env=env, timeout=1200)
    assert p.returncode == 0, p.stderr
    assert "bit-exact with the integer reference: yes" in p.stdout
    assert "PE util" in p.stdout and "float PyTorch" in p.stdout
    assert (tmp_path / "o" / "sim" / "result.json").exists()


def test_whole_model_in_one_start(accel, fe_cache, tmp_path):
    """resblock (6 layers; the residual add reads two earlier layers' outputs) with one start
    and one irq, the layers' hazards resolved on chip by the FENCEs, against one start per
    layer: the same bit-exact output, per-layer counters from the stamps (each layer after the
    first counts its FENCE), and fewer cycles from the first start to the last done."""
    fe = fe_cache("resblock")
    one = simulate(fe, CFG, tmp_path / "one", sim=accel)
    per = simulate(fe, CFG, tmp_path / "per", sim=accel, per_layer_starts=True)
    assert one.bit_exact and per.bit_exact, (one.mismatches, per.mismatches)
    assert [np.asarray(o).tolist() for o in one.outputs] == \
        [np.asarray(o).tolist() for o in per.outputs]
    assert (one.starts, per.starts) == (1, len(per.layers)) and len(per.layers) > 1
    plan = __import__("json").loads((tmp_path / "one" / "run" / "plan.json").read_text())
    assert len(plan["runs"]) == 1 and plan["runs"][0]["layers"] == list(range(len(one.layers)))
    for i, (a, b) in enumerate(zip(one.layers, per.layers)):
        assert a["cmds"] == b["cmds"] + (1 if i else 0)
        assert (a["core_busy"], a["dma_wr_bytes"]) == (b["core_busy"], b["dma_wr_bytes"])
        # the next layer's commands are fetched across the FENCE, while this layer runs
        assert abs(a["dma_rd_bytes"] - b["dma_rd_bytes"]) <= C.CMD_BYTES * 16
        assert a["cycles"] > 0
        assert abs(a["predicted_cycles"] - a["cycles"]) <= 0.05 * a["cycles"]
    assert one.total_cycles == sum(a["cycles"] for a in one.layers)
    # every command is fetched once; one start also fetches the FENCEs
    assert one.dma_bytes_read == per.dma_bytes_read + C.CMD_BYTES * (len(one.layers) - 1)
    # the host's time: one start has no round trip between layers
    assert one.host_cycles is not None and per.host_cycles is not None
    assert one.total_cycles <= one.host_cycles < per.host_cycles
    assert per.host_cycles - per.total_cycles > one.host_cycles - one.total_cycles
    lines = "\n".join(report_lines(one))
    assert "host: 1 start," in lines
