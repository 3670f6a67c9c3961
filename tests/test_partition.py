"""partition: layer x device placement from costs, host-only ops, the CLI's output folder."""

import dataclasses
import itertools
import json
import math
from pathlib import Path

import pytest

from pycde_accel import cli, partition
from pycde_accel.config import AccelConfig

HOST_OP = str(Path(__file__).resolve().parents[1] / "examples" / "partition" / "host_op.py")
CFG = AccelConfig()


@pytest.fixture(scope="module")
def host_op():
    return partition.analyze(HOST_OP, CFG)


@pytest.fixture(scope="module")
def resblock():
    return partition.analyze("resblock", CFG)


def _brute(an, link):
    """The least plan_cost over every assignment that keeps the pinned units on the host."""
    units, tensors = partition._problem(an, link)
    names = list(units)
    best = math.inf
    for bits in itertools.product((partition.HOST, partition.ACCEL), repeat=len(names)):
        a = dict(zip(names, bits))
        if any(units[u][d] == math.inf for u, d in a.items()):
            continue
        best = min(best, partition.plan_cost(a, units, tensors)[0])
    return best


def test_host_only_ops_are_captured_in_order(host_op):
    ops = [(l.name, l.op, l.host_only) for l in host_op.layers]
    assert ops[0][1] == "input"
    host_only = [n for n, _, h in ops if h]
    assert host_only == ["cumsum", "log_softmax"]
    assert [l.reason for l in host_op.layers if l.host_only] == ["aten.cumsum.default",
                                                                 "aten.log_softmax.int"]
    # every supported layer got perf-model cycles; the host-only ones none
    assert all(l.accel_cycles is not None for l in host_op.layers
               if not l.host_only and l.op != "input")
    assert sum(l.accel_cycles for l in host_op.layers if l.accel_cycles) > 100
    assert partition.is_chain(host_op)


@pytest.mark.parametrize("host", ["gpu:t4", "gpu:orin-nano"])
@pytest.mark.parametrize("link", ["pcie3x4", "axi"])
def test_placement_is_exact(host_op, resblock, host, link):
    """The chain's shortest path and the DAG's min cut both find the brute-force optimum."""
    for an in (host_op, resblock):
        partition.roofline_times(an, partition.host_spec(host))
        for lay in an.layers:
            if lay.accel_cycles is not None and not lay.host_only:
                lay.accel_s = lay.accel_cycles / (CFG.clock_mhz * 1e6)
        ln = partition.link_spec(link, CFG)
        assign, method = partition.place(an, ln)
        units, tensors = partition._problem(an, ln)
        got = partition.plan_cost(assign, units, tensors)[0]
        assert got == pytest.approx(_brute(an, ln), rel=1e-9)
        assert all(assign[l.unit] == "host" for l in an.layers if l.host_only)
    assert "chain" in partition.place(host_op, partition.link_spec(link, CFG))[1]
    assert "cut" in partition.place(resblock, partition.link_spec(link, CFG))[1]


def test_transfer_costs_move_the_plan(resblock):
    """A slow link keeps everything on the host; a free, fast accelerator takes all it can."""
    an = resblock
    partition.roofline_times(an, partition.host_spec("gpu:orin-nano"))
    for lay in an.layers:
        if lay.accel_cycles is not None:
            lay.accel_s = lay.accel_cycles / 1e12          # an absurdly fast accelerator
    fast = {"bandwidth_gbs": 1e9, "latency_us": 0.0}
    slow = {"bandwidth_gbs": 1e-6, "latency_us": 1e9}
    a_fast, _ = partition.place(an, fast)
    a_slow, _ = partition.place(an, slow)
    assert {a_fast[l.unit] for l in an.layers if l.op not in ("input", "reshape")} == {"accel"}
    assert set(a_slow.values()) == {"host"}


