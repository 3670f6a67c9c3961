"""The store engine (rtl_lib.store_engine) in Verilator: C tiles in, bias + the CIRCT-lowered
per-channel requantize kernel + ReLU, int8 rows out by DMA command and data beats, every byte
compared with frontend.quantize (numpy), under random gaps and back-pressure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pycde_accel.assemble import emit_store_engine
from pycde_accel.config import AccelConfig
from pycde_accel.errors import ConfigError
from pycde_accel.frontend import quantize as q
from pycde_accel.rtl_lib.store_engine import make_store_engine
from pycde_accel.sim import run

#: the cocotb testbench, tb_store_engine.py next to this file (the runner imports it from TB_DIRS)
TB = "tb_store_engine"
TB_DIRS = [Path(__file__).resolve().parent]

CONFIGS = {
    "2x4_w32": AccelConfig(rows=2, cols=4, axi_data_width=32, spad_c_depth=16),
    "4x8_w32": AccelConfig(rows=4, cols=8, axi_data_width=32, spad_c_depth=32),
    "8x8_w64": AccelConfig(rows=8, cols=8, axi_data_width=64, spad_c_depth=64),
    "4x8_w32_a24": AccelConfig(rows=4, cols=8, axi_data_width=32, spad_c_depth=16,
                               acc_width=24, max_k=511),
    # lanes (config.lanes): the default store_lanes=4 gives 4 above (2x4: one group per row,
    # 4x8: two, 8x8_w64: two groups per beat); one lane, two lanes, and a whole beat per cycle
    "4x8_w32_l1": AccelConfig(rows=4, cols=8, axi_data_width=32, spad_c_depth=32,
                              store_lanes=1),
    "4x8_w32_l2": AccelConfig(rows=4, cols=8, axi_data_width=32, spad_c_depth=32,
                              store_lanes=2),
    "8x8_w64_l8": AccelConfig(rows=8, cols=8, axi_data_width=64, spad_c_depth=64,
                              store_lanes=8),
}


def _sim(name, block_sim):
    def emit(sv_dir):
        return emit_store_engine(CONFIGS[name], sv_dir, sv_dir.parent / "kernel")

    return block_sim(f"store_{name}", emit)


# ---- the numpy model ---------------------------------------------------------------------------

def wrap(x, bits):
    m = 1 << bits
    return ((np.asarray(x, np.int64) + (m >> 1)) % m) - (m >> 1)


def model_tile(cfg: AccelConfig, cmd: dict, acc: np.ndarray, records: np.ndarray) -> list[int]:
    """The data beats one STORE writes: ``records`` [depth, 3] (bias, m0, shift) int64."""
    R, C = cfg.rows, cfg.cols
    ab = cfg.axi_data_width // 8
    j = np.arange(C)
    p = np.full(C, cmd["p_index"]) if cmd["per_tensor"] else cmd["p_index"] + j
    rec = records[p % cfg.spad_c_depth]
    x = wrap(wrap(acc, 32) + rec[None, :, 0], 32)
    y = q.requantize(x, rec[None, :, 1], rec[None, :, 2], relu=bool(cmd["relu"]))
    assert y.shape == (R, C)
    beats = []
    for r in range(cmd["rows"]):
        row = bytes(int(v) & 0xFF for v in y[r])
        for b in range(C // ab):
            beats.append(int.from_bytes(row[b * ab:(b + 1) * ab], "little"))
    return beats


# ---- random cases ------------------------------------------------------------------------------

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


def rand_acc(rng, shape, acc_width):
    """Accumulators over the whole acc_width range: uniform, edges, and small magnitudes (so
    that requantize does not only saturate)."""
    lo, hi = -(1 << (acc_width - 1)), (1 << (acc_width - 1)) - 1
    kind = rng.integers(0, 4, shape)
    uni = rng.integers(lo, hi, shape, endpoint=True)
    edge = np.where(rng.integers(0, 2, shape) == 0, hi - rng.integers(0, 64, shape),
                    lo + rng.integers(0, 64, shape))
    bits = rng.integers(0, acc_width - 1, shape)
    small = rng.integers(-(1 << 62), 1 << 62, shape) >> (62 - bits)
    return np.select([kind == 0, kind == 1], [uni, edge], small).astype(np.int64)


def rand_records(rng, depth):
    """bias (uniform, edges, small), m0 (mostly [2^30, 2^31), also edges and small), shift."""
    n = depth
    bias = np.select([rng.random(n) < 0.3, rng.random(n) < 0.5],
                     [rng.integers(I32_MIN, I32_MAX, n, endpoint=True),
                      np.where(rng.random(n) < 0.5, I32_MAX - rng.integers(0, 64, n),
                               I32_MIN + rng.integers(0, 64, n))],
                     rng.integers(-5000, 5000, n))
    m0 = rng.integers(1 << 30, 1 << 31, n)
    pick = rng.random(n)
    m0 = np.where(pick < 0.1, I32_MAX, np.where(pick < 0.2, 1 << 30,
                  np.where(pick < 0.3, rng.integers(0, 1 << 30, n), m0)))
    shift = rng.integers(0, 32, n)
    return np.stack([bias, m0, shift], axis=1).astype(np.int64)


def param_words(rng, records, which=None):
    """The p_wr beats writing ``records`` (rows ``which``), words in random order, with the
    unused zero word (w = 3) written as junk (it must be ignored)."""
    which = range(len(records)) if which is None else which
    words = []
    for r in which:
        for w in range(3):
            words.append([4 * int(r) + w, int(records[r, w]) & 0xFFFFFFFF])
        words.append([4 * int(r) + 3, int(rng.integers(0, 1 << 32))])
    order = rng.permutation(len(words))
    return [words[i] for i in order]


def make_case(cfg: AccelConfig, seed: int, phases: int = 2, tiles: int = 5,
              full_rows: bool = False):
    """Phases of random STOREs; the parameter records change between phases."""
    rng = np.random.default_rng(seed)
    R, C, D = cfg.rows, cfg.cols, cfg.spad_c_depth
    ab = cfg.axi_data_width // 8
    records = rand_records(rng, D)
    spec_phases, want_wc, want_wd = [], [], []
    for ph in range(phases):
        if ph == 0:
            words = param_words(rng, records)
        else:
            which = rng.choice(D, size=D // 2, replace=False)
            records[which] = rand_records(rng, len(which))
            words = param_words(rng, records, which)
        cmds, accs = [], []
        for t in range(tiles):
            rows = int(R if full_rows or rng.random() < 0.5 else rng.integers(1, R + 1))
            p_index = int(rng.integers(0, D - C + 1) if rng.random() < 0.8 else rng.integers(0, D))
            cmd = {"addr": int(rng.integers(0, 1 << 20)) * ab,
                   "rows": rows, "stride": int(rng.integers(C // ab, 64)) * ab,
                   "p_index": p_index, "relu": int(rng.random() < 0.5),
                   "per_tensor": int(rng.random() < 0.3)}
            acc = rand_acc(rng, (R, C), cfg.acc_width)
            # about 40% tuned so that acc + bias lands in requantize's non-saturating range
            j = np.arange(C)
            rec = records[(np.full(C, p_index) if cmd["per_tensor"] else p_index + j) % D]
            bits = rec[:, 2] + rng.integers(0, 9, (R, C))
            target = rng.integers(-(1 << 40), 1 << 40, (R, C)) >> (40 - bits)
            lo, hi = -(1 << (cfg.acc_width - 1)), (1 << (cfg.acc_width - 1)) - 1
            tuned = np.clip(wrap(target - rec[None, :, 0], 32), lo, hi)
            acc = np.where(rng.random((R, C)) < 0.4, tuned, acc)
            cmds.append(cmd)
            accs.append(acc.tolist())
            want_wc.append({"addr": cmd["addr"], "beats": C // ab, "rows": rows,
                            "stride": cmd["stride"]})
            want_wd += model_tile(cfg, cmd, acc, records)
        spec_phases.append({"params": words, "cmds": cmds, "tiles": accs})
    return spec_phases, want_wc, want_wd


def run_case(sim, tmp_path, cfg, phases, seed, p_c, p_st, p_wc, p_wd):
    spec = {"rows": cfg.rows, "cols": cfg.cols, "acc_width": cfg.acc_width, "phases": phases,
            "seed": seed, "p_c": p_c, "p_st": p_st, "p_wc": p_wc, "p_wd": p_wd}
    out = tmp_path / "out.json"
    run(sim, TB, tmp_path, module_dirs=TB_DIRS,
        extra_env={"TB_STORE_SPEC": json.dumps(spec), "TB_STORE_OUT": str(out.resolve())})
    return json.loads(out.read_text())


def check(res, want_wc, want_wd):
    assert res["errors"] == []
    assert res["wc"] == want_wc
    assert len(res["wd"]) == len(want_wd)
    for i, (g, w) in enumerate(zip(res["wd"], want_wd)):
        assert g == w, f"data beat {i}: got {g:#x} want {w:#x}"


GATES = [(1.0, 1.0, 1.0, 1.0), (0.5, 0.6, 0.4, 0.5), (0.9, 1.0, 0.3, 0.2)]


@pytest.mark.parametrize("name", ["2x4_w32", "4x8_w32", "4x8_w32_l1", "4x8_w32_l2",
                                  "8x8_w64_l8"])
@pytest.mark.parametrize("gates", GATES, ids=["full", "gaps", "backpressure"])
def test_store_random(name, gates, block_sim, tmp_path):
    cfg = CONFIGS[name]
    sim = _sim(name, block_sim)
    seed = 11 + GATES.index(gates)
    phases, want_wc, want_wd = make_case(cfg, seed)
    res = run_case(sim, tmp_path, cfg, phases, seed, *gates)
    check(res, want_wc, want_wd)


@pytest.mark.parametrize("name", ["2x4_w32", "4x8_w32", "4x8_w32_l1", "4x8_w32_l2",
                                  "8x8_w64_l8",
                                  pytest.param("8x8_w64", marks=pytest.mark.slow)])
def test_store_rate(name, block_sim, tmp_path):
    """All rows valid, no gating: L = config.lanes elements per cycle, tiles back to back
    (the fill and drain latency are the only extra cycles)."""
    cfg = CONFIGS[name]
    sim = _sim(name, block_sim)
    phases, want_wc, want_wd = make_case(cfg, 5, phases=1, tiles=8, full_rows=True)
    res = run_case(sim, tmp_path, cfg, phases, 5, 1.0, 1.0, 1.0, 1.0)
    check(res, want_wc, want_wd)
    elems = len(phases[0]["tiles"]) * cfg.rows * cfg.cols
    span = res["wd_edges"][-1] - res["first_c"] + 1
    lanes = cfg.lanes
    print(f"{name}: {elems} elements, {lanes} lanes, in {span} cycles")
    # measured: elems + 45 at 2x4, + 35 at 4x8 (fill and drain: the parameter read, the
    # register slices in front of and behind each kernel, its 28-stage static pipeline and output buffer,
    # the byte packer); no per-tile gap
    # with L lanes a tile takes R*C/L cycles, but at least about 4: 2x4 with 4 lanes (2-element
    # runs per kernel) measured 64 elements in 81 cycles, 8 tiles of ~4 cycles + the fill
    tiles = len(phases[0]["tiles"])
    assert span <= tiles * max(cfg.rows * cfg.cols // lanes, 4) + 50, (span, elems, lanes)


@pytest.mark.parametrize("name", ["4x8_w32_l2", "8x8_w64_l8"])
def test_store_lane_queues_fill(name, block_sim, tmp_path):
    """C at full rate into a write side that takes one beat in 20: every stage behind S0 fills,
    up to the lanes' S3 queues, so S0 must stop on ``s3_room`` exactly when a queue would
    overflow (a word pushed into a full queue is dropped, and the data check fails)."""
    cfg = CONFIGS[name]
    sim = _sim(name, block_sim)
    phases, want_wc, want_wd = make_case(cfg, 7, phases=1, tiles=8, full_rows=True)
    res = run_case(sim, tmp_path, cfg, phases, 7, 1.0, 1.0, 1.0, 0.05)
    check(res, want_wc, want_wd)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["8x8_w64", "4x8_w32_a24"])
@pytest.mark.parametrize("gates", GATES[1:], ids=["gaps", "backpressure"])
def test_store_random_more(name, gates, block_sim, tmp_path):
    cfg = CONFIGS[name]
    sim = _sim(name, block_sim)
    seed = 31 + GATES.index(gates)
    phases, want_wc, want_wd = make_case(cfg, seed, phases=2, tiles=6)
    res = run_case(sim, tmp_path, cfg, phases, seed, *gates)
    check(res, want_wc, want_wd)


def test_refusals():
    with pytest.raises(ConfigError, match="multiple of the AXI beat"):
        make_store_engine(AccelConfig(rows=2, cols=4, axi_data_width=64), None)


@pytest.mark.parametrize("target", ["ecp5-85f", "xc7a100t"])
def test_parameter_memories_use_the_block_output_register_on_ecp5(tmp_path, target):
    """On ECP5 the bias/m0/shift memories are DP16KD blocks with REGMODE OUTREG (their output
    register is S2's, so no route follows a 5.8 ns clock-to-out), read on port B alone (the
    18-bit mode); the DP16KD model is a simulation-only source. Other targets infer them."""
    from pycde_accel.rtl_lib import ecp5_ebr, store_engine
    cfg = AccelConfig(rows=4, cols=8, axi_data_width=32, spad_c_depth=32, target=target)
    out = emit_store_engine(cfg, tmp_path / "sv", tmp_path / "kernel")
    text = "".join(f.read_text() for f in out.files)
    inst = re.findall(r"^\s*DP16KD #\((.*?)\) (param_\w+) \(", text, re.M | re.S)
    listed = out.filelist.read_text().splitlines()
    if target.startswith("ecp5"):
        blocks = ecp5_ebr.ebr_blocks(32, 32, store_engine.PARAM_EBR_WIDEST)
        assert blocks == 2
        assert len(inst) == 3 * cfg.lanes * blocks, [n for _, n in inst]
        for params, name in inst:
            assert 'REGMODE_B("OUTREG")' in params and "DATA_WIDTH_B(64'd18)" in params, name
        assert store_engine.sim_models(cfg) == [ecp5_ebr.SIM_MODEL]
        assert "DP16KD_sim.sv" in out.sim_filelist.read_text() and "DP16KD_sim.sv" not in listed
        assert not re.search(r"reg \[31:0\] s2_(bias|m0|shift)", text)
    else:
        assert inst == [] and store_engine.sim_models(cfg) == []
        assert re.search(r"s2_m0", text)


def test_the_output_push_starts_at_its_own_flops(tmp_path):
    """The data beat's push into ``wd_q`` reads the join's second copy (``y_all_valid_1``; the
    first drives the lanes' Y slices) and the row's keep bit from ``out_row_mask``, not the
    row counter through an R-way mux (y_all_valid -> out_col -> wd_q_skid_v was the placed
    8x8's critical path on seed 3 at bd973bd). Which rows are written is the random tests'
    (their valid-row masks)."""
    from .sv_cone import leaves, next_value

    out = emit_store_engine(CONFIGS["8x8_w64_l8"], tmp_path / "sv", tmp_path / "kernel")
    sv = (tmp_path / "sv" / f"{out.top}.sv").read_text()
    src = leaves(sv, next_value(sv, "wd_q_skid_v"))
    assert {"_y_all_valid_1_q", "out_row_mask"} <= src, sorted(src)
    assert not {"_y_all_valid_0_q", "out_row", "out_cmd_d"} & src, sorted(src)


def test_the_row_mask_enters_the_output_queue_as_it_comes(tmp_path):
    """The output queue stores the command's ``st_row_mask`` (decoded before the engine's
    command queue), not ``st_rows > r`` decoded at the intake (st_rows -> five LUTs -> the
    out_queue's LUT-RAM write data was the placed 8x8's critical path on seed 1 at 35bd50c).
    Which rows are written is the random tests' (their valid-row counts)."""
    from .sv_cone import leaves

    out = emit_store_engine(CONFIGS["8x8_w64_l8"], tmp_path / "sv", tmp_path / "kernel")
    sv = (tmp_path / "sv" / f"{out.top}.sv").read_text()
    writes = re.findall(r"\bout_queue_mem\[[^\]]*\]\s*<=\s*(.*?);", sv, re.S)
    assert writes, "no write into out_queue_mem"
    for w in writes:
        src = leaves(sv, w)
        assert "st_row_mask" in src and "st_rows" not in src, sorted(src)


def test_the_command_take_is_an_and_of_two_flops(tmp_path):
    """``st_ready`` is a register (``st_ready_q``) set from the queues' next fill flags, so
    the take into the three command queues reads the command's valid and one flop, not the
    three full flags (store_head_v -> their AND -> the take -> a queue's full flag was a placed
    8x8 path on both seeds at 2cef53c). That commands still queue and leave in order is the
    random tests'."""
    from .sv_cone import leaves

    out = emit_store_engine(CONFIGS["8x8_w64_l8"], tmp_path / "sv", tmp_path / "kernel")
    sv = (tmp_path / "sv" / f"{out.top}.sv").read_text()
    ready = re.search(r"assign\s+st_ready\s*=\s*(.*?);", sv, re.S).group(1)
    assert leaves(sv, ready) == {"st_ready_q"}, sorted(leaves(sv, ready))
    writes = re.findall(r"\bout_queue_mem\[[^\]]*\]\s*<=", sv)
    assert writes
    enable = re.search(r"if\s*\(([^)]*)\)\s*\n?\s*out_queue_mem\[", sv)
    assert enable, "no write enable of out_queue_mem"
    src = leaves(sv, enable.group(1))
    assert src <= {"st_valid", "st_ready_q", "out_queue_full"}, sorted(src)


@pytest.mark.parametrize("rows", [0, 1, 3, 8, 9, 65535])
def test_row_mask_value(rows):
    from pycde_accel.rtl_lib.store_engine import row_mask_value
    assert row_mask_value(rows, 8) == sum(1 << r for r in range(8) if r < rows)


def test_parameter_read_addresses_are_registers(tmp_path):
    """Every address bit of the parameter memories' read port is a register of its own lane
    (``param_raddr*``, set one cycle ahead from the beat buffer's next column and index), not
    the column through the record adder (bb_col -> the adder -> a 3.26 ns route -> a DP16KD
    address was the placed 8x8's critical path on seed 3 at 4d2da04). Which records are read
    is the random tests' (per-channel parameters)."""
    cfg = AccelConfig(rows=8, cols=8, axi_data_width=64, spad_c_depth=64, target="ecp5-85f")
    out = emit_store_engine(cfg, tmp_path / "sv", tmp_path / "kernel")
    sv = (tmp_path / "sv" / f"{out.top}.sv").read_text()
    regs = set(re.findall(r"^\s*reg\s+(?:\[[^\]]*\]\s*)?(\w+);", sv, re.M))
    ports = [a.strip() for a in re.findall(r"\.ADB\d+\s*\(([^)]*)\)", sv)]
    addr = [re.sub(r"\[\d+\]$", "", a) for a in ports if not re.fullmatch(r"\d+'[hbd]\w+", a)]
    assert len(addr) >= 3 * cfg.lanes, ports
    assert all(a.startswith("param_raddr") and a in regs for a in addr), sorted(set(addr))


def test_parameter_read_addresses_load_the_feed_queue_read_without_an_adder(tmp_path):
    """Each lane's first record (p + l, or p per tensor) is added as the command enters the
    feed queue, so ``param_raddr*`` and ``hold_raddr*`` load bit slices of the queue's read,
    not its sum (the feed queue's LUT-RAM read -> the record adder -> the address muxes ->
    ``param_raddr_3`` was the placed 8x8's critical path on seed 5 at 7a06fda). Which records
    are read is the random tests'."""
    cfg = AccelConfig(rows=8, cols=8, axi_data_width=64, spad_c_depth=64, target="ecp5-85f")
    out = emit_store_engine(cfg, tmp_path / "sv", tmp_path / "kernel")
    sv = (tmp_path / "sv" / f"{out.top}.sv").read_text()
    read = r"feed_queue_mem\[feed_queue_rd\]\[\d+:\d+\]"
    for l in range(cfg.lanes):
        assert re.search(rf"\bhold_raddr_{l}\s*<=\s*{read};", sv), l
        nxt = re.search(rf"\bparam_raddr_{l}\s*<=(.*?);", sv, re.S).group(1)
        assert re.search(read, nxt), nxt
        for term in re.findall(r"[^?:]*\+[^?:]*", nxt):
            assert "feed_queue" not in term, nxt
