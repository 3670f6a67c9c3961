"""Random small conv nets (hypothesis): capture means what torch computes for any stride,
padding, kernel and pool geometry (with BatchNorm folding and ReLU fusion); the numpy integer
reference and the integer torch-op form agree bit for bit; the dequantized output is near the
float output."""

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings, strategies as st
from torch import nn

from pycde_accel.frontend import capture, evaluate, floateval, graph as g, intmodule, quantize, reference


@st.composite
def conv_nets(draw):
    c_in, h0, w0 = draw(st.integers(1, 3)), draw(st.integers(5, 10)), draw(st.integers(5, 10))
    h, w, c = h0, w0, c_in
    layers = []
    for _ in range(draw(st.integers(1, 2))):
        k, s = draw(st.integers(1, 3)), draw(st.integers(1, 2))
        p = draw(st.integers(0, k // 2 + 1))
        oc = draw(st.integers(1, 4))
        oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        if oh < 1 or ow < 1:
            continue
        layers.append(nn.Conv2d(c, oc, k, stride=s, padding=p, bias=draw(st.booleans())))
        h, w, c = oh, ow, oc
        if draw(st.booleans()):
            layers.append(nn.BatchNorm2d(oc))
        if draw(st.booleans()):
            layers.append(nn.ReLU())
        if min(h, w) >= 2 and draw(st.booleans()):
            pk = draw(st.integers(2, min(3, h, w)))
            ps, pp = draw(st.integers(1, pk)), draw(st.integers(0, pk // 2))
            layers.append(nn.MaxPool2d(pk, stride=ps, padding=pp))
            h, w = (h + 2 * pp - pk) // ps + 1, (w + 2 * pp - pk) // ps + 1
    layers += [nn.Flatten(), nn.Linear(c * h * w, draw(st.integers(2, 5)))]
    seed, batch = draw(st.integers(0, 2 ** 16)), draw(st.integers(1, 2))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = nn.Sequential(*layers)
        with torch.no_grad():
            for m in model:
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.normal_(0, 0.3)
                    m.running_var.uniform_(0.3, 2.0)
                    m.weight.normal_(1, 0.3)
                    m.bias.normal_(0, 0.3)
        x = torch.randn(batch, c_in, h0, w0)
    return model.eval(), x


@settings(max_examples=12, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(conv_nets(), st.integers(0, 1000))
def test_random_conv_nets(net, seed):
    model, x = net
    graph = g.fuse_relu(capture.capture(model, (x,)))
    xs = [x.double().numpy()]
    float_out = floateval.run_float_outputs(graph, xs)[0]
    torch_out = evaluate.torch_outputs(model, xs)[0]
    np.testing.assert_allclose(float_out, torch_out, rtol=1e-4, atol=1e-4 * (np.abs(torch_out).max() + 1e-9))

    rng = np.random.default_rng(seed)
    calib = [xs] + [[rng.standard_normal(x.shape)] for _ in range(8)]
    qm = quantize.quantize_graph(graph, calib)
    xq = reference.quantize_inputs(qm, xs)
    ref = reference.run(qm, xq).outputs[0]
    with torch.no_grad():
        got = intmodule.IntegerModule(qm)(torch.from_numpy(xq[0].astype(np.int8)))
    np.testing.assert_array_equal(got.numpy().astype(np.int64), ref)

    # x is in the calibration set, so nothing clips: a few output steps of error at most
    deq = ref * qm.scales[graph.outputs[0]]
    assert np.abs(deq - torch_out).max() <= 6 * qm.scales[graph.outputs[0]] + 1e-9
