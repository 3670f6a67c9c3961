"""The vector engine (rtl_lib.vector_engine) in Verilator, its element math done by the lowered
residual_add / maxpool kernels: every VEC result bit-exact against pycde_accel.frontend.quantize
(a numpy model of X and the DRAM writes), under random S gaps and random write back-pressure;
and its rate without back-pressure."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pycde_accel.config import AccelConfig
from pycde_accel.errors import ConfigError
from pycde_accel.frontend import quantize as q
from pycde_accel.perfmodel.timing import VEC_WD_SLICE, kernel_latencies
from pycde_accel.sim import run

#: the cocotb testbench, tb_vector_engine.py next to this file (the runner imports it from TB_DIRS)
TB = "tb_vector_engine"
TB_DIRS = [Path(__file__).resolve().parent]
DEPTH = 64  # X capacity (config.spad_c_depth) of the test configs
#: maxpool kernel run length of the test builds: short and not a multiple of AB, so MAX
#: commands cross run boundaries (the restart bubble) mid-beat and mid-command
MAX_RUN = 37


def _config(w: int) -> AccelConfig:
    return AccelConfig(axi_data_width=w, spad_c_depth=DEPTH)


def _sim(block_sim, w):
    from pycde_accel.assemble import emit_vector_engine
    return block_sim(f"vec{w}", lambda sv_dir: emit_vector_engine(_config(w), sv_dir,
                                                                  max_run=MAX_RUN))


# ---- reference model -----------------------------------------------------------------------
def _to_int(row: np.ndarray) -> int:
    return int.from_bytes(np.asarray(row, dtype=np.int64).astype(np.int8).tobytes(), "little")


def _from_int(v: int, ab: int) -> np.ndarray:
    return np.frombuffer(int(v).to_bytes(ab, "little"), dtype=np.int8).astype(np.int64)


class Model:
    """X (DEPTH beats of AB int8) and the DRAM writes, as the spec defines VEC."""

    def __init__(self, ab: int):
        self.ab = ab
        self.x = np.zeros((DEPTH, ab), dtype=np.int64)
        self.steps: list[dict] = []
        self.wc: list[list[int]] = []
        self.wd: list[int] = []

    def load_x(self, index: int, beats: np.ndarray):
        for j, row in enumerate(beats):
            self.x[(index + j) % DEPTH] = row
        self.steps.append({"op": "load_x", "index": index, "beats": [_to_int(r) for r in beats]})

    def vec(self, n, x_off, dst, s, *, ma=0, mb=0, shift=0, mx=False, relu=False, to_x=False,
            mul=False):
        s = np.asarray(s, dtype=np.int64).reshape(n, self.ab)
        out = []
        for i in range(n):  # element-wise in order: beat i reads X after beat i-1 was written
            xi = i % mb if mul and mb > 0 else i
            a = self.x[(x_off + xi) % DEPTH]
            if mul:
                y = q.requantize(a * s[i], ma, shift)
            elif mx:
                y = np.maximum(a, s[i])
            else:
                y = q.residual_add(a, s[i], ma, mb, shift, relu=relu)
            if to_x:
                self.x[(dst + i) % DEPTH] = y
            else:
                out.append(_to_int(y))
        if not to_x:
            self.wc.append([dst, n, 1])
            self.wd.extend(out)
        self.steps.append({"op": "vec", "n": n, "x_off": x_off, "dst": dst, "ma": int(ma),
                           "mb": int(mb), "shift": int(shift), "max": int(mx),
                           "relu": int(relu), "to_x": int(to_x), "mul": int(mul),
                           "s": [_to_int(r) for r in s]})

    def lut_set(self, table):
        """VEC LUT_SET: the 256 table bytes as 256/AB S beats."""
        self.table = np.asarray(table, np.int64)
        s = self.table.reshape(-1, self.ab)
        self.steps.append({"op": "vec", "n": len(s), "x_off": 0, "dst": 0, "ma": 0, "mb": 0,
                           "shift": 0, "max": 0, "relu": 0, "to_x": 0, "lut_set": 1, "lut": 0,
                           "s": [_to_int(r) for r in s]})

    def lut(self, n, dst, s, to_x=False):
        """VEC LUT: table[s + 128] of n S beats."""
        s = np.asarray(s, dtype=np.int64).reshape(n, self.ab)
        y = self.table[s + 128]
        if to_x:
            for i in range(n):
                self.x[(dst + i) % DEPTH] = y[i]
        else:
            self.wc.append([dst, n, 1])
            self.wd.extend(_to_int(r) for r in y)
        self.steps.append({"op": "vec", "n": n, "x_off": 0, "dst": dst, "ma": 0, "mb": 0,
                           "shift": 0, "max": 0, "relu": 0, "to_x": int(to_x), "lut_set": 0,
                           "lut": 1, "s": [_to_int(r) for r in s]})

    def dump_x(self, dst: int):
        """Read all of X back through the engine: MAX with S = -128 everywhere is X itself."""
        self.vec(DEPTH, 0, dst, np.full((DEPTH, self.ab), -128), mx=True)


def _run(sim, tmp_path, model: Model, tag="run", **gates) -> dict:
    spec = {"steps": model.steps, "seed": gates.pop("seed", 1), **gates}
    out = (tmp_path / f"{tag}.json").resolve()
    run(sim, TB, tmp_path / tag, module_dirs=TB_DIRS,
        extra_env={"TB_VEC_SPEC": json.dumps(spec), "TB_VEC_OUT": str(out)})
    res = json.loads(out.read_text())
    assert [c[:3] for c in res["wc"]] == model.wc           # addr, beats, rows 1
    got = [d for d, _ in res["wd"]]
    assert len(got) == len(model.wd)
    for i, (g, e) in enumerate(zip(got, model.wd)):
        assert g == e, (f"DRAM beat {i}: got {_from_int(g, model.ab)}, "
                        f"expected {_from_int(e, model.ab)}")
    return res


def _add_params(rng):
    """(ma, mb, shift) as the frontend quantizes a residual add (add_multipliers of the two
    scale ratios s_a/s_y, s_b/s_y)."""
    ra, rb = np.exp(rng.uniform(np.log(0.02), np.log(8.0), 2))
    return q.add_multipliers(float(ra), float(rb))


def _i8(rng, *shape):
    x = rng.integers(-128, 128, shape)
    x.flat[:2] = [-128, 127]
    return x


#: bus widths: the default config's 64 in the default run, 32 (one more build) in the slow set
WIDTHS = [pytest.param(32, marks=pytest.mark.slow), 64]

GATES = {"p_s": 0.6, "p_x": 0.7, "p_wc": 0.5, "p_wd": 0.4}


@pytest.mark.parametrize("w", WIDTHS)
def test_add_max_relu_to_x(block_sim, tmp_path, w):
    """ADD (RELU off/on, frontend multipliers and raw extremes), MAX, n = 1, n = capacity,
    TO_X in place and to another region, then X read back; random gaps everywhere."""
    sim = _sim(block_sim, w)
    ab = w // 8
    rng = np.random.default_rng(w)
    m = Model(ab)
    m.load_x(0, _i8(rng, DEPTH, ab))
    ma, mb, sh = _add_params(rng)
    m.vec(DEPTH, 0, 0x1000, _i8(rng, DEPTH, ab), ma=ma, mb=mb, shift=sh)      # n = capacity
    ma, mb, sh = _add_params(rng)
    m.vec(5, 3, 0x2040, _i8(rng, 5, ab), ma=ma, mb=mb, shift=sh, relu=True)
    m.vec(1, 63, 0x3000, _i8(rng, 1, ab), ma=-(1 << 15) + 1, mb=(1 << 15) - 1, shift=31)
    m.vec(1, 7, 0x3008, _i8(rng, 1, ab), ma=(1 << 15) - 1, mb=(1 << 15) - 1, shift=0)
    m.vec(9, 10, 0x3100, _i8(rng, 9, ab), mx=True, relu=True)                # RELU ignored
    ma, mb, sh = _add_params(rng)
    m.vec(12, 20, 20, _i8(rng, 12, ab), ma=ma, mb=mb, shift=sh, relu=True, to_x=True)  # in place
    m.vec(8, 20, 40, _i8(rng, 8, ab), mx=True, to_x=True)                    # to another region
    m.vec(6, 41, 42, _i8(rng, 6, ab), mx=True, to_x=True)      # dst = x_off + 1: reads its own
    m.load_x(50, _i8(rng, 4, ab))                                            # a LOAD X in between
    m.vec(1, 50, 50, _i8(rng, 1, ab), mx=True, to_x=True)                    # n = 1 in place
    m.dump_x(0x8000)
    _run(sim, tmp_path, m, **GATES)


@pytest.mark.parametrize("w", WIDTHS)
def test_maxpool_chain(block_sim, tmp_path, w):
    """A 2x2 maxpool as the compiler runs it: LOAD X (tap 0), VEC MAX TO_X (tap 1), VEC MAX
    TO_X (tap 2), VEC MAX to DRAM (tap 3), twice (n = capacity, then a short one)."""
    sim = _sim(block_sim, w)
    ab = w // 8
    rng = np.random.default_rng(100 + w)
    m = Model(ab)
    for n, off in ((DEPTH, 0), (11, 30)):
        taps = [_i8(rng, n, ab) for _ in range(4)]
        m.load_x(off, taps[0])
        m.vec(n, off, off, taps[1], mx=True, to_x=True)
        m.vec(n, off, off, taps[2], mx=True, to_x=True)
        m.vec(n, off, 0x4000 + 64 * off, taps[3], mx=True)
        expect = [_to_int(r) for r in np.max(np.stack(taps), axis=0)]
        assert m.wd[-n:] == expect  # the model agrees with a plain 4-way max
    _run(sim, tmp_path, m, seed=7, **GATES)


@pytest.mark.parametrize("w", WIDTHS)
def test_rate(block_sim, tmp_path, w):
    """No back-pressure, n = capacity beats: ADD takes n * AB cycles plus its pipeline fill
    (the static kernel's runs follow each other with no bubble, one run per beat), MAX (to
    DRAM or TO_X, the AB lane kernels) n cycles plus a few: one beat per cycle (its runs span
    commands)."""
    sim = _sim(block_sim, w)
    ab = w // 8
    rng = np.random.default_rng(3)
    m = Model(ab)
    m.load_x(0, _i8(rng, DEPTH, ab))
    ma, mb, sh = _add_params(rng)
    m.vec(DEPTH, 0, 0x1000, _i8(rng, DEPTH, ab), ma=ma, mb=mb, shift=sh)
    m.vec(DEPTH, 0, 0x2000, _i8(rng, DEPTH, ab), mx=True)
    m.vec(DEPTH, 0, 0, _i8(rng, DEPTH, ab), mx=True, to_x=True)
    m.dump_x(0x3000)
    res = _run(sim, tmp_path, m, tag="rate")
    # cycles for DEPTH beats at full rate: ADD 1 element/cycle, MAX 1 beat/cycle; fill +
    # drain per command: measured +25 for ADD (residual_add's pipeline, split multiplies) and
    # MAX_FILL for MAX (the X read, its register, the pair FIFO, max_in, the kernel, the
    # output), one more to DRAM (the engine's wd_out slice)
    ideal = {"add": DEPTH * ab, "max": DEPTH}
    ideal["max to_x"] = ideal["max"]
    fill = {"add": 26 + VEC_WD_SLICE, "max": MAX_FILL + VEC_WD_SLICE, "max to_x": MAX_FILL}
    for (t0, t1), what in zip(res["vec"], ideal):
        cycles = t1 - t0
        print(f"W={w} {what}: {DEPTH} beats in {cycles} cycles: "
              f"{DEPTH * ab / cycles:.3f} element/cycle, {cycles / DEPTH:.2f} cycles/beat")
        assert cycles <= ideal[what] + fill[what], (what, cycles)
    # steady state on the DRAM side (beats 1 .. DEPTH-1 of each command)
    for k, what in enumerate(("add", "max")):
        edges = [e for _, e in res["wd"][k * DEPTH:(k + 1) * DEPTH]]
        assert edges[-1] - edges[1] <= ideal[what] * (DEPTH - 2) // DEPTH + 2, (what, edges[:8])
    edges = [e for _, e in res["wd"][DEPTH:2 * DEPTH]]
    print(f"W={w} max: first result beat {edges[0] - res['vec'][1][0]} cycles after the "
          f"command was taken")
    assert edges[-1] - edges[0] == DEPTH - 1             # MAX: one beat per cycle


#: X-region overlaps of a TO_X command (dst - x_off): in place, reading ahead of the writes,
#: and reading behind them at every distance up to past the engine's read-to-write latency
DISTS = [0, -1, -5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 20]
#: a MAX command's cycles beyond one per beat, to X (measured 9 with a one-stage maxpool
#: kernel: the X read, its register, the pair FIFO, max_in, the kernel, the output register)
MAX_FILL = 8 + kernel_latencies(8)["max"]
#: cycles from a read of X to the first read that may see its result written (measured:
#: the X read, its register, the pair FIFO, max_in, the kernel, the output register, the write)
RD_TO_RD = MAX_FILL + 1


@pytest.mark.parametrize("w", WIDTHS)
@pytest.mark.parametrize("gates", [pytest.param({}, id="full_rate"),
                                   pytest.param(GATES, id="gaps")])
def test_to_x_overlap(block_sim, tmp_path, w, gates):
    """MAX TO_X chains whose write range overlaps the read range at each distance of
    ``DISTS`` (and ADD TO_X at distances 1 and 2), each command reading what the previous
    ones wrote: the sequential, element-by-element result (a read of X[x_off + r] sees the
    write of beat r - (dst - x_off)) with reads back to back, without and with random gaps.
    At full rate: in place and reading ahead take n cycles plus the fill (no read waits), a
    distance at or beyond the read-to-write latency too; a shorter one at most that latency
    per distance's worth of beats."""
    sim = _sim(block_sim, w)
    ab = w // 8
    rng = np.random.default_rng(400 + w + len(gates))
    m = Model(ab)
    n = 24
    m.load_x(0, _i8(rng, DEPTH, ab))
    lo = 5                                  # room below for negative distances
    for d in DISTS:
        x_off = lo if d >= 0 else lo - d
        m.vec(n, x_off, x_off + d, _i8(rng, n, ab), mx=True, to_x=True)
    for d in (1, 2):
        ma, mb, sh = _add_params(rng)
        m.vec(n, lo, lo + d, _i8(rng, n, ab), ma=ma, mb=mb, shift=sh, relu=True, to_x=True)
    m.vec(n, lo + 3, lo + 4, _i8(rng, n, ab), mx=True)          # to DRAM after the chain
    m.dump_x(0x8000)
    res = _run(sim, tmp_path, m, tag="overlap", seed=9, **gates)
    if gates:
        return
    cyc = {d: t1 - t0 for d, (t0, t1) in zip(DISTS, res["vec"])}
    print(f"W={w} MAX TO_X, {n} beats, cycles by dst - x_off: {cyc}")
    for d in (0, -1, -5, RD_TO_RD, 16, 20):
        assert cyc[d] <= n + MAX_FILL, (d, cyc[d])
    for d in DISTS:
        if d > 0:     # d beats per read-to-dependent-read latency, at most 1 per cycle
            assert cyc[d] <= max(n, -(-n // d) * RD_TO_RD) + MAX_FILL, (d, cyc[d])
    assert cyc[1] > 2 * n            # distance 1 waits for each write: the order is enforced


@pytest.mark.parametrize("w", WIDTHS)
def test_max_backpressure(block_sim, tmp_path, w):
    """MAX to DRAM at one beat per cycle under write-data back-pressure alone (``wd_ready``
    random, S and X always ready): every beat bit-exact and in order, and the command as fast
    as the write side lets it (the kernels' output FIFOs hold the beats and their credits hold
    the lanes back in step, the pair FIFO's credits stop the issue)."""
    sim = _sim(block_sim, w)
    ab = w // 8
    rng = np.random.default_rng(500 + w)
    m = Model(ab)
    m.load_x(0, _i8(rng, DEPTH, ab))
    for k in range(3):
        m.vec(DEPTH, 0, 0x1000 * (k + 1), _i8(rng, DEPTH, ab), mx=True)
    p_wd = 0.5
    res = _run(sim, tmp_path, m, tag="bp", seed=13, p_wd=p_wd)
    for k, (t0, t1) in enumerate(res["vec"]):
        edges = [e for _, e in res["wd"][k * DEPTH:(k + 1) * DEPTH]]
        print(f"W={w} max, wd_ready p={p_wd}: {DEPTH} beats in {t1 - t0} cycles")
        # about DEPTH / p_wd cycles; the serial engine took DEPTH * AB
        assert edges[-1] - edges[0] <= 1.5 * DEPTH / p_wd, (k, edges[-1] - edges[0])


@pytest.mark.parametrize("w", WIDTHS)
def test_lut(block_sim, tmp_path, w):
    """LUT_SET then LUT (to DRAM, n = 1, TO_X), a second table, ADD and MAX between LUT
    commands (their kernels and the pair FIFO's credits untouched by the table path, also
    after LUT beat counts that are not a multiple of the FIFO depth); random gaps
    everywhere."""
    sim = _sim(block_sim, w)
    ab = w // 8
    rng = np.random.default_rng(200 + w)
    m = Model(ab)
    m.load_x(0, _i8(rng, DEPTH, ab))
    m.lut_set(rng.integers(-128, 128, 256))
    m.lut(40, 0x1000, _i8(rng, 40, ab))
    m.lut(1, 0x2000, np.arange(-128, -128 + ab))
    m.lut(3, 0x2040, _i8(rng, 3, ab))          # 4 LUT beats since the last multiple of 8:
    ma, mb, sh = _add_params(rng)              # the ADD must still get its pair FIFO
    m.vec(7, 2, 0x2100, _i8(rng, 7, ab), ma=ma, mb=mb, shift=sh, relu=True)
    m.lut_set(np.arange(127, -129, -1))
    m.lut(DEPTH, 0x3000, np.arange(DEPTH * ab).reshape(DEPTH, ab) % 256 - 128)
    m.lut(9, 30, _i8(rng, 9, ab), to_x=True)
    m.vec(5, 28, 0x4000, _i8(rng, 5, ab), mx=True)
    m.dump_x(0x8000)
    _run(sim, tmp_path, m, **GATES)


@pytest.mark.parametrize("w", WIDTHS)
def test_lut_rate(block_sim, tmp_path, w):
    """No back-pressure: LUT maps one beat per cycle (n + a fixed latency per command)."""
    sim = _sim(block_sim, w)
    ab = w // 8
    rng = np.random.default_rng(5)
    m = Model(ab)
    m.lut_set(rng.integers(-128, 128, 256))
    for _ in range(2):
        m.lut(DEPTH, 0x1000, _i8(rng, DEPTH, ab))
    res = _run(sim, tmp_path, m, tag="lut_rate")
    for t0, t1 in res["vec"][1:]:
        print(f"W={w} lut: {DEPTH} beats in {t1 - t0} cycles")
        assert t1 - t0 <= DEPTH + 8
    edges = [e for _, e in res["wd"][:DEPTH]]
    assert edges[-1] - edges[0] == DEPTH - 1           # one beat per cycle


@pytest.mark.parametrize("w", WIDTHS)
def test_mul(block_sim, tmp_path, w):
    """MUL same-shape (X period 0), broadcast (X period = a vector of 1, 2, 3 beats re-read per
    pixel), extreme multipliers, between ADD/MAX/LUT commands; random gaps everywhere."""
    sim = _sim(block_sim, w)
    ab = w // 8
    rng = np.random.default_rng(300 + w)
    m = Model(ab)
    m.load_x(0, _i8(rng, DEPTH, ab))
    m0, sh = q.quantize_multiplier(0.37 / 127)
    m.vec(DEPTH, 0, 0x1000, _i8(rng, DEPTH, ab), ma=m0, shift=sh, mul=True)
    m.vec(12, 5, 0x2000, _i8(rng, 12, ab), ma=m0, mb=1, shift=sh, mul=True)
    m.vec(12, 9, 0x2100, _i8(rng, 12, ab), ma=(1 << 31) - 1, mb=3, shift=0, mul=True)
    ma, mb, sh2 = _add_params(rng)
    m.vec(4, 1, 0x2200, _i8(rng, 4, ab), ma=ma, mb=mb, shift=sh2)
    m.vec(10, 30, 0x2300, _i8(rng, 10, ab), ma=1 << 30, mb=2, shift=31, mul=True)
    m.lut_set(rng.integers(-128, 128, 256))
    m.lut(3, 0x2400, _i8(rng, 3, ab))
    m.vec(6, 40, 0x2500, _i8(rng, 6, ab), ma=m0, mb=2, shift=sh, mul=True)
    m.vec(5, 28, 0x4000, _i8(rng, 5, ab), mx=True)
    _run(sim, tmp_path, m, **GATES)


def test_refuses_wrong_kernels():
    from pycde import Input, Module, Output
    from pycde.types import Bits

    from pycde_accel.rtl_lib.vector_engine import make_vector_engine

    class NotAKernel(Module):
        y = Output(Bits(8))
        t0 = Input(Bits(8))

    with pytest.raises(ConfigError, match="lacks ports"):
        make_vector_engine(_config(32), NotAKernel, NotAKernel)


@pytest.mark.slow
@pytest.mark.parametrize("w", WIDTHS)
def test_random_programs(block_sim, tmp_path, w):
    """Random programs: LOAD X runs, ADD/MAX with random n, RELU, frontend multipliers, TO_X
    with every kind of overlap of [dst, dst+n) with [x_off, x_off+n) (the in-order reading),
    X read back at the end; heavier random gaps."""
    sim = _sim(block_sim, w)
    ab = w // 8
    rng = np.random.default_rng(1000 + w)
    m = Model(ab)
    m.load_x(0, _i8(rng, DEPTH, ab))
    for k in range(40):
        n = int(rng.choice([1, 2, int(rng.integers(1, DEPTH + 1))]))
        x_off = int(rng.integers(0, DEPTH - n + 1))
        mx, relu = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
        ma, mb, sh = _add_params(rng)
        kind = rng.integers(0, 4)
        if kind == 0 and DEPTH > n:       # to X, overlapping at a random distance
            lo, hi = max(0, x_off - n + 1), min(DEPTH - n, x_off + n - 1)
            dst, to_x = int(rng.integers(lo, hi + 1)), True
        elif kind == 1:                   # in place
            dst, to_x = x_off, True
        elif kind == 2 and rng.integers(0, 4) == 0:
            index = int(rng.integers(0, DEPTH - n + 1))
            m.load_x(index, _i8(rng, n, ab))
            continue
        else:                             # to DRAM
            dst, to_x = 0x10000 + 64 * k * DEPTH, False
        m.vec(n, x_off, dst, _i8(rng, n, ab), ma=ma, mb=mb, shift=sh, mx=mx, relu=relu,
              to_x=to_x)
    m.dump_x(0x80000)
    _run(sim, tmp_path, m, seed=11, p_s=0.4, p_x=0.5, p_wc=0.3, p_wd=0.3)


@pytest.mark.parametrize("target", ["ecp5-85f", "xc7a100t"])
def test_x_buffer_write_starts_at_the_engines_flops(tmp_path, target):
    """An X beat from outside goes into the engine's ``x_wr_pend`` register before the block
    RAM: X's write address and data depend on no input port (the read router's output mux ->
    X's write data across the die was the placed 8x8's critical path on seed 2 at af39b54),
    and the input port reaches the pending register."""
    import re

    from pycde_accel.assemble import emit_vector_engine

    from .sv_cone import cone

    cfg = _config(64).replace(target=target)
    em = emit_vector_engine(cfg, tmp_path / "sv", work_dir=tmp_path / "k")
    sv = (tmp_path / "sv" / f"{em.top}.sv").read_text()
    m = re.search(r"x_mem\[([^;]*?)\]\s*<=\s*([^;]*);", sv)
    if target.startswith("ecp5"):      # DP16KD instances: the write port's pins
        assert not m
        pins = re.findall(r"\.(?:DIA|ADA)\d+\s*\(([^()]*)\)", sv)
        assert pins and re.search(r"\bx_mem_ebr0\b", sv), "no DP16KD write port of x_mem"
        seen = cone(sv, " ".join(pins))
    else:
        assert m, "no write of x_mem"
        seen = cone(sv, m.group(1) + " " + m.group(2))
    assert "x_wr_pend_data" in seen and "x_wr_pend_index" in seen, sorted(seen)
    ports = {"x_wr_data", "x_wr_index", "x_wr_valid"}
    assert not ports & seen, sorted(ports & seen)
    assert re.search(r"x_wr_pend_data\s*<=\s*x_wr_data\s*;", sv)


def test_x_wr_ready_does_not_wait_on_the_dram_side(tmp_path):
    """``x_wr_ready_q``'s next value is made from the output register, the kernels' result
    valids and the command, not from the DRAM-bound slice's handshake through y_ready
    (wd_out_skid_v -> the take -> the kernels' output FIFOs -> x_wr_ready_q was the placed
    8x8's critical path on seed 2 at bd973bd). That it is still low whenever the engine
    writes X is the random tests' (a TO_X result and an X beat in the same cycle)."""
    from pycde_accel.assemble import emit_vector_engine

    from .sv_cone import leaves, next_value

    em = emit_vector_engine(_config(64), tmp_path / "sv", work_dir=tmp_path / "k")
    sv = (tmp_path / "sv" / f"{em.top}.sv").read_text()
    src = leaves(sv, next_value(sv, "x_wr_ready_q"))
    assert {"out_valid_q", "cmd_to_x", "v_to_x"} <= src, sorted(src)
    bad = sorted(n for n in src if n.startswith("wd_") or n in ("wc_pending", "pair_occupancy"))
    assert not bad, bad


def test_each_max_lane_has_its_own_valid_copy(tmp_path):
    """Each MAX lane's kernel gets its valids from a kept copy of ``max_in``'s valid whose next
    value is made from that lane's own ready, not from ``max_in_v`` or another lane's ready
    (max_in_v into every lane put max_kernel0's element take beside the slice: a 2.90 ns
    route there and 2.86 ns back, the placed 8x8's critical path on seed 1 at 2094307). That
    the lanes still take every pair is the MAX tests' above."""
    import re

    from pycde_accel.assemble import emit_vector_engine

    em = emit_vector_engine(_config(64), tmp_path / "sv", work_dir=tmp_path / "k")
    sv = (tmp_path / "sv" / f"{em.top}.sv").read_text()
    lanes = re.findall(r"\n\s*\w+ max_kernel(\d+) \((.*?)\);", sv, re.S)
    assert len(lanes) == 8, [k for k, _ in lanes]
    for k, ports in lanes:
        for port in ("t0_valid", "t1_valid"):
            m = re.search(rf"\.{port}\s*\((\w+)\)", ports)
            assert m and m.group(1) == f"_max_in_v_lane_{k}_q", (k, port, m and m.group(1))
        copy = re.search(rf"pycde_accel_keep_ff max_in_v_lane_{k} \((.*?)\);", sv, re.S)
        assert copy, k
        d = re.search(r"\.d\s*\((.*?)\),\s*\.q", copy.group(1), re.S).group(1)
        names = set(re.findall(r"[A-Za-z_]\w*", d))
        assert f"_max_kernel{k}_t0_ready" in names, (k, sorted(names))
        others = sorted(n for n in names if re.fullmatch(r"_max_kernel\d+_t0_ready", n)
                        and n != f"_max_kernel{k}_t0_ready")
        assert not others and "max_in_v" not in names, (k, sorted(names))


@pytest.mark.parametrize("target", ["ecp5-85f", "xc7a100t"])
def test_the_x_buffer_read_is_registered_inside_the_block_on_ecp5(tmp_path, target):
    """On ECP5 the X buffer is DP16KD blocks with their output register on (``x_ebr``), which
    replaces the fabric register ``x_beat_q`` behind the read: x_mem's 5.83 ns clock-to-out
    and a 1.44 ns route to x_beat_q were a placed 8x8 path on seed 1 at 3ea0699. The DP16KD
    model is then a simulation-only source. Other targets keep the inferred memory and
    ``x_beat_q``. The read latency is the same (the random tests above run the ECP5 form)."""
    import re

    from pycde_accel.assemble import emit_vector_engine
    from pycde_accel.rtl_lib import ecp5_ebr, vector_engine

    cfg = _config(64).replace(target=target)
    em = emit_vector_engine(cfg, tmp_path / "sv", work_dir=tmp_path / "k")
    sv = (tmp_path / "sv" / f"{em.top}.sv").read_text()
    inst = re.findall(r"DP16KD #\((.*?)\) (x_mem_ebr\d+) \(", sv, re.S)
    if target.startswith("ecp5"):
        assert len(inst) == ecp5_ebr.ebr_blocks(64, cfg.spad_c_depth) >= 2, [n for _, n in inst]
        for params, name in inst:
            assert 'REGMODE_B("OUTREG")' in params, name
        assert not re.search(r"reg\s+\[63:0\]\s+x_beat_q", sv)
        assert vector_engine.sim_models(cfg) == [ecp5_ebr.SIM_MODEL]
        assert ecp5_ebr.SIM_MODEL.name in {m.name for m in em.sim_models}
        assert ecp5_ebr.SIM_MODEL.name not in em.filelist.read_text()
    else:
        assert inst == [] and vector_engine.sim_models(cfg) == []
        assert re.search(r"reg\s+\[63:0\]\s+x_beat_q", sv)


def test_the_kernels_take_the_pair_fifo_head_from_its_register(tmp_path):
    """The pair FIFO's head is a register (``pairs_head``, ``Queue(head=True)``): the byte
    selects into the MUL and ADD kernels' inputs and the MAX slice start at it, not at the
    LUT-RAM read of ``pairs_rd`` (the read -> the byte mux -> the input slice -> the MUL
    kernel's input, five LUTs, was the placed 8x8's worst path on seed 2 at de882f7, 7.88 ns).
    The cycles are the random tests' above."""
    import re

    from pycde_accel.assemble import emit_vector_engine

    from .sv_cone import definitions, leaves, next_value

    em = emit_vector_engine(_config(64), tmp_path / "sv", work_dir=tmp_path / "k")
    sv = (tmp_path / "sv" / f"{em.top}.sv").read_text()
    defs = definitions(sv)
    # (the head register may carry the name of a wire it drives: CIRCT names it)
    regs = set(re.findall(r"reg\s+\[127:0\]\s+(\w+);", sv))
    for reg in ("a_in_skid_d", "b_in_skid_d", "max_in_skid_d"):
        src = leaves(defs, next_value(sv, reg))
        assert not [n for n in src if n.startswith("pairs_")], (reg, sorted(src))
        assert src & regs, (reg, sorted(src))
