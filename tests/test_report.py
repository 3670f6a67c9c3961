"""report.py (charts, markdown, self-contained HTML, JSON; deterministic) and hostgen.py (the
generated C headers compile; the generated standalone Python driver runs a model bit-exact
against the back end's command-level golden model standing in for the accelerator)."""

import base64
import importlib.util
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from pycde_accel import frontend, hostgen, report
from pycde_accel.backend import cmdexec, compile_program
from pycde_accel.backend.encoding import CMD_BYTES, OP_FENCE, decode_bytes
from pycde_accel.config import AccelConfig
from pycde_accel.frontend import reference
from pycde_accel.rtl_lib.axil_csr import default_csr_map

CFG = AccelConfig()

SIM = {   # the shape of SimResult.to_dict() (two layers: a GEMM and a vector op)
    "model": "m.py:build", "config": CFG.to_dict(), "bit_exact": True, "mismatches": [],
    "layers": [
        {"name": "linear", "op": "gemm", "cycles": 400, "core_busy": 100, "stall": 50, "macs": 6400,
         "pe_utilization": 0.25, "dma_rd_bytes": 1000, "dma_wr_bytes": 64, "cmds": 9, "cmd_count": 9},
        {"name": "pool", "op": "maxpool", "cycles": 120, "core_busy": 0, "stall": 0, "macs": 0,
         "pe_utilization": 0.0, "dma_rd_bytes": 256, "dma_wr_bytes": 64, "cmds": 4, "cmd_count": 4},
    ],
    "total_cycles": 520, "macs": 6400, "pe_utilization": 6400 / (520 * 64),
    "dma_bytes_read": 1256, "dma_bytes_written": 128, "float_max_abs_error": 0.01,
    "float_top1_match": True,
}


