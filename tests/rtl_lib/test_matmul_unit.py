"""The matmul unit (operand scratchpads + EXEC engine + systolic core) in Verilator.

Each test generates a program (bank fills, commits, EXEC commands) with a numpy model of the
two operand scratchpads, computes every C tile with numpy, and runs ``tb_matmul_unit.py``,
which drives the program with random gaps / back-pressure and compares every C row bit-exactly.
The throughput tests run with everything ready and check the measured cycles against the
core's ``run_cycles`` formula.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

import numpy as np
import pytest

from pycde_accel.config import AccelConfig
from pycde_accel.errors import ConfigError
from pycde_accel.rtl_lib.matmul_unit import (C_SLICE_LATENCY, ISSUE_TO_CORE, emit_matmul_unit,
                                             make_matmul_unit, spad_words)
from pycde_accel.rtl_lib.systolic import run_cycles
from pycde_accel.sim import build, run

#: the cocotb testbench, tb_matmul_unit.py next to this file (the runner imports it from TB_DIRS)
TB = "tb_matmul_unit"
TB_DIRS = [Path(__file__).resolve().parent]


def _cfg(rows, cols, w=32, depth=1024):
    return AccelConfig(rows=rows, cols=cols, axi_data_width=w, spad_a_depth=depth,
                       spad_b_depth=depth)


def _build(cache_root, cfg):
    with tempfile.TemporaryDirectory(prefix="pycde_accel_mmu_") as tmp:
        sv = emit_matmul_unit(cfg, Path(tmp) / "sv")
        return build(sv.sim_filelist, sv.top, cache_root=cache_root)


# ---- the program generator and its numpy reference ----------------------------------------

class _Spad:
    """numpy model of one operand scratchpad: two physical banks, filled in commit order."""

    def __init__(self, lanes, words, ab, rng):
        self.lanes, self.words, self.ab, self.rng = lanes, words, ab, rng
        self.mem = [np.zeros((lanes, words, ab), np.uint8) for _ in range(2)]
        self.epochs: list[list[tuple[int, int]]] = []   # per bank: word ranges read from it
        self.banks: list[dict] = []
        self.snap: list[np.ndarray] = []

    def new_epoch(self):
        self.epochs.append([])
        return len(self.epochs) - 1

    def use(self, epoch, word, n):
        self.epochs[epoch].append((word, n))

    def fill(self, style, extra):
        """Writes for every epoch: each range read gets fresh random words in every lane, in
        LANES order (lane by lane, words ascending) or shuffled; plus ``extra`` random writes
        anywhere (also lanes >= lanes, which the hardware drops)."""
        for e, ranges in enumerate(self.epochs):
            mem = self.mem[e % 2]
            writes = []
            for word, n in ranges:
                for lane in range(self.lanes):
                    for w in range(word, word + n):
                        writes.append([lane, w])
            s = style if style != "mixed" else self.rng.choice(["lanes", "shuffled"])
            if s == "shuffled":
                self.rng.shuffle(writes)
            for _ in range(extra):
                lane = self.rng.randrange(self.lanes + 2)
                writes.insert(self.rng.randrange(len(writes) + 1),
                              [lane, self.rng.randrange(self.words)])
            out = []
            for lane, w in writes:
                data = self.rng.getrandbits(8 * self.ab)
                out.append([lane, w, data])
                if lane < self.lanes:
                    mem[lane, w] = np.frombuffer(data.to_bytes(self.ab, "little"), np.uint8)
            self.banks.append({"writes": out, "commit_with_last": self.rng.random() < 0.5})
            self.snap.append(mem.copy())

    def operand(self, epoch, word, k):
        """lanes x k int8: element k of lane i = byte k%AB of word word + k//AB."""
        flat = np.roll(self.snap[epoch], -word, axis=1).reshape(self.lanes, -1)
        return flat[:, :k].view(np.int8).astype(np.int64)

    def word_rows(self, epoch, word, k):
        """lanes x k x AB int8: the words word.. word+k-1 of each lane (a depthwise EXEC)."""
        return np.roll(self.snap[epoch], -word, axis=1)[:, :k].view(np.int8).astype(np.int64)


