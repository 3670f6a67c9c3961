"""torch.export -> layer graph: node kinds, BatchNorm folding, ReLU fusion, module paths and
source lines, and the float meaning of the graph against torch."""

import inspect

import numpy as np
import pytest
import torch

from pycde_accel.errors import UserError
from pycde_accel.frontend import capture, evaluate, floateval, graph as g, load_model, models


def _float_matches_torch(model, graph):
    x = [t.detach().double().numpy() for t in model.example_inputs]
    got = floateval.run_float_outputs(graph, x)
    want = evaluate.torch_outputs(model.module, x)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * np.abs(b).max())


@pytest.mark.parametrize("name", sorted(models.BUILTINS))
def test_builtin_graph_means_what_torch_computes(name):
    model = load_model(name)
    graph = g.fuse_relu(capture.capture(model.module, model.example_inputs))
    _float_matches_torch(model, graph)
    assert all(isinstance(n.shape, tuple) and all(isinstance(d, int) for d in n.shape) for n in graph.nodes)


def test_builtin_graphs():
    kinds = lambda gr: [n.kind + ("+relu" if getattr(n, "relu", False) else "") for n in gr.nodes]
    m = load_model("mlp")
    assert kinds(g.fuse_relu(capture.capture(m.module, m.example_inputs))) == \
        ["input", "linear+relu", "linear+relu", "linear"]
    m = load_model("resblock")
    assert kinds(g.fuse_relu(capture.capture(m.module, m.example_inputs))) == \
        ["input", "conv2d+relu", "conv2d+relu", "conv2d", "add+relu", "maxpool2d", "reshape", "linear"]


def test_default_model_is_mlp():
    assert load_model(None).name == "mlp"
    x, = load_model(None).example_inputs
    assert tuple(x.shape) == (1, 784)


def test_kitchen_sink_every_supported_op(model_file):
    model = load_model(str(model_file("kitchen_sink")))
    raw = capture.capture(model.module, model.example_inputs)
    assert not any("batch_norm" in n.name or "dropout" in n.name for n in raw.nodes)
    graph = g.fuse_relu(raw)
    _float_matches_torch(model, graph)
    by = {n.name: n for n in graph.nodes}
    assert [n.kind for n in graph.nodes] == [
        "input", "conv2d", "maxpool2d", "relu", "reshape", "transpose", "transpose", "matmul",
        "reshape", "linear", "linear", "add", "reshape", "transpose", "reshape", "matmul", "reshape", "relu"]
    conv = by["conv2d"]
    assert (conv.stride, conv.padding, conv.module) == ((2, 2), (1, 1), "conv")
    assert by["max_pool2d"].padding == (1, 1) and by["max_pool2d"].stride == (1, 1)
    assert by["permute"].perm == (0, 2, 1)
    assert by["linear_1"].relu and by["linear_1"].module == "proj"      # relu(proj(h)) fused
    assert not by["add"].relu                                           # add feeds two users
    assert graph.outputs == ["view_2", "relu_2"]


def test_batchnorm_is_folded_into_the_conv():
    model = load_model("resblock")
    graph = capture.capture(model.module, model.example_inputs)
    conv = graph.nodes[1]
    stem_conv, bn = model.module.stem[0], model.module.stem[1]
    scale = (bn.weight / torch.sqrt(bn.running_var + bn.eps)).detach().double().numpy()
    np.testing.assert_allclose(conv.weight, stem_conv.weight.detach().double().numpy() * scale[:, None, None, None])
    want_b = (stem_conv.bias.detach().double().numpy() - bn.running_mean.double().numpy()) * scale \
        + bn.bias.detach().double().numpy()
    np.testing.assert_allclose(conv.bias, want_b)