def test_spec_json_and_bad_host(tmp_path):
    spec = {"name": "my npu", "peak_tops": {"fp16": 4.0}, "bandwidth_gbs": 50,
            "launch_us": 2, "precision": "fp16"}
    (tmp_path / "npu.json").write_text(json.dumps(spec))
    assert partition.host_spec(str(tmp_path / "npu.json"))["name"] == "my npu"
    spec["precision"] = "int8"
    (tmp_path / "bad.json").write_text(json.dumps(spec))
    with pytest.raises(partition.UserError, match="no positive figure for its precision 'int8'"):
        partition.host_spec(str(tmp_path / "bad.json"))
    with pytest.raises(partition.UserError, match="unknown GPU; known: gpu:t4"):
        partition.host_spec("gpu:h900")


def test_partition_cli_writes_the_plan(tmp_path, capsys):
    out = tmp_path / "part"
    assert cli.main(["partition", HOST_OP, "--host", "cpu", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "placement: shortest path" in printed and "wrote" in printed
    plan = json.loads((out / "partition.json").read_text())
    assert (out / ".pycde-accel").is_file() and (out / "partition.png").stat().st_size > 1000
    assert "partition.png" in (out / "partition.md").read_text()
    rows = {r["name"]: r for r in plan["layers"]}
    assert rows["cumsum"]["device"] == "host" and rows["cumsum"]["host_only"]
    assert rows["log_softmax"]["device"] == "host"
    for r in plan["layers"]:
        assert r["device"] in ("host", "accel")
        assert r["host_s"] >= 0
        if r["op"] not in ("input",) and not r["host_only"]:
            assert r["accel_s"] == pytest.approx(r["accel_cycles"] / (plan["fmax_mhz"] * 1e6))
    assert plan["fmax_source"].startswith("estimate")
    assert plan["totals"]["all_accel"] is None            # two ops only the host has
    t = plan["totals"]["plan"]
    assert t["latency_s"] <= plan["totals"]["all_host"]["latency_s"] + 1e-12
    crossings = sum(len(r["transfers"]) for r in plan["layers"])
    assert (crossings > 0) == (t["transfer_s"] > 0)


def test_partition_cli_errors(tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    assert cli.main(["partition", "mlp", "--host", "gpu:nope", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --host gpu:nope: unknown GPU") and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()
    assert cli.main(["partition", "mlp", "--out", str(tmp_path / "mine")]) == 2
    assert "not an output of pycde-accel" in capsys.readouterr().err
    assert sorted(x.name for x in (tmp_path / "mine").iterdir()) == ["notes.txt"]


def test_gen_refusal_names_partition(tmp_path, capsys):
    assert cli.main(["gen", HOST_OP, "--out", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err
    assert "unsupported op aten.cumsum" in err and "pycde_accel partition MODEL" in err
    assert not (tmp_path / "g").exists()


def _plan_with(an, devices: dict) -> dict:
    return {"model": an.model.spec,
            "layers": [{"name": l.name, "device": devices.get(l.name, "host")}
                       for l in an.layers if l.op != "input"]}


def test_all_host_plan_is_the_float_model(host_op, tmp_path):
    res = partition.run_plan(HOST_OP, CFG, _plan_with(host_op, {}), tmp_path)
    assert res["accel_segments"] == 0 and res["host_segments"] == 1
    assert res["max_abs_error"] < 1e-5 and res["top1_match"]


def test_split_plan_on_the_golden_model(host_op, tmp_path):
    """Accelerator segments between host ops: quantized at their own scales, bit-exact on the
    golden command model, close to float end to end."""
    acc = {l.name: "accel" for l in host_op.layers if not l.host_only and l.op != "input"}
    res = partition.run_plan(HOST_OP, CFG, _plan_with(host_op, acc), tmp_path, golden=True)
    assert [s["device"] for s in res["segments"]] == ["accel", "host", "accel", "host"]
    assert res["bit_exact"] and res["accel_segments"] == 2
    assert all(s["input_scales"] and s["output_scales"] for s in res["segments"]
               if s["device"] == "accel")
    assert 0 < res["max_abs_error"] < 0.1 and res["top1_match"]
    bad = _plan_with(host_op, {**acc, "cumsum": "accel"})
    with pytest.raises(partition.UserError, match="puts cumsum .* on the accelerator"):
        partition.run_plan(HOST_OP, CFG, bad, tmp_path, golden=True)
    with pytest.raises(partition.UserError, match="does not fit the model"):
        partition.run_plan(HOST_OP, CFG, {"model": "x", "layers": []}, tmp_path, golden=True)


@pytest.mark.slow
def test_sim_partition_in_verilator(tmp_path, capsys):
    """partition, then sim --partition: every accelerator segment bit-exact in Verilator."""
    out = tmp_path / "part"
    mcu = {"name": "a slow host", "peak_tops": {"fp32": 1e-4}, "bandwidth_gbs": 0.1,
           "launch_us": 1.0, "precision": "fp32"}
    (tmp_path / "mcu.json").write_text(json.dumps(mcu))
    assert cli.main(["partition", HOST_OP, "--host", str(tmp_path / "mcu.json"),
                     "--out", str(out)]) == 0
    plan = json.loads((out / "partition.json").read_text())
    assert plan["totals"]["accel_layers"] > 0
    capsys.readouterr()
    assert cli.main(["sim", HOST_OP, "--partition", str(out / "partition.json"),
                     "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "bit-exact with its integer reference: yes" in printed
    assert "every accelerator segment bit-exact: yes" in printed
    res = json.loads((out / "partition_sim" / "result.json").read_text())
    accel = [s for s in res["segments"] if s["device"] == "accel"]
    assert accel and all(s["bit_exact"] and s["cycles"] > 0 for s in accel)
    assert res["top1_match"] and res["max_abs_error"] < 0.1
    assert (out / "partition.json").is_file()            # the plan stays next to the run


def test_fmax_is_the_placed_one_when_synth_ran_there(tmp_path):
    (tmp_path / "synth").mkdir()
    rep = {"config": CFG.to_dict(), "fmax_mhz": 61.5}
    (tmp_path / "synth" / "report.json").write_text(json.dumps(rep))
    f, src = partition.fmax_of(tmp_path, CFG)
    assert f == 61.5 and src.startswith("placed")
    other = CFG.replace(rows=4)
    f, src = partition.fmax_of(tmp_path, other)            # another config: not its Fmax
    assert f == other.clock_mhz and src.startswith("estimate")


def test_dag_plan_around_a_host_softmax_on_the_golden_model(tmp_path):
    """Attention with its softmax on the host: the accelerator segments read several tensors
    (the model input and host results) and stay bit-exact."""
    spec = str(Path(HOST_OP).with_name("softmax_attention.py"))
    an = partition.analyze(spec, CFG, price=False)
    assert [l.name for l in an.layers if l.host_only] == ["softmax"]
    assert not partition.is_chain(an)
    acc = {l.name: "accel" for l in an.layers if not l.host_only and l.op != "input"}
    res = partition.run_plan(spec, CFG, _plan_with(an, acc), tmp_path, golden=True, analysis=an)
    assert [s["device"] for s in res["segments"]] == ["accel", "host", "accel"]
    assert res["bit_exact"] and max(len(s["inputs"]) for s in res["segments"]) >= 2
    assert res["max_abs_error"] < 0.05


def test_axi_link_is_capped_by_board_memory():
    """The on-chip AXI link shares the board memory: a bus at a clock faster than that memory
    gets the memory's bandwidth, an ideal memory the bus's; the Fmax given sets the bus rate."""
    from pycde_accel.perfmodel.memory import board_memory
    mem = board_memory(CFG)
    assert mem is not None
    bus_at = lambda mhz: CFG.axi_data_width / 8 * mhz * 1e6 / 1e9  # noqa: E731
    fast = partition.link_spec("axi", CFG, fmax_mhz=400.0)
    assert bus_at(400.0) > mem.bytes_per_s / 1e9
    assert fast["bandwidth_gbs"] == pytest.approx(mem.bytes_per_s / 1e9)
    assert "board memory" in fast["bandwidth_from"]
    slow = partition.link_spec("axi", CFG, fmax_mhz=50.0)
    assert slow["bandwidth_gbs"] == pytest.approx(min(bus_at(50.0), mem.bytes_per_s / 1e9))
    ideal = partition.link_spec("axi", dataclasses.replace(CFG, memory="ideal"), fmax_mhz=400.0)
    assert ideal["bandwidth_gbs"] == pytest.approx(bus_at(400.0))
