"""The golden executor runs the compiled program from the DRAM image bit-exactly like the
frontend's integer reference, for the built-in models, random layers whose M, N, K are not
multiples of the array, and several array shapes; its DMA byte and tile counters equal the
compiler's analytic figures."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from pycde_accel.backend import compile_program, executor
from pycde_accel.config import AccelConfig
from pycde_accel.frontend import graph as g
from pycde_accel.frontend import quantize, reference

from .conftest import ARRAYS, example_inputs_q, frontend_result


def check(qm, cfg: AccelConfig, inputs_q):
    cp = compile_program(qm, cfg)
    outs, ex = executor.run(cp, inputs_q)
    ref = reference.run(qm, inputs_q)
    for o, r, name in zip(outs, ref.outputs, qm.graph.outputs):
        assert o.shape == r.shape, name
        assert np.array_equal(o, r), f"output {name} differs from the reference"
    assert len(ex.layers) == len(cp.stats)
    for s, c in zip(cp.stats, ex.layers):
        assert (c.dram_bytes_read, c.dram_bytes_written, c.tiles) == \
            (s["dram_bytes_read"], s["dram_bytes_written"], s.get("tiles", 0)), s["name"]
        axi = cfg.axi_data_width // 8
        assert c.dram_beats_written * axi >= c.dram_bytes_written   # (im2col reads repeat bytes within a beat)
        assert (c.dram_beats_read > 0) == (c.dram_bytes_read > 0)
    return cp, ex


@pytest.mark.parametrize("rows,cols", ARRAYS)
@pytest.mark.parametrize("model", ["mlp", "lenet5", "resblock"])
def test_builtin_bit_exact(model, rows, cols):
    fe = frontend_result(model)
    cp, _ = check(fe.quantized, AccelConfig(rows=rows, cols=cols), example_inputs_q(fe))
    gemms = [s for s in cp.stats if s["op"] == "gemm"]
    assert sum(s["tiles"] for s in gemms) == sum(
        -(-s["M"] // rows) * -(-s["N"] // cols) * s["batch"] for s in gemms)


def test_beats_of_aligned_contiguous_reads():
    """mlp's first layer reads only whole aligned bursts (packed weights, records, the 784-byte
    input), so its beats are its bytes / 8."""
    fe = frontend_result("mlp")
    _, ex = check(fe.quantized, AccelConfig(rows=8, cols=8), example_inputs_q(fe))
    assert ex.layers[0].dram_beats_read * 8 == ex.layers[0].dram_bytes_read == 784 * 128 + 16 * 128 + 784


def test_builtin_random_inputs_bit_exact():
    fe = frontend_result("lenet5")
    rng = np.random.default_rng(3)
    for _ in range(2):
        xq = [rng.integers(-128, 128, size=fe.quantized.graph.node(i).shape) for i in fe.quantized.graph.inputs]
        check(fe.quantized, AccelConfig(rows=3, cols=5), xq)


# ---- random layers --------------------------------------------------------------------------

def _quantize(graph, rng, batches=3):
    shapes = [graph.node(i).shape for i in graph.inputs]
    calib = [[rng.normal(size=s) for s in shapes] for _ in range(batches)]
    return quantize.quantize_graph(graph, calib)


def _inputs(qm, rng):
    return [rng.integers(-128, 128, size=qm.graph.node(i).shape) for i in qm.graph.inputs]


CONFIGS = st.builds(lambda rc, depth: AccelConfig(rows=rc[0], cols=rc[1], spad_a_depth=depth, spad_b_depth=depth),
                    st.sampled_from(ARRAYS + [(3, 1), (1, 5)]), st.sampled_from([32, 64, 1024]))
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(cfg=CONFIGS, m=st.integers(1, 19), k=st.integers(1, 40), n=st.integers(1, 21), lead=st.integers(0, 3),
       relu=st.booleans(), bias=st.booleans(), seed=st.integers(0, 2**16))
def test_random_linear(cfg, m, k, n, lead, relu, bias, seed):
    assume(k <= cfg.spad_a_depth)
    rng = np.random.default_rng(seed)
    shape = (lead, m, k) if lead else (m, k)
    x = g.Input("x", (), shape, index=0)
    fc = g.Linear("fc", ("x",), shape[:-1] + (n,), module="fc", weight=rng.normal(size=(n, k)),
                  bias=rng.normal(size=n) if bias else None, relu=relu)
    qm = _quantize(g.Graph([x, fc], ["x"], ["fc"]), rng)
    check(qm, cfg, _inputs(qm, rng))


@SETTINGS
@given(cfg=CONFIGS, n=st.integers(1, 2), c=st.integers(1, 4), hw=st.tuples(st.integers(3, 9), st.integers(3, 9)),
       oc=st.integers(1, 9), kern=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       stride=st.tuples(st.integers(1, 2), st.integers(1, 2)), pad=st.tuples(st.integers(0, 1), st.integers(0, 1)),
       relu=st.booleans(), pool=st.booleans(), fc=st.integers(0, 5), seed=st.integers(0, 2**16))
def test_random_conv(cfg, n, c, hw, oc, kern, stride, pad, relu, pool, fc, seed):
    """conv (im2col by DMA addressing) [+ maxpool] [+ flatten + linear: the flatten of a
    channels-last map folds into the linear's weight order]."""
    rng = np.random.default_rng(seed)
    h, w = hw
    oh, ow = (h + 2 * pad[0] - kern[0]) // stride[0] + 1, (w + 2 * pad[1] - kern[1]) // stride[1] + 1
    assume(oh >= 1 and ow >= 1 and kern[0] * kern[1] * c <= cfg.spad_a_depth)
    nodes = [g.Input("x", (), (n, c, h, w), index=0),
             g.Conv2d("conv", ("x",), (n, oc, oh, ow), module="features.0", weight=rng.normal(size=(oc, c) + kern),
                      bias=rng.normal(size=oc), stride=stride, padding=pad, relu=relu)]
    last, shape = "conv", (n, oc, oh, ow)
    if pool and oh >= 2 and ow >= 2:
        shape = (n, oc, oh // 2, ow // 2)
        nodes.append(g.MaxPool2d("pool", (last,), shape, module="features.1", kernel=(2, 2), stride=(2, 2)))
        last = "pool"
    if fc and int(np.prod(shape[1:])) <= cfg.spad_a_depth:
        feat = int(np.prod(shape[1:]))
        nodes.append(g.Reshape("flat", (last,), (n, feat)))
        nodes.append(g.Linear("fc", ("flat",), (n, fc), module="classifier", weight=rng.normal(size=(fc, feat)),
                              bias=rng.normal(size=fc)))
        last = "fc"
    qm = _quantize(g.Graph(nodes, ["x"], [last]), rng)
    check(qm, cfg, _inputs(qm, rng))


@SETTINGS
@given(cfg=CONFIGS, b=st.integers(1, 3), m=st.integers(1, 11), k=st.integers(1, 13), n=st.integers(1, 11),
       trans=st.booleans(), relu=st.booleans(), seed=st.integers(0, 2**16))
def test_random_matmul_of_activations(cfg, b, m, k, n, trans, relu, seed):
    """attention-score style a @ b.T (b read through transposed strides) or a @ b."""
    rng = np.random.default_rng(seed)
    nodes = [g.Input("a", (), (b, m, k), index=0)]
    if trans:
        nodes += [g.Input("bt", (), (b, n, k), index=1), g.Transpose("t", ("bt",), (b, k, n), perm=(0, 2, 1))]
        rhs, inputs = "t", ["a", "bt"]
    else:
        nodes += [g.Input("b", (), (b, k, n), index=1)]
        rhs, inputs = "b", ["a", "b"]
    nodes.append(g.MatMul("scores", ("a", rhs), (b, m, n), module="attn", relu=relu))
    qm = _quantize(g.Graph(nodes, inputs, ["scores"]), rng)
    check(qm, cfg, _inputs(qm, rng))


@SETTINGS
@given(cfg=CONFIGS, shape=st.tuples(st.integers(1, 2), st.integers(1, 5), st.integers(1, 4), st.integers(1, 4)),
       relu=st.booleans(), seed=st.integers(0, 2**16))
def test_random_residual_and_copies(cfg, shape, relu, seed):
    """conv -> (conv + skip) residual add on channels-last maps, a standalone relu, and outputs
    that need a COPY to be contiguous (the channels-last conv output itself is a model output)."""
    rng = np.random.default_rng(seed)
    n, c, h, w = shape
    assume(9 * c <= cfg.spad_a_depth)
    nodes = [g.Input("x", (), shape, index=0),
             g.Conv2d("c1", ("x",), shape, module="c1", weight=rng.normal(size=(c, c, 3, 3)), bias=None,
                      padding=(1, 1), relu=True),
             g.Conv2d("c2", ("c1",), shape, module="c2", weight=rng.normal(size=(c, c, 3, 3)),
                      bias=rng.normal(size=c), padding=(1, 1)),
             g.Add("add", ("c1", "c2"), shape, relu=relu),
             g.ReLU("r", ("c2",), shape),
             g.Transpose("tr", ("add",), (n, h, w, c), perm=(0, 2, 3, 1))]
    qm = _quantize(g.Graph(nodes, ["x"], ["tr", "r", "c1"]), rng)
    cp, _ = check(qm, cfg, _inputs(qm, rng))
    if c > 1 and h * w > 1:   # "r" and "c1" are channels-last, "tr" is contiguous as it is
        assert [s["op"] for s in cp.stats].count("copy") == 2


@st.composite
def _view_chain(draw):
    """A random chain of transposes and reshapes (views where strides allow, COPY or a folded
    weight order where not), ending in a Linear or directly in the model output."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=2, max_size=4)))
    ops = []
    cur = shape
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            perm = tuple(draw(st.permutations(range(len(cur)))))
            ops.append(("t", perm))
            cur = tuple(cur[p] for p in perm)
        else:
            total = int(np.prod(cur))
            divs = [d for d in range(1, total + 1) if total % d == 0]
            first = draw(st.sampled_from(divs))
            new = (first, total // first) if draw(st.booleans()) else (total,)
            ops.append(("r", new))
            cur = new
    return shape, ops, draw(st.integers(0, 5))


@SETTINGS
@given(cfg=CONFIGS, chain=_view_chain(), seed=st.integers(0, 2**16))
def test_random_view_chains(cfg, chain, seed):
    shape, ops, fc = chain
    rng = np.random.default_rng(seed)
    nodes = [g.Input("x", (), shape, index=0)]
    cur, last = shape, "x"
    for i, (kind, arg) in enumerate(ops):
        if kind == "t":
            cur = tuple(cur[p] for p in arg)
            nodes.append(g.Transpose(f"v{i}", (last,), cur, perm=arg))
        else:
            cur = arg
            nodes.append(g.Reshape(f"v{i}", (last,), cur))
        last = f"v{i}"
    if fc and cur[-1] <= cfg.spad_a_depth:
        nodes.append(g.Linear("fc", (last,), cur[:-1] + (fc,), module="fc",
                              weight=rng.normal(size=(fc, cur[-1])), bias=rng.normal(size=fc)))
        last = "fc"
    qm = _quantize(g.Graph(nodes, ["x"], [last]), rng)
    check(qm, cfg, _inputs(qm, rng))
