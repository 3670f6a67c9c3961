"""The command golden model runs the compiled command lists bit-exactly like the frontend's
integer reference (built-ins, examples, random layers with M/N/K not multiples of the array, at
several array shapes, AXI widths and scratchpad sizes), with random bytes in every activation
buffer, padding and scratchpad bank beforehand; its counters equal the compiler's; GEMM loads run
one panel ahead of the EXECs; programs that break a hardware rule are caught."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from gemm_bench import gemm_program
from pycde_accel.backend import cmdexec, compile_program, executor, program as P
from pycde_accel.backend import commands as C
from pycde_accel.backend.encoding import Fence
from pycde_accel.errors import ConfigError, UserError
from pycde_accel.frontend import graph as g
from pycde_accel.frontend import quantize, reference

from .conftest import ARRAYS, EXAMPLES, cfg, example_inputs_q, frontend_result


def check_prefetch(cmds):
    """Every panel (A or B bank) after the first is loaded and committed before the EXEC that
    releases the previous one: the load engine can always run one bank ahead of the core."""
    for dst, rel in ((C.DST_A, C.REL_A), (C.DST_B, C.REL_B)):
        commits = [i for i, c in enumerate(cmds) if isinstance(c, C.Load) and c.dst == dst and c.flags & C.COMMIT]
        rels = [i for i, c in enumerate(cmds) if isinstance(c, C.Exec) and c.flags & rel]
        assert len(commits) == len(rels)
        assert all(commits[p + 1] < rels[p] for p in range(len(rels) - 1))


def check(qm, config, inputs_q, seed=0):
    cp = compile_program(qm, config)
    ref = reference.run(qm, inputs_q).outputs
    outs, ex = cmdexec.run(cp, inputs_q, seed=seed)
    for o, r, name in zip(outs, ref, qm.graph.outputs):
        assert o.shape == r.shape and np.array_equal(o, r), f"output {name} differs from the reference"
    outs2, _ = executor.run(cp, inputs_q)            # the descriptor semantics agree too
    assert all(np.array_equal(o, r) for o, r in zip(outs2, ref))
    ab = config.axi_data_width // 8
    assert len(ex.layers) == len(cp.layers) == len(cp.stats)
    for e, s, c, cmds in zip(cp.layers, cp.stats, ex.layers, cp.commands):
        assert (c.commands, c.tiles, c.exec_cycles) == (e["cmd_count"], e["tiles"], e["exec_cycles"])
        assert c.dram_bytes_read == e["bytes_read"] == s["dram_bytes_read"] == ab * c.dram_beats_read
        assert c.dram_bytes_written == e["bytes_written"] == ab * c.dram_beats_written
        assert e["cmd_addr"] % 64 == 0 or e["cmd_addr"] % C.CMD_BYTES == 0
        if e["op"] == "gemm":
            check_prefetch(cmds)
            assert c.array_macs == c.tiles * config.rows * config.cols * s["K"]
    assert cp.symbols["commands"].addr % 64 == 0
    return cp, ex


@pytest.mark.parametrize("array", ARRAYS[:3], ids=lambda a: f"{a[0]}x{a[1]}-axi{a[2]}")
@pytest.mark.parametrize("model", ["mlp", "lenet5", "resblock"] + [str(p) for p in EXAMPLES],
                         ids=lambda m: m.rsplit("/", 1)[-1])
def test_models_bit_exact(model, array):
    fe = frontend_result(model)
    cp, _ = check(fe.quantized, cfg(*array), example_inputs_q(fe))
    gemms = [s for s in cp.stats if s["op"] == "gemm"]
    assert sum(s["tiles"] for s in gemms) == sum(
        -(-s["M"] // array[0]) * -(-s["N"] // array[1]) * s["batch"] for s in gemms)


def test_attention_transposes_v_on_the_array():
    fe = frontend_result(next(str(p) for p in EXAMPLES if p.stem == "tiny_attention"))
    cp = compile_program(fe.quantized, cfg(4, 4, 32))
    kinds = [s["kind"] for s in cp.stats]
    # q @ k.T reads k's rows as B^T; scores @ v needs v^T rows: one transpose layer before it
    assert kinds.count("transpose") == 1 and kinds[kinds.index("transpose") + 1] == "matmul"


def test_garbage_seed_does_not_matter():
    fe = frontend_result("lenet5")
    xq = example_inputs_q(fe)
    for seed in (1, 2):
        check(fe.quantized, cfg(4, 8, 64), xq, seed=seed)


def test_lenet_flatten_folds_into_linear_weight():
    cp = compile_program(frontend_result("lenet5").quantized, cfg(8, 8))
    fc = next(x for x in cp.program.layers if x.name == "linear")
    assert fc.K == 5 * 5 * 16 and fc.a_stride_k == 1    # channels-last pooled map, read as one run
    conv = cp.program.layers[0]
    # the 1-channel model input is written im2col'd by the host: K = 5*5*1, not 5*5*8 (pitch)
    assert not conv.has(P.IM2COL) and conv.K == 5 * 5 and conv.a_stride_m == 32


# ---- random layers --------------------------------------------------------------------------

def _quantize(graph, rng, batches=3):
    shapes = [graph.node(i).shape for i in graph.inputs]
    return quantize.quantize_graph(graph, [[rng.normal(size=s) for s in shapes] for _ in range(batches)])


def _inputs(qm, rng):
    return [rng.integers(-128, 128, size=qm.graph.node(i).shape) for i in qm.graph.inputs]


CONFIGS = st.builds(lambda a, d, c: cfg(*a, spad_a_depth=d, spad_b_depth=d, spad_c_depth=max(c, 2 * a[1])),
                    st.sampled_from(ARRAYS + [(2, 4, 32), (5, 16, 64)]), st.sampled_from([64, 128, 1024]),
                    st.sampled_from([16, 32, 256]))
SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(config=CONFIGS, m=st.integers(1, 19), k=st.integers(1, 60), n=st.integers(1, 40), lead=st.integers(0, 3),
       relu=st.booleans(), bias=st.booleans(), seed=st.integers(0, 2**16))
def test_random_linear(config, m, k, n, lead, relu, bias, seed):
    rng = np.random.default_rng(seed)
    shape = (lead, m, k) if lead else (m, k)
    x = g.Input("x", (), shape, index=0)
    fc = g.Linear("fc", ("x",), shape[:-1] + (n,), module="fc", weight=rng.normal(size=(n, k)),
                  bias=rng.normal(size=n) if bias else None, relu=relu)
    qm = _quantize(g.Graph([x, fc], ["x"], ["fc"]), rng)
    check(qm, config, _inputs(qm, rng))


@SETTINGS
@given(config=CONFIGS, n=st.integers(1, 2), c=st.integers(1, 5), hw=st.tuples(st.integers(3, 9), st.integers(3, 9)),
       oc=st.integers(1, 20), kern=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       stride=st.tuples(st.integers(1, 2), st.integers(1, 2)), pad=st.tuples(st.integers(0, 1), st.integers(0, 1)),
       relu=st.booleans(), pool=st.sampled_from([None, (2, 2, 0), (2, 1, 1), (3, 2, 1)]), fc=st.integers(0, 5),
       seed=st.integers(0, 2**16))
def test_random_conv(config, n, c, hw, oc, kern, stride, pad, relu, pool, fc, seed):
    """conv (im2col loads, ZERO padding taps) [+ maxpool, with padding] [+ flatten + linear]."""
    rng = np.random.default_rng(seed)
    h, w = hw
    oh, ow = (h + 2 * pad[0] - kern[0]) // stride[0] + 1, (w + 2 * pad[1] - kern[1]) // stride[1] + 1
    pin = -(-c // config.cols) * config.cols
    assume(oh >= 1 and ow >= 1)     # any K: a K longer than a bank is split into chunks
    assume(-(-oc // config.cols) * config.cols // (config.axi_data_width // 8) <= config.spad_c_depth)
    nodes = [g.Input("x", (), (n, c, h, w), index=0),
             g.Conv2d("conv", ("x",), (n, oc, oh, ow), module="features.0", weight=rng.normal(size=(oc, c) + kern),
                      bias=rng.normal(size=oc), stride=stride, padding=pad, relu=relu)]
    last, shape = "conv", (n, oc, oh, ow)
    if pool:
        k_, s_, p_ = pool
        ph, pw = (oh + 2 * p_ - k_) // s_ + 1, (ow + 2 * p_ - k_) // s_ + 1
        if ph >= 1 and pw >= 1:
            shape = (n, oc, ph, pw)
            nodes.append(g.MaxPool2d("pool", (last,), shape, module="features.1", kernel=(k_, k_),
                                     stride=(s_, s_), padding=(p_, p_)))
            last = "pool"
    feat = int(np.prod(shape[1:]))
    if fc:
        nodes.append(g.Reshape("flat", (last,), (n, feat)))
        nodes.append(g.Linear("fc", ("flat",), (n, fc), module="classifier", weight=rng.normal(size=(fc, feat)),
                              bias=rng.normal(size=fc)))
        last = "fc"
    qm = _quantize(g.Graph(nodes, ["x"], [last]), rng)
    check(qm, config, _inputs(qm, rng))


@SETTINGS
@given(config=CONFIGS, b=st.integers(1, 3), m=st.integers(1, 11), k=st.integers(1, 13), n=st.integers(1, 11),
       trans=st.booleans(), relu=st.booleans(), seed=st.integers(0, 2**16))
def test_random_matmul_of_activations(config, b, m, k, n, trans, relu, seed):
    """a @ b.T (B^T rows read directly) or a @ b (b transposed on the array first)."""
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
    cp, _ = check(qm, config, _inputs(qm, rng))
    assert [s["kind"] for s in cp.stats].count("transpose") == (0 if trans or k == n == 1 else 1)


@SETTINGS
@given(config=CONFIGS, shape=st.tuples(st.integers(1, 2), st.integers(1, 20), st.integers(1, 4), st.integers(1, 4)),
       relu=st.booleans(), seed=st.integers(0, 2**16))
def test_random_residual_and_relu(config, shape, relu, seed):
    """conv -> (conv + skip) residual add on padded channels-last maps (VEC ADD in chunks of
    spad_c_depth beats), a standalone relu, and a transposed (NHWC) model output."""
    rng = np.random.default_rng(seed)
    n, c, h, w = shape
    nodes = [g.Input("x", (), shape, index=0),
             g.Conv2d("c1", ("x",), shape, module="c1", weight=rng.normal(size=(c, c, 3, 3)), bias=None,
                      padding=(1, 1), relu=True),
             g.Conv2d("c2", ("c1",), shape, module="c2", weight=rng.normal(size=(c, c, 3, 3)),
                      bias=rng.normal(size=c), padding=(1, 1)),
             g.Add("add", ("c1", "c2"), shape, relu=relu),
             g.ReLU("r", ("c2",), shape),
             g.Transpose("tr", ("add",), (n, h, w, c), perm=(0, 2, 3, 1))]
    qm = _quantize(g.Graph(nodes, ["x"], ["tr", "r", "c1"]), rng)
    check(qm, config, _inputs(qm, rng))


def test_param_windows_and_blocks():
    """More output channels than the parameter memory holds (records reloaded per window into
    alternating halves of P) and panels that need several stationary blocks, both loop orders."""
    rng = np.random.default_rng(0)
    orders = set()
    for m, n in ((40, 70), (3, 70), (70, 40)):
        x = g.Input("x", (), (m, 30), index=0)
        fc = g.Linear("fc", ("x",), (m, n), weight=rng.normal(size=(n, 30)), bias=rng.normal(size=n))
        qm = _quantize(g.Graph([x, fc], ["x"], ["fc"]), rng)
        cp, _ = check(qm, cfg(4, 8, 64, spad_a_depth=64, spad_b_depth=64, spad_c_depth=32), _inputs(qm, rng))
        loads_p = [k for k in cp.commands[0] if isinstance(k, C.Load) and k.dst == C.DST_P]
        d = cp.program.layers[0]
        assert len(loads_p) > 1 and d.block == min(2, d.m_tiles if d.order == P.A_STATIONARY else d.n_tiles)
        assert [k.index for k in loads_p] == [0, 16] * (len(loads_p) // 2) + [0] * (len(loads_p) % 2)
        orders.add(d.order)
    assert orders == {P.A_STATIONARY, P.B_STATIONARY}


# ---- the bench layer ------------------------------------------------------------------------------

def test_gemm_program_256_on_8x8():
    b = gemm_program(cfg(8, 8, 64), 256, 256, 256, seed=1)
    f = b.figures()
    assert f["order"] == "A-stationary" and f["block"] == 1024 // 256     # spad_a_depth // K panels
    assert f["compute_cycles"] == f["tiles"] * 256 == 32 * 32 * 256
    # A read once, B once per A block (8 blocks), records once; C written once
    assert b.bytes_read == 256 * 256 + 8 * 256 * 256 + 256 * 16 and b.bytes_written == 256 * 256
    assert f["bandwidth_cycles"] == max(b.bytes_read, b.bytes_written) // 8 < f["compute_cycles"]
    outs, ex = cmdexec.run(b.compiled, [b.a])
    assert np.array_equal(outs[0], b.expected)
    assert ex.layers[0].exec_cycles == f["compute_cycles"]
    check_prefetch(b.compiled.commands[0])


# ---- hardware rules ---------------------------------------------------------------------------------

def _machine_run(config, cmds, image_bytes=4096):
    img = bytearray(image_bytes)
    data = C.encode_list(cmds)
    img[:len(data)] = data
    return cmdexec.Machine(img, config).run_layer(0, len(cmds))


def test_rules_are_enforced():
    k = cfg(4, 8, 64)
    ok = [C.Load(C.DST_P, 1024, 16, 1, 0, 0, 0, 0), C.Load(C.DST_A, 2048, 2, 4, 16, 0, 0, C.LANES | C.COMMIT),
          C.Load(C.DST_B, 2048, 2, 8, 16, 0, 0, C.LANES | C.COMMIT), C.Exec(16, 0, 0, C.REL_A | C.REL_B),
          C.Store(3072, 4, 8, 0, 0)]
    c = _machine_run(k, ok)
    assert (c.tiles, c.dram_beats_read, c.dram_beats_written) == (1, 16 + 8 + 16, 4)
    bad = {
        "no committed B": [ok[0], ok[1], dataclasses.replace(ok[2], flags=C.LANES)] + ok[3:],
        "not released": ok[:3] + [C.Exec(16, 0, 0, C.REL_A)] + ok[4:],
        "outside the image": ok[:1] + [dataclasses.replace(ok[1], addr=8192)] + ok[2:],
        "not a multiple of AB": ok[:1] + [dataclasses.replace(ok[1], stride=12)] + ok[2:],
        "lanes": ok[:1] + [dataclasses.replace(ok[1], rows=5)] + ok[2:],
        "K=": ok[:3] + [C.Exec(2000, 0, 0, 3)] + ok[4:],
        "no C tile": ok[:3] + [ok[4], ok[3]],
        "S beats": [C.Load(C.DST_X, 0, 2, 1, 0, 0, 0, 0), C.Load(C.DST_S, 0, 1, 1, 0, 0, 0, 0), C.Vec(2, 0, 3072)],
        "none is free": ok[:1] + [dataclasses.replace(ok[1], flags=C.LANES | C.COMMIT)] * 3,
        # records loaded after both operand commits: the STORE may run before they arrive
        "in flight": [ok[1], ok[2], ok[0], ok[3], ok[4]],
        "LOAD X issued after": [C.Load(C.DST_S, 0, 2, 1, 0, 0, 0, 0), C.Load(C.DST_X, 0, 2, 1, 0, 0, 0, 0),
                                C.Vec(2, 0, 3072)],
    }
    for msg, cmds in bad.items():
        with pytest.raises(cmdexec.CommandError, match=msg):
            _machine_run(k, cmds)


# ---- refusals ---------------------------------------------------------------------------------------

def test_config_needs_cols_multiple_of_the_beat():
    with pytest.raises(ConfigError, match=r"cols=4 .*cols % \(axi_data_width/8\) == 0"):
        compile_program(frontend_result("mlp").quantized, cfg(4, 4, 64))


def test_too_small_parameter_memory_is_refused():
    rng = np.random.default_rng(0)
    x = g.Input("x", (), (3, 8), index=0)
    fc = g.Linear("fc", ("x",), (3, 40), module="head", weight=rng.normal(size=(40, 8)))
    qm = _quantize(g.Graph([x, fc], ["x"], ["fc"]), rng)
    with pytest.raises(UserError, match="layer fc .*module head.*48 post-op records exceed config spad_c_depth=16"):
        compile_program(qm, cfg(4, 16, 64, spad_c_depth=16))
    compile_program(qm, cfg(4, 16, 64, spad_c_depth=32))     # two halves of 16 records: reloads


def test_copy_is_refused():
    with pytest.raises(UserError, match="layer 0 t \\(copy\\) in module m: a strided COPY cannot"):
        C.compile_layer(P.Copy(0, name="t", module="m"), cfg(4, 4, 32))


def test_layout_mismatch_and_non_row_operands_are_refused():
    rng = np.random.default_rng(0)
    nodes = [g.Input("x", (), (1, 3, 4, 4), index=0), g.Input("y", (), (1, 3, 4, 4), index=1),
             g.Transpose("t", ("y",), (1, 3, 4, 4), perm=(0, 1, 3, 2)),
             g.Add("add", ("x", "t"), (1, 3, 4, 4), module="blk")]
    qm = _quantize(g.Graph(nodes, ["x", "y"], ["add"]), rng)
    with pytest.raises(UserError, match="layer add .* module blk: the operands are laid out differently"):
        compile_program(qm, cfg(4, 4, 32))
    # a matmul operand that is no strided view of a channels-last map: copied into padded rows
    # first (one GATHER layer), then bit-exact
    nodes = [g.Input("x", (), (1, 3, 4, 4), index=0), g.Reshape("r", ("x",), (6, 8)),
             g.Input("w", (), (8, 2), index=1), g.MatMul("mm", ("r", "w"), (6, 2), module="head")]
    qm = _quantize(g.Graph(nodes, ["x", "w"], ["mm"]), rng)
    cp = compile_program(qm, cfg(4, 4, 32))
    assert [s["op"] for s in cp.stats][0] == "gather"
    xs = [rng.integers(-128, 128, size=(1, 3, 4, 4)), rng.integers(-128, 128, size=(8, 2))]
    want = reference.run(qm, xs).outputs[0]
    np.testing.assert_array_equal(cmdexec.run(cp, xs)[0][0], want)


# ---- the whole model per start: FENCEs between layers ---------------------------------------------

@pytest.mark.parametrize("model", ["lenet5", "resblock"])
def test_one_start_with_fences_equals_per_layer_starts(model):
    """The back end lays the layers' commands back to back with a FENCE between consecutive
    layers; run as one start (FENCEs executed as barriers) the model gives the same outputs,
    bit-exact with the integer reference, and the same per-layer work as one start per layer."""
    fe = frontend_result(model)
    config = cfg(8, 8, 64)
    cp = compile_program(fe, config)
    xq = example_inputs_q(fe)
    want = reference.run(fe.quantized, xq).outputs
    (group,) = cp.run_groups()
    assert group["layers"] == list(range(len(cp.layers)))
    assert group["cmd_count"] == sum(e["cmd_count"] for e in cp.layers) + len(cp.layers) - 1
    fences = C.decode_bytes(cp.image[group["cmd_addr"]:group["cmd_addr"]
                                     + C.CMD_BYTES * group["cmd_count"]])
    assert [k.KIND for k in fences].count("fence") == len(cp.layers) - 1
    assert cp.run_commands(group) == fences
    per_layer = cp.run_groups(per_layer=True)
    assert [(g["cmd_addr"], g["cmd_count"]) for g in per_layer] == \
        [(e["cmd_addr"], e["cmd_count"]) for e in cp.layers]
    outs_one, ex_one = cmdexec.run(cp, xq)
    outs_per, ex_per = cmdexec.run(cp, xq, per_layer=True)
    for a, b, w in zip(outs_one, outs_per, want):
        np.testing.assert_array_equal(a, w)
        np.testing.assert_array_equal(b, w)
    for a, b in zip(ex_one.layers, ex_per.layers):
        assert a.commands == b.commands
        assert (a.tiles, a.dram_bytes_read, a.dram_bytes_written) == \
            (b.tiles, b.dram_bytes_read, b.dram_bytes_written)


def test_fence_rules():
    """A FENCE is a barrier: what is in flight before it must be finished there (no C tile,
    no S beats, every bank released); a layer's own commands hold none; a run has as many
    FENCEs as layer boundaries."""
    k = cfg(4, 8, 64)
    ok = [C.Load(C.DST_P, 1024, 16, 1, 0, 0, 0, 0), C.Load(C.DST_A, 2048, 2, 4, 16, 0, 0, C.LANES | C.COMMIT),
          C.Load(C.DST_B, 2048, 2, 8, 16, 0, 0, C.LANES | C.COMMIT), C.Exec(16, 0, 0, C.REL_A | C.REL_B),
          C.Store(3072, 4, 8, 0, 0)]
    fence = Fence()

    def run(cmds, layers):
        img = bytearray(8192)
        data = C.encode_list(cmds)
        img[:len(data)] = data
        return cmdexec.Machine(img, k).run(0, len(cmds), list(range(layers)))

    cs = run(ok + [fence] + ok, 2)
    assert [c.commands for c in cs] == [5, 5] and [c.tiles for c in cs] == [1, 1]
    with pytest.raises(cmdexec.CommandError, match="C tiles"):
        run(ok[:4] + [fence] + ok[4:], 2)              # the tile's STORE is after the fence
    with pytest.raises(cmdexec.CommandError, match="FENCEs where 1"):
        run(ok + ok, 2)
    with pytest.raises(cmdexec.CommandError, match="FENCE number 1"):
        run(ok + [fence] + ok, 1)
    with pytest.raises(cmdexec.CommandError, match="a FENCE in a layer's own"):
        _machine_run(k, ok + [fence] + ok)


def test_more_layers_than_stamps_take_several_starts(monkeypatch):
    """A model of more than STAMP_DEPTH + 1 layers runs in as few starts as the stamp memory
    allows, each a contiguous range of whole layers with a FENCE between them."""
    from pycde_accel import contract
    monkeypatch.setattr(contract, "STAMP_DEPTH", 2)
    fe = frontend_result("lenet5")
    cp = compile_program(fe, cfg(8, 8, 64))
    groups = cp.run_groups()
    assert [g["layers"] for g in groups] == [[0, 1, 2], [3, 4, 5], [6]]
    for g in groups:
        ls = [cp.layers[i] for i in g["layers"]]
        assert g["cmd_addr"] == ls[0]["cmd_addr"]
        assert g["cmd_count"] == sum(e["cmd_count"] for e in ls) + len(ls) - 1
    outs, _ = cmdexec.run(cp, example_inputs_q(fe))
    for o, w in zip(outs, reference.run(fe.quantized, example_inputs_q(fe)).outputs):
        np.testing.assert_array_equal(o, w)