def test_module_paths_and_source_lines():
    model = load_model("lenet5")
    graph = capture.capture(model.module, model.example_inputs)
    lines, start = inspect.getsourcelines(models.LeNet5.forward)
    line_of = {text.strip(): start + i for i, text in enumerate(lines)}
    feat = f"models.py:{line_of['x = self.features(x)']}"
    cls = f"models.py:{line_of['return self.classifier(x)']}"
    got = [(n.kind, n.module, n.source) for n in graph.nodes if n.kind != "input"]
    assert got[:3] == [("conv2d", "features.0", feat), ("relu", "features.1", feat),
                       ("maxpool2d", "features.2", feat)]
    assert got[3][1] == "features.3"
    assert ("reshape", "", f"models.py:{line_of['x = torch.flatten(x, 1)']}") in got
    assert got[-1] == ("linear", "classifier.4", cls)


def test_unsupported_op_names_op_module_line_and_the_supported_list(model_file, unsupported_line):
    model = load_model(str(model_file("unsupported")))
    with pytest.raises(UserError) as e:
        capture.capture(model.module, model.example_inputs, fallback_source=model.fallback_source)
    msg = str(e.value)
    assert "\n" not in msg
    assert "aten.cumsum" in msg and "features.3 (CumSum)" in msg
    assert f"unsupported.py:{unsupported_line}" in msg
    assert "supported: Linear, Conv2d" in msg


def test_unsupported_op_in_a_bare_sequential_names_the_build_function(tmp_path):
    path = tmp_path / "seq.py"
    path.write_text("import torch\nfrom torch import nn\n\n\ndef build():\n"
                    "    return nn.Sequential(nn.Linear(4, 4), nn.LogSoftmax(1)), (torch.randn(1, 4),)\n")
    model = load_model(str(path))
    with pytest.raises(UserError, match=r"aten\._?log_softmax.* module 1 \(LogSoftmax\), seq\.py:5;"):
        capture.capture(model.module, model.example_inputs, fallback_source=model.fallback_source)


@pytest.mark.parametrize("body, what", [
    ("return nn.functional.conv_transpose2d(x, self.c.weight)", "conv_transpose2d"),
    ("return x + x[:, :1]", "with broadcasting"),
    ("return x @ self.w", "weight operand"),
    ("return torch.bmm(x, x.transpose(1, 2))[:, :, ::2]", "aten.slice.Tensor with step 2"),
])
def test_other_unsupported_forms(tmp_path, body, what):
    path = tmp_path / "m.py"
    path.write_text(
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.c = nn.Conv2d(2, 2, 1, groups=2)\n"
        "        self.w = nn.Parameter(torch.randn(4, 4))\n\n"
        f"    def forward(self, x):\n        {body}\n\n\n"
        "def build():\n    shape = (1, 2, 4, 4) if 'self.c' in %r else (1, 4, 4)\n"
        "    return M(), (torch.randn(shape),)\n" % body)
    model = load_model(str(path))
    with pytest.raises(UserError, match="unsupported op .*" + what + ".*m.py:12"):
        capture.capture(model.module, model.example_inputs, fallback_source=model.fallback_source)


def test_dynamic_shapes_are_refused(model_file):
    model = load_model(str(model_file("dynamic")))
    with pytest.raises(UserError, match="dynamic shapes are not supported"):
        capture.capture(model.module, model.example_inputs)


def test_relu_fusion_rules():
    nodes = [g.Input("x", (), (1, 4)),
             g.Linear("a", ("x",), (1, 4), weight=np.eye(4)),
             g.ReLU("r1", ("a",), (1, 4)),
             g.MaxPool2d("p", ("r1",), (1, 4)),       # shapes are not checked by fusion
             g.ReLU("r2", ("p",), (1, 4)),
             g.Linear("b", ("r2",), (1, 4), weight=np.eye(4)),
             g.ReLU("r3", ("b",), (1, 4)),
             g.Add("s", ("b", "r3"), (1, 4))]
    fused = g.fuse_relu(g.Graph(nodes, ["x"], ["s"]))
    names = [n.name for n in fused.nodes]
    assert names == ["x", "a", "p", "r2", "b", "r3", "s"]    # r1 fused; r2 follows a pool; b has 2 users
    assert fused.node("a").relu and not fused.node("b").relu
    assert fused.node("p").inputs == ("a",)
    assert not nodes[1].relu                                 # the input graph is left alone
