"""compile_program: refusals name the layer's module path, the JSON program equals the binary
one in the image, the flatten of a channels-last map folds into the Linear, design.json."""

import json

import numpy as np
import pytest

from pycde_accel.backend import compile_program, program as P
from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError
from pycde_accel.frontend import graph as g, quantize

from .conftest import frontend_result


def test_json_program_equals_binary_in_image():
    fe = frontend_result("resblock")
    cp = compile_program(fe, AccelConfig(rows=2, cols=3))
    d = json.loads(json.dumps(cp.to_json()))
    from_json = P.Program.from_json(d)
    names = [(x.name, x.module) for x in cp.program.layers]
    assert P.Program.decode(cp.image, names) == from_json == cp.program
    assert [x.module for x in from_json.layers] == ["stem.0", "conv1", "conv2", "", "pool", "fc"]
    assert d["totals"]["tiles"] == sum(s.get("tiles", 0) for s in d["stats"])
    assert d["outputs"] and all(s["kind"] == "output" for s in d["symbols"] if s["name"] in d["outputs"])


def test_lenet_flatten_folds_into_linear_weight():
    cp = compile_program(frontend_result("lenet5"), AccelConfig())
    ops = [s["op"] for s in cp.stats]
    assert "copy" not in ops and ops.count("gemm") == 5
    fc = next(x for x in cp.program.layers if x.name == "linear")
    assert fc.a_stride_k == 1          # reads the channels-last pooled map contiguously


def _too_long_linear():
    rng = np.random.default_rng(0)
    x = g.Input("x", (), (1, 300), index=0)
    fc = g.Linear("fc", ("x",), (1, 4), module="head.proj", source="model.py:7",
                  weight=rng.normal(size=(4, 300)), bias=None)
    return quantize.quantize_graph(g.Graph([x, fc], ["x"], ["fc"]), [[rng.normal(size=(1, 300))]])


def test_unmappable_layer_names_its_module():
    with pytest.raises(UserError) as e:
        compile_program(_too_long_linear(), AccelConfig(spad_a_depth=256))
    msg = str(e.value)
    assert "\n" not in msg and "module head.proj" in msg and "model.py:7" in msg and "K=300" in msg


def test_copy_with_too_many_dims_is_refused():
    rng = np.random.default_rng(0)
    shape = (2, 3, 2, 3, 2)
    nodes = [g.Input("x", (), shape, index=0),
             g.Transpose("t", ("x",), (2, 2, 2, 3, 3), module="mix", perm=(4, 2, 0, 3, 1)),
             g.Reshape("r", ("t",), (72,), module="mix")]
    qm = quantize.quantize_graph(g.Graph(nodes, ["x"], ["r"]), [[rng.normal(size=shape)]])
    with pytest.raises(UserError, match="module mix.*more than 4 strided"):
        compile_program(qm, AccelConfig())


@pytest.mark.slow
def test_gen_writes_program_and_image(tmp_path):
    """``gen`` puts the program in design.json and the image in dram.bin; executing the image
    gives the reference's output."""
    from pycde_accel import cli
    from pycde_accel.backend import executor
    from pycde_accel.backend.layout import Symbol, read_tensor, write_tensor
    from pycde_accel.frontend import reference
    out = tmp_path / "out"
    assert cli.main(["gen", "resblock", "--out", str(out), "--array", "2x2"]) == 0
    design = json.loads((out / "design.json").read_text())
    prog = design["program"]
    image = bytearray((out / "dram.bin").read_bytes())
    assert len(image) == prog["image"]["bytes"]
    assert P.Program.decode(image) == P.Program.from_json(prog)
    syms = {s["name"]: Symbol(s["name"], s["kind"], s["addr"], s["size"], s.get("node", ""),
                              tuple(s.get("shape", ())), tuple(s.get("strides", ()))) for s in prog["symbols"]}
    fe = frontend_result("resblock")
    xq = reference.quantize_inputs(fe.quantized, [t.double().numpy() for t in fe.model.example_inputs])
    for name, x in zip(prog["inputs"], xq):
        write_tensor(image, syms[name], x)
    ex = executor.execute(image)
    got = [read_tensor(ex.image, syms[o]) for o in prog["outputs"]]
    assert all(np.array_equal(a, b) for a, b in zip(got, reference.run(fe.quantized, xq).outputs))