def test_report_contents_and_determinism(tmp_path):
    a = report.build(SIM, CFG, predicted=[380, 130])
    b = report.build(json.loads(json.dumps(SIM)), CFG, predicted=[380, 130])
    assert a.to_json() == b.to_json() and a.to_markdown() == b.to_markdown()
    assert a.to_html() == b.to_html() and a.charts == b.charts          # PNG bytes too
    d = a.data
    assert [l["cycles"] for l in d["layers"]] == [400, 120] and d["total_cycles"] == 520
    g = d["layers"][0]
    assert (g["core_busy"], g["core_stall"], g["other"]) == (100, 50, 250)
    assert g["intensity"] == pytest.approx(6400 / 1064, abs=1e-6)
    assert g["predicted_cycles"] == 380 and g["predicted_error_pct"] == pytest.approx(-5.0)
    assert d["predicted_total_cycles"] == 510
    assert d["roofline"] == {"peak_macs_per_cycle": 64, "dram_bytes_per_cycle": 8, "ridge_intensity": 8.0}
    res = d["resources"]
    assert res["source"] == "estimate" and res["device"] == "ecp5-85f"
    assert {r["resource"]: r["available"] for r in res["rows"]} == {"lut": 83640, "dsp": 156, "bram": 208}
    md = a.to_markdown()
    assert "| 0 | linear | gemm | 400 | 380 | -5.0 |" in md and "## Roofline" in md
    # self-contained HTML: both charts inline as PNG, no other reference
    html = a.to_html()
    srcs = re.findall(r'src="([^"]*)"', html)
    assert len(srcs) == 2 and all(s.startswith("data:image/png;base64,") for s in srcs)
    for s in srcs:
        assert base64.b64decode(s.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "href=" not in html and "<script" not in html
    files = a.write(tmp_path / "r")
    assert sorted(p.name for p in files) == sorted(["report.json", "report.md", "report.html",
                                                    report.CHART_CYCLES, report.CHART_ROOFLINE])
    assert str(tmp_path) not in html + md + a.to_json()


def test_resource_table_from_a_synthesis_report():
    synth = {"target": "ecp5-85f", "resources": {"lut": 30000, "ff": 20000, "dsp": 64, "bram": 40,
                                                 "carry": 9},
             "available": {"lut": 83640, "ff": 83640, "dsp": 156, "bram": 208},
             "fmax_mhz": 101.5, "placed": True}
    d = report.build(SIM, CFG, synth=synth).data
    assert d["resources"]["source"] == "synthesis"
    assert [(r["resource"], r["used"], r["available"]) for r in d["resources"]["rows"]] == [
        ("lut", 30000, 83640), ("ff", 20000, 83640), ("dsp", 64, 156), ("bram", 40, 208)]
    assert d["clock_mhz"] == 101.5 and d["latency_us"] == pytest.approx(520 / 101.5, abs=1e-3)


# ---- host files --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lenet(tmp_path_factory):
    from pathlib import Path
    ex = Path(__file__).resolve().parents[1] / "examples" / "lenet5.py"
    fe = frontend.run(str(ex), eval_batches=1)
    compiled = compile_program(fe, CFG)
    out = tmp_path_factory.mktemp("host")
    files = hostgen.write(out, CFG, compiled, fe.quantized.scales,
                          default_csr_map(CFG.axi_addr_width, CFG.axil_data_width), fe.model.spec)
    return fe, compiled, out, files


def test_host_files_are_deterministic(lenet, tmp_path):
    fe, compiled, out, files = lenet
    again = hostgen.write(tmp_path, CFG, compiled, fe.quantized.scales,
                          default_csr_map(CFG.axi_addr_width, CFG.axil_data_width), fe.model.spec)
    for a, b in zip(files, again):
        assert a.read_bytes() == b.read_bytes(), a.name
    text = (out / hostgen.HEADER_PROGRAM).read_text()
    for e in compiled.layers:      # the layer table, in run order
        assert f'{{"{e["name"]}", 0x{e["cmd_addr"]:08x}u, {e["cmd_count"]}u}}' in text
    assert f"#define ACCEL_NUM_LAYERS {len(compiled.layers)}u" in text
    assert "#define ACCEL_HW_INFO 0x00080808u" in text and "#define ACCEL_OP_VEC 4u" in text
    assert "#define ACCEL_CMD_BASE_OFFSET 0x010u" in (out / hostgen.HEADER_CSR).read_text()


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_c_headers_compile(lenet, tmp_path):
    _, compiled, out, _ = lenet
    src = tmp_path / "t.c"
    src.write_text('#include "accel_program.h"\nint main(void) { return (int)(accel_layers[0].cmd_count'
                   ' + ACCEL_CTRL_OFFSET + ACCEL_NUM_LAYERS) == 0; }\n')
    r = subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-I", str(out), str(src), "-o",
                        str(tmp_path / "t")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


class FakeAccelerator:
    """The CSR/memory transport of the generated driver, backed by cmdexec.Machine (the back
    end's command-level model of the accelerator): ctrl.start runs the layer's commands."""

    def __init__(self, csr, size):
        self.mem = bytearray(size)
        self.csr = csr
        self.regs = {csr["hw_info"]: hostgen.hw_info(CFG)}
        self.machine = None
        self.log = []

    def write_mem(self, addr, data):
        self.mem[addr:addr + len(data)] = data

    def read_mem(self, addr, size):
        return bytes(self.mem[addr:addr + size])

    def write_csr(self, off, value):
        self.log.append((off, value))
        c = self.csr
        if off == c["ctrl"] and value & 1:
            if self.machine is None:
                self.machine = cmdexec.Machine(self.mem, CFG)
            base, count = self.regs[c["cmd_base"]], self.regs[c["cmd_count"]]
            cmds = decode_bytes(bytes(self.mem[base:base + CMD_BYTES * count]))
            fences = sum(k.OP == OP_FENCE for k in cmds)
            ns = self.machine.run(base, count, list(range(fences + 1)))
            # stamp k: the commands before FENCE k (the layers up to k and the k FENCEs before)
            self.stamps = [sum(n.commands for n in ns[:k + 1]) + k for k in range(fences)]
            self.regs.update({c["events"]: 1, c["status"]: 0, c["perf_cmds"]: count,
                              c["perf_cycles"]: 1, c["stamp_count"]: fences})
        elif off == c["stamp_sel"]:
            self.regs[c["stamp_cmds"]] = self.stamps[value]
        elif off == c["events"]:
            self.regs[off] = self.regs.get(off, 0) & ~value
        else:
            self.regs[off] = value

    def read_csr(self, off):
        return self.regs.get(off, 0)


def test_generated_driver_runs_the_model_bit_exact(lenet):
    fe, compiled, out, _ = lenet
    spec = importlib.util.spec_from_file_location("accel_driver_under_test", out / hostgen.DRIVER)
    drv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(drv)
    text = (out / hostgen.DRIVER).read_text()
    assert "import pycde_accel" not in text and "from pycde_accel" not in text   # standalone
    rng = np.random.default_rng(3)
    x = rng.standard_normal(tuple(fe.model.example_inputs[0].shape))
    # packing agrees with the compiler's placements
    xq = reference.quantize_inputs(fe.quantized, [x])
    assert drv.pack_input(0, xq[0]) == compiled.pack_input(0, xq[0])
    hw = FakeAccelerator(drv.CSR, len(compiled.image) + 4096)
    acc = drv.Accelerator(hw.write_csr, hw.read_csr, hw.write_mem, hw.read_mem)
    acc.load_image(compiled.image)
    acc.write_input(0, x)
    want = reference.run(fe.quantized, xq).outputs[0]
    for per_layer in (False, True):
        hw.log.clear()
        acc.write_input(0, x)
        runs = acc.run(per_layer=per_layer)
        assert [r["name"] for r in runs] == [e["name"] for e in compiled.layers]
        starts = [v for o, v in hw.log if o == drv.CSR["cmd_base"]]
        if per_layer:
            assert starts == [e["cmd_addr"] for e in compiled.layers]
        else:               # the whole model in one start, FENCEs between the layers
            assert starts == [compiled.layers[0]["cmd_addr"]] == [r["cmd_addr"]
                                                                 for r in drv.RUNS]
        # per layer: its own commands (and the FENCE before it, when one start runs them all)
        assert [r["perf_cmds"] for r in runs] == [
            e["cmd_count"] + (1 if i and not per_layer else 0)
            for i, e in enumerate(compiled.layers)]
        got = acc.read_output_int8(0)
        assert got.shape == want.shape and np.array_equal(got.astype(np.int64), want)
    np.testing.assert_allclose(acc.read_output(0), want * fe.quantized.scales[fe.quantized.graph.outputs[0]])
