"""Honest figures: MACs are the model's (``Node.macs``), the array's MACs with channel padding
apart; PE utilization is model MACs / (PEs x cycles); the top-1 line only for a classifier."""

import json

import numpy as np
import pytest
import torch
from torch import nn

from pycde_accel import flow, frontend, report
from pycde_accel.backend import compile_program
from pycde_accel.config import AccelConfig
from pycde_accel.frontend import graph as g
from pycde_accel.frontend.loader import from_module
from pycde_accel.simulate import SimResult, classifier_shaped, model_macs, report_lines

CFG = AccelConfig()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        z = y.flatten(2)
        a = torch.bmm(z.transpose(1, 2), z)              # (1, 16, 16) @ ...: a matmul of two activations
        return self.fc(y.flatten(1)), a


def test_node_macs_are_the_models():
    torch.manual_seed(0)
    fe = frontend.run(from_module(Net(), (torch.randn(1, 3, 4, 4),)), eval_batches=1)
    graph = fe.quantized.graph
    macs = {n.kind: n.macs(graph) for n in graph.nodes if n.macs(graph)}
    assert macs == {"conv2d": 16 * 4 * 4 * 3 * 3 * 3,     # out values x (C x KH x KW)
                    "linear": 10 * 256,                   # out values x in features
                    "matmul": 16 * 16 * 16}               # out values x the reduction
    cp = compile_program(fe, CFG)
    array = [e["array_macs"] for e in cp.layers]
    model = model_macs(graph, cp.layers, array)
    conv = next(i for i, e in enumerate(cp.layers) if e["name"] == "conv2d")
    # the 3-channel model input is written im2col'd by the host: K = 27, no channel padding
    assert model[conv] == 16 * 4 * 4 * 27 == array[conv]
    assert sum(model) == sum(macs.values())
    # design.json's layers carry the model's MACs, the array's and the waste apart
    assert [e["macs"] for e in cp.layers] == model
    assert cp.layers[conv]["padding_waste"] == 0.0 and cp.stats[conv]["padding_waste"] == 0.0


class Thin(nn.Module):
    """A 3-channel conv in the middle (its input an activation: channels padded to the beat) and
    a depthwise conv (WGEMM in the core's depthwise mode: each column one channel)."""
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(4, 3, 1)
        self.b = nn.Conv2d(3, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)

    def forward(self, x):
        return self.dw(torch.relu(self.b(torch.relu(self.a(x)))))


def test_padding_waste_of_thin_and_depthwise_convs():
    torch.manual_seed(0)
    fe = frontend.run(from_module(Thin(), (torch.randn(1, 4, 5, 5),)), eval_batches=1)
    cp = compile_program(fe, CFG)
    by = {e["name"]: e for e in cp.layers}
    px = 5 * 5
    assert by["conv2d_1"]["macs"] == px * 8 * 27 and by["conv2d_1"]["array_macs"] == px * 8 * 9 * 8
    assert by["conv2d_1"]["padding_waste"] == round(1 - 3 / 8, 6)
    assert by["conv2d_2"]["op"] == "wgemm" and by["conv2d_2"]["macs"] == px * 8 * 9
    # the core's depthwise mode (cols == AXI bytes): K = 9 taps per output, no channel padding
    assert CFG.cols * 8 == CFG.axi_data_width
    assert by["conv2d_2"]["array_macs"] == px * 8 * 9 and by["conv2d_2"]["padding_waste"] == 0
    t = cp.totals()
    assert t["macs"] == sum(e["macs"] for e in cp.layers) < t["array_macs"]


def test_a_node_lowered_to_several_layers_shares_its_macs():
    x = g.Input("x", (), (4, 6))
    fc = g.Linear("fc", ("x",), (4, 5), weight=np.zeros((5, 6)))
    graph = g.Graph([x, fc], ["x"], ["fc"])
    layers = [{"name": "fc"}, {"name": "other"}, {"name": "fc"}]
    assert model_macs(graph, layers, [100, 7, 300]) == [30, 0, 90]
    assert sum(model_macs(graph, layers, [1, 1, 2])) == 120


def test_classifier_shape():
    assert classifier_shaped((1, 10)) and classifier_shaped((4, 2))
    assert not classifier_shaped((1, 1)) and not classifier_shaped((1, 10, 4))
    assert not classifier_shaped((1, 8, 4, 4)) and not classifier_shaped((10,))


def _result(**kw) -> SimResult:
    layer = {"name": "conv", "op": "gemm", "cycles": 100, "predicted_cycles": 90, "macs": 2400,
             "array_macs": 6400, "pe_utilization": 2400 / (100 * 64), "dma_rd_bytes": 10,
             "dma_wr_bytes": 10, "cmds": 3}
    base = dict(model="m", config=CFG.to_dict(), bit_exact=True, mismatches=[], layers=[layer],
                total_cycles=100, macs=2400, pe_utilization=2400 / 6400, dma_bytes_read=10,
                dma_bytes_written=10, float_max_abs_error=0.01, float_top1_match=None,
                array_macs=6400)
    base.update(kw)
    return SimResult(**base)


def test_report_lines_quote_model_and_array_macs():
    lines = report_lines(_result())
    assert " 2400 " in lines[1] and "0.375" in lines[1]
    assert "2400 MACs, PE utilization 0.375" in lines[2]
    assert lines[3] == "  array: 6400 MACs with channel padding (padding waste 62.5% of the array's MACs)"
    assert lines[4] == "  float PyTorch: max abs error 0.01 (dequantized)"       # not a classifier
    assert report_lines(_result(float_top1_match=True))[4].endswith("(dequantized), same top-1")


def test_report_json_and_markdown():
    d = report.build(_result().to_dict(), CFG).data
    assert d["macs"] == 2400 and d["array_macs"] == 6400
    assert d["layers"][0]["macs"] == 2400 and d["layers"][0]["array_macs"] == 6400
    assert "2400 MACs of the model (6400 on the array with channel padding, padding waste 62.5%)" \
        in report.markdown(d)


@pytest.mark.parametrize("shape, top1", [([1, 10], True), ([1, 8, 4, 4], False), ([1, 1], False)])
def test_gen_summary_quotes_top1_for_classifiers_only(tmp_path, shape, top1):
    (tmp_path / "sv").mkdir()
    design = {"model": {"name": "m", "spec": "m.py:build"},
              "accuracy": {"top1_agreement": 1.0, "max_abs_error": 0.01},
              "graph": {"outputs": [{"name": "y", "shape": shape}]},
              "config": {"rows": 8, "cols": 8}, "top": "accel"}
    (tmp_path / "design.json").write_text(json.dumps(design))
    text = flow.summary(tmp_path)
    assert ("top-1 agreement 1.000" in text) == top1
    assert "max abs error 0.01" in text
