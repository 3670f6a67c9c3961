"""compile_program: refusals name the layer's module path, the JSON program equals the binary
one in the image, design.json's program, the host's view of the image (placements, layers)."""

import json

import numpy as np
import pytest

from pycde_accel.backend import cmdexec, compile_program, program as P
from pycde_accel.errors import UserError
from pycde_accel.frontend import graph as g, quantize, reference

from .conftest import cfg, example_inputs_q, frontend_result


def test_json_program_equals_binary_in_image():
    fe = frontend_result("resblock")
    cp = compile_program(fe, cfg(2, 4, 32))
    d = json.loads(json.dumps(cp.to_json()))
    from_json = P.Program.from_json(d)
    names = [(x.name, x.module) for x in cp.program.layers]
    assert P.Program.decode(cp.image, names) == from_json == cp.program
    assert [x.module for x in from_json.layers] == ["stem.0", "conv1", "conv2", "", "pool", "fc"]
    assert d["totals"]["tiles"] == sum(s.get("tiles", 0) for s in d["stats"])
    assert [e["cmd_count"] for e in d["layer_commands"]] == [s["commands"] for s in d["stats"]]
    assert d["outputs"] and d["output_placements"][0]["shape"] == [1, 10]


def test_host_flow_through_placements():
    """What the host runtime does: write the packed inputs into the image, run each layer's
    command range, unpack the outputs."""
    fe = frontend_result("mlp")
    cp = compile_program(fe, cfg(8, 8, 64))
    xq = example_inputs_q(fe)
    img = bytearray(cp.image)
    for p, x in zip(cp.input_placements, xq):
        img[p.addr:p.addr + p.size] = p.pack_input(x)
    m = cmdexec.Machine(img, cp.config)
    for e in cp.layers:
        m.run_layer(e["cmd_addr"], e["cmd_count"], e["index"])
    got = [p.unpack_output(img[p.addr:p.addr + p.size]) for p in cp.output_placements]
    assert all(np.array_equal(a, b) for a, b in zip(got, reference.run(fe.quantized, xq).outputs))
    assert [e["op"] for e in cp.layers] == ["gemm"] * 3 and cp.layers[0]["macs"] == 784 * 128


def _too_long_linear():
    rng = np.random.default_rng(0)
    x = g.Input("x", (), (1, 300), index=0)
    fc = g.Linear("fc", ("x",), (1, 4), module="head.proj", source="model.py:7",
                  weight=rng.normal(size=(4, 300)), bias=None)
    return quantize.quantize_graph(g.Graph([x, fc], ["x"], ["fc"]), [[rng.normal(size=(1, 300))]])


def test_unmappable_layer_names_its_module():
    with pytest.raises(UserError) as e:
        compile_program(_too_long_linear(), cfg(4, 8, max_k=256))
    msg = str(e.value)
    assert "\n" not in msg and "module head.proj" in msg and "model.py:7" in msg and "K=300" in msg


@pytest.mark.slow
def test_gen_writes_program_and_image(tmp_path):
    """``gen`` puts the program in design.json and the image in dram.bin; running the commands
    of the image gives the reference's output."""
    from pycde_accel import cli
    out = tmp_path / "out"
    assert cli.main(["gen", "resblock", "--out", str(out), "--array", "8x8"]) == 0
    design = json.loads((out / "design.json").read_text())
    prog = design["program"]
    image = bytearray((out / "dram.bin").read_bytes())
    assert len(image) == prog["image"]["bytes"]
    assert P.Program.decode(image) == P.Program.from_json(prog)
    fe = frontend_result("resblock")
    cp = compile_program(fe, cfg(8, 8))
    assert bytes(image) == cp.image
    xq = example_inputs_q(fe)
    outs, _ = cmdexec.run(cp, xq)
    assert all(np.array_equal(a, b) for a, b in zip(outs, reference.run(fe.quantized, xq).outputs))