def random_plan(seed, groups, ks, max_per_a=3):
    """``groups`` lists (one per A bank) of 1..max_per_a Ks drawn from ``ks`` (list or rng->K)."""
    rng = random.Random(seed)
    return [[rng.choice(ks) if isinstance(ks, list) else ks(rng)
             for _ in range(rng.randint(1, max_per_a))] for _ in range(groups)]


def make_program(cfg, seed, plan, *, p_rel_b=0.6, style="mixed", extra=2, b_with_a=False,
                 p_chain=0.0, p_dw=0.0):
    """EXECs per ``plan`` (a list of groups, each the Ks of the EXECs of one A bank, REL_A on
    the group's last); B released with probability p_rel_b (or with A if ``b_with_a``); the
    last EXEC releases both. Random a_word/b_word offsets; random operand bytes. With
    ``p_chain`` an EXEC but the last has CHAIN with that probability: its sums carry into the
    next EXEC's tile (the expected tiles are the sums over each CHAIN run). With ``p_dw`` an
    EXEC is depthwise (DW) with that probability: K words of every A lane, column j takes byte j
    (C[i][j] = sum_k A_i word k byte j * B_j[k]); a CHAIN run is all DW or all normal."""
    rng = random.Random(seed)
    R, C, ab = cfg.rows, cfg.cols, cfg.axi_data_width // 8
    aw, bw = spad_words(cfg)
    A, B = _Spad(R, aw, ab, rng), _Spad(C, bw, ab, rng)
    ea, eb = A.new_epoch(), B.new_epoch()
    execs, uses = [], []
    dw_run = False
    for g, group in enumerate(plan):
        n = len(group)
        for i, k in enumerate(group):
            dw = dw_run if execs and execs[-1][5:6] == [1] else rng.random() < p_dw
            dw_run = dw
            k = min(k, aw // 2) if dw else k    # K words of every A lane
            nw = -(-k // ab)
            nwa = k if dw else nw
            a_word = rng.randrange(aw - nwa + 1)
            b_word = rng.randrange(bw - nw + 1)
            rel_a = i == n - 1
            last = g == len(plan) - 1 and rel_a
            rel_b = last or (rel_a if b_with_a else rng.random() < p_rel_b)
            A.use(ea, a_word, nwa)
            B.use(eb, b_word, nw)
            chain = not last and rng.random() < p_chain
            tail = [int(chain), int(dw)] if p_dw else [int(chain)] if p_chain else []
            execs.append([k, a_word, b_word, int(rel_a), int(rel_b)] + tail)
            uses.append((ea, eb))
            if rel_a and not last:
                ea = A.new_epoch()
            if rel_b and not last:
                eb = B.new_epoch()
    A.fill(style, extra)
    B.fill(style, extra)
    tiles = []
    mask = (1 << cfg.acc_width) - 1
    run = 0
    for ex, (ea, eb) in zip(execs, uses):
        k, a_word, b_word = ex[:3]
        if ex[6:7] == [1]:
            run = run + np.einsum("ikj,jk->ij", A.word_rows(ea, a_word, k), B.operand(eb, b_word, k))
        else:
            run = run + A.operand(ea, a_word, k) @ B.operand(eb, b_word, k).T
        if ex[5:6] == [1]:
            continue
        c = ((run & mask) ^ (1 << (cfg.acc_width - 1))) - (1 << (cfg.acc_width - 1))
        tiles.append(c.tolist())
        run = 0
    return {"rows": R, "cols": C, "acc_width": cfg.acc_width, "a_banks": A.banks,
            "b_banks": B.banks, "execs": execs, "tiles": tiles, "seed": seed}


def _run(sim, tmp_path, prog, **opts):
    prog = dict(prog, **{"p_wr": 1.0, "p_ex": 1.0, "p_c": 1.0, "junk": False, "preload": 0})
    prog.update(opts)
    spec, out = tmp_path / "spec.json", tmp_path / "out.json"
    spec.write_text(json.dumps(prog))
    run(sim, TB, tmp_path, module_dirs=TB_DIRS,
        extra_env={"TB_MMU_SPEC": str(spec.resolve()), "TB_MMU_OUT": str(out.resolve())})
    return json.loads(out.read_text())


def _k_mix(cfg):
    ab = cfg.axi_data_width // 8

    def pick(rng):
        return rng.choice([1, 2, 3, ab, ab + 1, 2 * ab - 1, cfg.rows, cfg.rows + 1,
                           rng.randint(1, 40), rng.randint(41, 300)])
    return pick


# ---- functional: random programs under random gaps and back-pressure ----------------------

RANDOM = [  # rows, cols, axi_data_width, seed, p_wr, p_ex, p_c, junk
    (2, 8, 64, 1, 1.0, 1.0, 1.0, False),
    (2, 8, 64, 2, 0.6, 0.5, 0.4, True),
    (4, 4, 32, 3, 1.0, 1.0, 0.3, False),
    (4, 4, 32, 4, 0.5, 0.8, 0.7, True),
    pytest.param(8, 8, 64, 6, 0.7, 0.9, 0.5, True, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("rows,cols,w,seed,p_wr,p_ex,p_c,junk", RANDOM,
                         ids=["2x8-w64-s1", "2x8-w64-s2", "4x4-w32-s3", "4x4-w32-s4",
                              "8x8-w64-s6"])
def test_random_programs(cache_root, tmp_path, rows, cols, w, seed, p_wr, p_ex, p_c, junk):
    """Random programs: 5 A banks of 1-3 EXECs, B released at random, K from 1 to 300, extra
    writes (overwrites, dropped lanes), fills in LANES or random order, random gaps."""
    cfg = _cfg(rows, cols, w=w)
    sim = _build(cache_root, cfg)
    prog = make_program(cfg, seed, random_plan(seed, 5, _k_mix(cfg)), extra=3)
    res = _run(sim, tmp_path, prog, p_wr=p_wr, p_ex=p_ex, p_c=p_c, junk=junk)
    assert res["fires"] == sum(e[0] for e in prog["execs"])
    assert res["stall_cycles"] > 0  # the EXECs waited for fills (or for the C sink)


def test_panels_in_one_a_bank(cache_root, tmp_path):
    """Several EXECs of one A bank at different a_word offsets (REL_A only on the last), each
    with its own B bank; K = 1, odd, > AB; LANES-order fills."""
    cfg = _cfg(4, 4)
    sim = _build(cache_root, cfg)
    plan = random_plan(11, 4, [1, 3, 5, 7, 9, 13, 16, 33, 64], max_per_a=4)
    prog = make_program(cfg, 11, plan, p_rel_b=1.0, style="lanes", extra=0)
    assert any(e[3] == 0 for e in prog["execs"])  # an A bank used by several EXECs
    res = _run(sim, tmp_path, prog, p_c=0.5)
    assert res["fires"] == sum(e[0] for e in prog["execs"])


def test_chained_execs(cache_root, tmp_path):
    """CHAIN: an EXEC's sums stay in the core and its successor's beats add to the same tile
    (the K splitting of backend/commands.py), across A and B bank changes, under random gaps
    and C back-pressure; only the EXECs without CHAIN produce tiles."""
    cfg = _cfg(2, 8, w=64)
    sim = _build(cache_root, cfg)
    prog = make_program(cfg, 21, random_plan(21, 6, _k_mix(cfg)), p_chain=0.6, extra=1)
    assert len(prog["tiles"]) < len(prog["execs"])
    res = _run(sim, tmp_path, prog, p_wr=0.7, p_ex=0.8, p_c=0.5)
    assert res["fires"] == sum(e[0] for e in prog["execs"])


DW = [(2, 8, 64, 31, 0.0), (4, 4, 32, 32, 0.5), (2, 8, 64, 33, 0.5)]


@pytest.mark.parametrize("rows,cols,w,seed,p_chain", DW, ids=["2x8-w64", "4x4-w32-chain",
                                                             "2x8-w64-chain"])
def test_depthwise_execs(cache_root, tmp_path, rows, cols, w, seed, p_chain):
    """DW (C == AB): depthwise EXECs mixed with normal ones (the kinds follow each other in the
    array), with CHAIN, under random gaps and C back-pressure; every tile bit-exact."""
    cfg = _cfg(rows, cols, w=w)
    sim = _build(cache_root, cfg)
    prog = make_program(cfg, seed, random_plan(seed, 6, _k_mix(cfg)), p_chain=p_chain, p_dw=0.5,
                        extra=1)
    kinds = {e[6] for e in prog["execs"]}
    assert kinds == {0, 1}, kinds
    res = _run(sim, tmp_path, prog, p_wr=0.7, p_ex=0.8, p_c=0.6)
    assert res["fires"] == sum(e[0] for e in prog["execs"])


def test_depthwise_back_to_back_rate(cache_root, tmp_path):
    """DW EXECs back to back, both banks preloaded: the same run_cycles as normal EXECs."""
    cfg = _cfg(4, 4, w=32)
    sim = _build(cache_root, cfg)
    ks = [9, 1, 30, 4, 3, 17]
    prog = make_program(cfg, 7, [ks[:3], ks[3:]], b_with_a=True, extra=0, p_dw=1.0)
    assert all(e[6] == 1 for e in prog["execs"])
    res = _run(sim, tmp_path, prog, preload=2)
    assert res["last_c"] - res["first_fire"] + 1 == run_cycles(4, 4, ks) + C_SLICE_LATENCY


def test_refusals():
    with pytest.raises(ConfigError, match="multiple"):
        make_matmul_unit(_cfg(4, 2, w=32))          # C=2 < AB=4
    with pytest.raises(ConfigError, match="multiple"):
        make_matmul_unit(_cfg(4, 4, w=64))          # C=4, AB=8
    with pytest.raises(ConfigError, match="at least 2 words"):
        make_matmul_unit(_cfg(2, 4, w=32, depth=4))


# ---- throughput: one beat per cycle into the core, back to back ---------------------------

PERF = [(4, 4, 32, [9, 1, 300, 2, 4, 3, 33, 1]), (4, 4, 32, [1] * 6),
        (4, 4, 32, [64] * 5), (2, 8, 64, [100, 7, 1, 2, 250]),
        pytest.param(8, 8, 64, [100, 7, 8, 9, 1, 250], marks=pytest.mark.slow)]


@pytest.mark.parametrize("rows,cols,w,ks", PERF, ids=[f"case{i}" for i in range(len(PERF))])
def test_back_to_back_rate(cache_root, tmp_path, rows, cols, w, ks):
    """Both banks of A and B committed before the first EXEC; EXECs offered back to back,
    c_ready high. The core sees exactly its own run: first beat to last C beat is
    run_cycles(ks) + C_SLICE_LATENCY (tolerance 0), and the first beat enters ISSUE_TO_CORE + 1
    edges after the first EXEC is accepted (the whole run: that sum + ISSUE_TO_CORE + 1 from the
    accepting edge)."""
    cfg = _cfg(rows, cols, w=w)
    sim = _build(cache_root, cfg)
    half = (len(ks) + 1) // 2
    prog = make_program(cfg, 5, [ks[:half], ks[half:]], b_with_a=True, extra=0)
    res = _run(sim, tmp_path, prog, preload=2)
    want = run_cycles(rows, cols, ks) + C_SLICE_LATENCY
    got = res["last_c"] - res["first_fire"] + 1
    assert got == want, (got, want, res)
    assert res["first_fire"] - res["first_accept"] == ISSUE_TO_CORE + 1, res
    assert res["last_c"] - res["first_accept"] + 1 == want + ISSUE_TO_CORE + 1


def test_the_operand_fifo_head_is_picked_by_kept_pointer_copies(tmp_path):
    """The core's operands are the operand FIFO's slots picked by kept copies of the read
    pointer, one per ``SLOT_CHUNK`` bits (``fifo_rd_c<i>``), not by ``fifo_rd`` itself: one
    pointer selecting the whole head put a route across the array before the core's skew
    registers (a group of placed 8x8 paths on seed 1 at 3ea0699). That the head keeps every
    operand in order is the random programs' above."""
    import re

    from .sv_cone import definitions, leaves

    out = emit_matmul_unit(AccelConfig(), tmp_path / "sv")
    sv = (tmp_path / "sv" / f"{out.top}.sv").read_text()
    defs = definitions(sv)
    inst = re.search(r"\bsystolic_core_\w+ core \((.*?)\);", sv, re.S).group(1)
    copies = set()
    for port in ("a_data", "b_data"):
        expr = re.search(rf"\.{port}\s*\((.*?)\),\s*\.", inst, re.S).group(1)
        src = leaves(defs, expr)
        assert "fifo_rd" not in src, (port, sorted(src))
        copies |= {n for n in src if re.fullmatch(r"_fifo_rd_c\d+_b\d+_q", n)}
        other = sorted(n for n in src
                       if not n.startswith(("fifo_slot", "arr_fifo_slot", "_fifo_rd_c")))
        assert not other, other
    assert len({re.match(r"_fifo_rd_c(\d+)", n).group(1) for n in copies}) >= 8, sorted(copies)


def test_a_head_chunk_whose_width_is_not_a_power_of_two_is_a_mux_tree(tmp_path):
    """An array index over 34-bit chunks (the 2x4's operand FIFO head: 98 bits, chunks of 64
    and 34) is a multiply of the index by 34 in Yosys, which it mapped to a MULT18X18D on the
    2x4's critical path; such a chunk is a tree of two-way muxes (no array), a power-of-two
    chunk keeps its array index."""
    import re

    from pycde_accel.rtl_lib.matmul_unit import SLOT_CHUNK

    out = emit_matmul_unit(AccelConfig(rows=2, cols=4, axi_data_width=32), tmp_path / "sv")
    sv = (tmp_path / "sv" / f"{out.top}.sv").read_text()
    arrays = set(re.findall(r"\barr_fifo_slot0_(\d+)_", sv))
    assert arrays == {"0"}, arrays                  # the 64-bit chunk at bit 0 only
    assert SLOT_CHUNK == 64


def test_the_operand_fifo_pop_reads_an_admission_beside_the_head(tmp_path):
    """The unit's take (the operand FIFO's pop) reads the unit's own admission flop
    (``last_ok``) and the head's flops, and no output of the core, which is built in its fed
    form; the admission counts C rows out from the core's ``c_valid`` flop and the C slice's
    ready. With the admission in the core, the core's flop -> the unit's take -> the head and
    the head -> the core's credits were the placed 8x8's two worst paths on seed 2 at fc1165b
    (8.40 and 8.01 ns, 7.14 and 6.77 of it routing). That the take is the same is the random
    programs' above and the whole-model sims'."""
    import re

    from .sv_cone import definitions, leaves, next_value

    out = emit_matmul_unit(AccelConfig(), tmp_path / "sv")
    sv = (tmp_path / "sv" / f"{out.top}.sv").read_text()
    defs = definitions(sv)
    assert re.search(r"\bsystolic_core_\w+_fed core\b", sv)
    src = leaves(defs, next_value(sv, "fifo_head_valid"))
    assert "last_ok" in src and not any(n.startswith("_core_") for n in src), sorted(src)
    counted = leaves(defs, next_value(sv, "credits"))
    assert "_core_c_valid" in counted and "fifo_head_last" in counted, sorted(counted)