"""The compiler from layer descriptors to accelerator command lists (the schedules).

The commands and their encoding are :mod:`.encoding` (from :mod:`pycde_accel.contract`; the
command set is described in docs/accelerator-contract.md); their names are re-exported here.

:func:`compile_layer` turns one descriptor of the layer program into its command list; the
descriptor alone (addresses, strides, tiling fields) determines the commands.

GEMM schedule (loop order and block from the descriptor, :mod:`.tiling`): the stationary operand's
block of panels sits in one bank (slot s at word ``s * ceil(K/AB)``), the streamed operand's panel
in the other scratchpad, one panel per bank, double-buffered. Program order per streamed panel::

    LOAD next streamed panel (COMMIT)           # into the free bank: overlaps this panel's EXECs
    LOAD a share of the next stationary block   # (COMMIT on its last), spread over the panels
    for each stationary slot: EXEC (REL_<stream> on the last slot, REL_<stat> on the block's
                              last tile), [LOAD P window if the tile's records are not resident],
                              STORE

so a LOAD never waits for a bank that is not released by an EXEC earlier in program order, and
the load engine always runs one panel ahead of the core. Parameter records: one LOAD P at the start
when ``n_tiles * C <= spad_c_depth`` (or one record, PER_TENSOR). Otherwise P is double-buffered:
windows of ``(spad_c_depth / 2) // C`` n-tiles (a B-stationary block is one window) alternate
between its two halves; the LOAD P of a new window goes right before the load of the streamed
panel its first tiles use. The accelerator dispatches a LOAD P only when every earlier STORE is
done (so the half it overwrites is free), and the tiles' EXECs wait for the COMMIT of the panel
loaded after it (so the records are in P before their STOREs).

K longer than a bank (:func:`.tiling.k_chunk`): :func:`_gemm_split`, per tile its K chunks as
EXECs with CHAIN on all but the last (the partial sums stay in the core), each chunk's A and B
loads cut from the whole panel's at word boundaries (:func:`_clip`), one chunk ahead of the core.
Commands whose beats/rows/n would overflow a 16-bit field are split (:func:`_split_wide`).

Partial tiles: the A LOAD moves only the valid rows (lanes past M keep stale data; STORE drops
those rows); B lanes past N are zero in a packed weight, stale for an activation B (those columns
land in the output's padding). Conv (IM2COL): one lane per output pixel; each panel takes the
shorter of two forms: per pixel (LANES clear: runs of ``KW*Pin`` bytes at stride ``in_stride_h``,
one LOAD for a run of in-bounds kernel rows, ZERO loads for padding taps) or per kernel row
(LANES set: the same run of consecutive pixels of one output row is one LOAD, rows = pixels at
stride ``sw*Pin``; ZERO|LANES for padding taps of consecutive pixels). MAXPOOL: per output row, groups of pixels whose ``ceil(P/AB)``-beat
channel vectors fit the X buffer: LOAD X tap 0 (a tap valid for the whole group), then LOAD S +
VEC MAX TO_X per other tap (only its valid pixel range: padding taps are skipped, -128 being the
identity of max), the last VEC to DRAM. ADD/RELU: chunks of ``spad_c_depth`` beats over the
operands' common padded span: LOAD X a, LOAD S b, VEC ADD (a standalone RELU is ``VEC ADD`` of
``a`` with itself, ma=1, mb=0, shift 0, RELU). VMAX: see :func:`_vmax`; GATHER: :func:`_gather`.
LUT: LOAD S of the 256-byte table and
``VEC LUT_SET`` (the table into the vector engine's table memory), then per chunk of at most
:data:`LUT_CHUNK` beats LOAD S of the input and ``VEC LUT`` to DRAM: the input streams through
S, so the next chunk's LOAD is not held behind the VEC (a LOAD X would be) and the read and
write DMAs overlap. MUL of same-shape operands: as ADD (LOAD X a, LOAD S b, VEC MUL per
chunk); broadcast (BCAST): per image LOAD X of b's channel vector (``pitch / AB`` beats), then
per chunk of whole pixels LOAD S of a and ``VEC MUL`` with X period ``mb = pitch / AB``, so the
vector is re-read from X for every pixel and read from DRAM once per image. COPY is refused: the command set cannot reorder
bytes within a beat (the compiler transposes on the array instead, see compile.py).

WGEMM (grouped/depthwise conv, average pooling, :class:`~.program.WinGemm`): B-stationary per
n-tile (its weight panel, K = taps * slice; W_SHARED: one panel for all, released at the end),
the output pixels cut into tiles of at most R consecutive pixels at one output step and, for the
average modes, one record (a tile's STORE uses its window class's record, PER_TENSOR). Per tile
the A panel is the shorter of: per tap, the same piece of consecutive lanes at a constant address
step as one LANES LOAD (ZERO|LANES for padding taps); or per lane, each run of its taps at a
constant address step as one 2-D LOAD. Program order: LOAD P (all records, or the n-tile's C
records into alternating halves of P), B(0), A(0); per tile: A(next) (the next n-tile's first),
B(next n-tile) at its first tile, EXEC (REL_A; REL_B on the n-tile's last), STORE. MAXPOOLD is
MAXPOOL with the taps placed by the dilation. DEPTHWISE (the core's depthwise mode): the same
schedule with K = taps (one A word per tap), a B panel of ``ceil(taps / AB)`` words per lane
and EXEC DW.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .. import contract
from ..config import AccelConfig
from ..errors import UserError
from . import program as P
# the encoding (re-exported: the command values are used under these names throughout)
from .encoding import (CMD_BYTES, CMD_WORDS, COMMANDS, COMMIT, DST_A, DST_B, DW,  # noqa: F401
                       DST_NAMES, DST_P, DST_S, DST_X, LANES, OP_EXEC, OP_LOAD, OP_STORE,
                       OP_VEC, REL_A, REL_B, CHAIN, S_PER_TENSOR, S_RELU, V_LUT, V_LUT_SET, V_MAX, V_ROWRED,
                       V_MUL, V_RELU, V_TO_X, ZERO,
                       _FLAG_NAMES, Command, Exec, Load, Store, Vec, decode, decode_bytes,
                       encode_list)
from .tiling import ceil_div, k_chunk, k_chunks


# ------------------------------------------------------------------------------------------
# Compiler: descriptor -> commands
# ------------------------------------------------------------------------------------------

def _refuse(d, why: str) -> UserError:
    who = f"layer {d.index} {d.name or ''} ({d.KIND})".replace("  ", " ")
    mod = f" in module {d.module}" if d.module else ""
    return UserError(f"{who}{mod}: {why}")


@dataclass
class LayerCommands:
    """One layer's commands and the figures derived from them."""
    index: int
    name: str
    op: str
    commands: list
    tiles: int = 0
    macs: int = 0                 # the array's MACs for the layer's outputs, channel padding
    #                               included: every valid output's K (GEMM batch * M * N * K,
    #                               WGEMM pixels * N * taps * slice); model MACs are Node.macs
    exec_cycles: int = 0          # sum of EXEC K: the core's streaming cycles (compute bound)
    bytes_read: int = 0           # DMA bytes read by LOADs (ZERO loads read nothing)
    bytes_written: int = 0        # DMA bytes written by STOREs and VECs to DRAM
    cmd_addr: int = 0

    def count(self, axi: int, cols: int) -> None:
        self.tiles = sum(isinstance(c, Exec) and not c.flags & CHAIN for c in self.commands)
        self.exec_cycles = sum(c.K for c in self.commands if isinstance(c, Exec))
        self.bytes_read = sum(c.rows * c.beats * axi for c in self.commands
                              if isinstance(c, Load) and not c.flags & ZERO)
        self.bytes_written = sum(c.valid_rows * cols for c in self.commands if isinstance(c, Store)) + \
            sum(c.n * axi for c in self.commands if isinstance(c, Vec)
                and not c.flags & (V_TO_X | V_LUT_SET))


class _Ctx:
    def __init__(self, cfg: AccelConfig):
        self.R, self.C = cfg.rows, cfg.cols
        self.AB = cfg.axi_data_width // 8
        self.cfg = cfg


def compile_layer(d: P.Descriptor, cfg: AccelConfig) -> LayerCommands:
    """The command list of one layer descriptor (UserError when the layer cannot be expressed)."""
    x = _Ctx(cfg)
    sched = SCHEDULERS.get(d.KIND)
    if sched is None:
        raise _refuse(d, "a strided COPY cannot be expressed in accelerator commands (LOAD/VEC move "
                         "whole beats, nothing reorders bytes within a beat)")
    cmds, macs = sched(d, x)
    cmds = _split_wide(cmds, x)
    for c in cmds:      # the fields the engines decode narrower than a word (the contract's)
        for f, v, bits in contract.fields_out_of_range(c.SPEC, vars(c)):
            raise _refuse(d, f"{c.KIND} field {f}={v} does not fit the engines' "
                             f"{bits}-bit field (split the layer)")
    lc = LayerCommands(d.index, d.name, d.KIND, cmds, macs=macs)
    lc.count(x.AB, x.C)
    return lc


_F16 = 0xFFFF          # the largest value of a 16-bit field


def _split_wide(cmds: list, x: _Ctx) -> list:
    """Commands whose beats, rows (LOAD) or n (VEC) exceed the engines' 16-bit fields, as
    several commands that do the same (commands that fit are returned as they are): a LOAD cut
    into pieces of rows, a 1-row LOAD into pieces of beats (into P whole records), each piece at
    its own destination index/word, COMMIT on the last piece only; a VEC into pieces of beats
    of X, S and the result, in order. EXEC K is split by the GEMM schedule itself (K chunks)."""
    if not any((isinstance(c, Load) and (c.beats > _F16 or c.rows > _F16))
               or (isinstance(c, Vec) and c.n > _F16) for c in cmds):
        return cmds
    AB = x.AB
    out = []
    for c in cmds:
        if isinstance(c, Vec) and c.n > _F16:
            step = 1 if c.flags & V_TO_X else AB
            for o in range(0, c.n, _F16):
                out.append(dataclasses.replace(c, n=min(_F16, c.n - o), x_off=c.x_off + o,
                                               dst=c.dst + o * step))
            continue
        if not isinstance(c, Load) or (c.beats <= _F16 and c.rows <= _F16):
            out.append(c)
            continue
        lanes = c.flags & LANES and c.dst in (DST_A, DST_B)
        pieces = []       # (addr, beats, rows, index, word): beats * r0 + b0 beats into the dst

        def at(r0, b0):
            """Destination index/word of beat b0 of row r0."""
            n = r0 * c.beats + b0
            if c.dst in (DST_A, DST_B):
                return (c.index + r0, c.word + b0) if lanes else (c.index, c.word + n)
            if c.dst == DST_P:
                return c.index + n * AB // P.PARAM_RECORD_BYTES, c.word
            return (c.index + n, c.word) if c.dst == DST_X else (c.index, c.word)
        if c.beats <= _F16:
            for r0 in range(0, c.rows, _F16):
                pieces.append((c.addr + r0 * c.stride, c.beats, min(_F16, c.rows - r0)) + at(r0, 0))
        else:
            unit = max(1, P.PARAM_RECORD_BYTES // AB) if c.dst == DST_P else 1
            step = _F16 // unit * unit
            for r0 in range(c.rows):
                for b0 in range(0, c.beats, step):
                    pieces.append((c.addr + r0 * c.stride + (0 if c.flags & ZERO else b0 * AB),
                                   min(step, c.beats - b0), 1) + at(r0, b0))
        for i, (addr, beats, rows, index, word) in enumerate(pieces):
            fl = c.flags if i == len(pieces) - 1 else c.flags & ~COMMIT
            out.append(dataclasses.replace(c, addr=0 if c.flags & ZERO else addr, beats=beats,
                                           rows=rows, stride=c.stride if rows > 1 else 0,
                                           index=index, word=word, flags=fl))
    return out


# ---- GEMM ----------------------------------------------------------------------------------

def _check_aligned(d, x: _Ctx, **vals) -> None:
    for k, v in vals.items():
        if v % x.AB:
            raise _refuse(d, f"{k}={v} is not a multiple of the AXI beat ({x.AB} bytes)")


def _a_panel(d: P.Gemm, x: _Ctx, b: int, mt: int, word: int, window=None) -> list:
    """Loads of A panel (batch b, m-tile mt) into lanes 0..valid-1 at ``word``; with ``window``
    = (lo, hi) only words lo..hi-1 of the panel, at words 0.. (a K chunk, :func:`_clip`)."""
    R, AB = x.R, x.AB
    kw = ceil_div(d.K, AB)
    valid = min(R, d.M - mt * R)
    if not d.has(P.IM2COL):
        if d.a_stride_k != 1:
            raise _refuse(d, f"A is read as rows (a_stride_k must be 1, is {d.a_stride_k})")
        addr = d.a_base + b * d.a_stride_batch + mt * R * d.a_stride_m
        stride = d.a_stride_m if valid > 1 else 0
        _check_aligned(d, x, a_addr=addr, a_stride_m=stride)
        ld = [Load(DST_A, addr, kw, valid, stride, 0, word, LANES)]
        return ld if window is None else _clip(ld, *window, x.AB)
    kh_, kw_ = P.unpack2(d.kernel)
    sh, sw = P.unpack2(d.stride)
    ph, pw = P.unpack2(d.pad)
    pin = d.in_c
    if d.in_stride_c != 1 or d.in_stride_w != pin or pin % AB or d.K != kh_ * kw_ * pin:
        raise _refuse(d, f"im2col needs a channels-last input with the channel pitch as the pixel "
                         f"stride (in_c={pin}, strides c={d.in_stride_c} w={d.in_stride_w}) and "
                         f"K = KH*KW*pitch")
    tb = pin // AB                                      # beats per tap
    per_lane = _im2col_per_lane(d, x, mt, valid, word, tb)
    per_row = _im2col_per_kernel_row(d, x, mt, valid, word, tb)
    if window is not None:
        per_lane, per_row = _clip(per_lane, *window, AB), _clip(per_row, *window, AB)
    return per_row if len(per_row) < len(per_lane) else per_lane


def _clip(loads: list, lo: int, hi: int, AB: int) -> list:
    """The A/B loads ``loads`` (of a whole panel at word 0) cut to the panel's words lo..hi-1,
    moved to word 0: the LOADs of one K chunk (k = lo*AB ..). A LANES load keeps its lanes and
    loses the words outside; a LANES-clear load (rows one after the other in one lane) keeps
    its whole rows inside as one 2-D load and the cut rows at either end as 1-row loads."""
    out = []
    for ld in loads:
        zero = ld.flags & ZERO

        def piece(addr, beats, rows, stride, word):
            out.append(dataclasses.replace(ld, addr=0 if zero else addr, beats=beats, rows=rows,
                                           stride=stride if rows > 1 else 0, word=word - lo))
        if ld.flags & LANES:
            a, e = max(ld.word, lo), min(ld.word + ld.beats, hi)
            if a < e:
                piece(ld.addr + (a - ld.word) * AB, e - a, ld.rows, ld.stride, a)
            continue
        n, full = ld.beats, []
        for r in range(ld.rows):
            w0 = ld.word + r * n
            a, e = max(w0, lo), min(w0 + n, hi)
            if a >= e:
                continue
            addr = ld.addr + r * ld.stride + (a - w0) * AB
            if (a, e) == (w0, w0 + n):
                full.append((addr, w0))
                continue
            if full:
                piece(full[0][0], n, len(full), ld.stride, full[0][1])
                full = []
            piece(addr, e - a, 1, 0, a)
        if full:
            piece(full[0][0], n, len(full), ld.stride, full[0][1])
    return out


def _pixel(d: P.Gemm, m: int):
    n, rem = divmod(m, d.out_h * d.out_w)
    oh, ow = divmod(rem, d.out_w)
    return n, oh, ow


def _row_pieces(d: P.Gemm, n, oh, ow, ki, tb):
    """Pieces of kernel row ki of one pixel's A row: ("z", beats) or ("r", addr, beats, full)."""
    kh_, kw_ = P.unpack2(d.kernel)
    sh, sw = P.unpack2(d.stride)
    ph, pw = P.unpack2(d.pad)
    ih = oh * sh + ki - ph
    if not 0 <= ih < d.in_h:
        return [("z", kw_ * tb)]
    iw0 = ow * sw - pw
    j0, j1 = max(0, -iw0), min(kw_, d.in_w - iw0)
    if j1 <= j0:
        return [("z", kw_ * tb)]
    out = [("z", j0 * tb)] if j0 else []
    addr = d.a_base + n * d.a_stride_batch + ih * d.in_stride_h + (iw0 + j0) * d.in_c
    out.append(("r", addr, (j1 - j0) * tb, j0 == 0 and j1 == kw_))
    if j1 < kw_:
        out.append(("z", (kw_ - j1) * tb))
    return out


def _im2col_per_lane(d: P.Gemm, x: _Ctx, mt: int, valid: int, word: int, tb: int) -> list:
    """One lane at a time (LANES clear): a pixel's in-bounds kernel rows in one 2-D LOAD."""
    kh_, _ = P.unpack2(d.kernel)
    out = []
    for i in range(valid):
        n, oh, ow = _pixel(d, mt * x.R + i)
        merged = []
        for ki in range(kh_):
            for p in _row_pieces(d, n, oh, ow, ki, tb):
                last = merged[-1] if merged else None
                if p[0] == "z" and last and last[0] == "z":
                    merged[-1] = ("z", last[1] + p[1])
                elif (p[0] == "r" and p[3] and last and last[0] == "R" and last[4] and last[2] == p[2]
                      and p[1] == last[1] + last[3] * d.in_stride_h):
                    merged[-1] = ("R", last[1], last[2], last[3] + 1, True)
                elif p[0] == "r":
                    merged.append(("R", p[1], p[2], 1, p[3]))
                else:
                    merged.append(p)
        w = word
        for p in merged:
            if p[0] == "z":
                out.append(Load(DST_A, 0, p[1], 1, 0, i, w, ZERO))
                w += p[1]
            else:
                _, addr, beats, rows, _ = p
                stride = d.in_stride_h if rows > 1 else 0
                _check_aligned(d, x, in_addr=addr, in_stride_h=stride)
                out.append(Load(DST_A, addr, beats, rows, stride, i, w, 0))
                w += beats * rows
        assert w - word == ceil_div(d.K, x.AB)
    return out


def _im2col_per_kernel_row(d: P.Gemm, x: _Ctx, mt: int, valid: int, word: int, tb: int) -> list:
    """One kernel row at a time (LANES set): the same piece of consecutive lanes whose pixels
    are at a constant address step (an output row) is one 2-D LOAD, padding taps one ZERO load."""
    kh_, kw_ = P.unpack2(d.kernel)
    pix = [_pixel(d, mt * x.R + i) for i in range(valid)]
    out = []
    for ki in range(kh_):
        w0 = word + ki * kw_ * tb
        # (lane, word offset, piece) for every piece of every lane
        items = []
        for i, (n, oh, ow) in enumerate(pix):
            w = w0
            for p in _row_pieces(d, n, oh, ow, ki, tb):
                items.append((i, w, p))
                w += p[1] if p[0] == "z" else p[2]
        items.sort(key=lambda t: (t[1], t[2][0], t[0]))
        groups = []          # [first lane, count, word, piece, stride]
        for i, w, p in items:
            gr = groups[-1] if groups else None
            if gr and gr[2] == w and gr[0] + gr[1] == i and gr[3][0] == p[0]:
                if p[0] == "z" and gr[3][1] == p[1]:
                    gr[1] += 1
                    continue
                if p[0] == "r" and gr[3][2] == p[2]:
                    step = p[1] - gr[3][1] - (gr[1] - 1) * (gr[4] or 0)
                    if gr[1] == 1 and (p[1] - gr[3][1]) % x.AB == 0 and p[1] > gr[3][1]:
                        gr[4] = p[1] - gr[3][1]
                        gr[1] += 1
                        continue
                    if gr[1] > 1 and step == gr[4]:
                        gr[1] += 1
                        continue
            groups.append([i, 1, w, p, None])
        for i, cnt, w, p, stride in groups:
            if p[0] == "z":
                out.append(Load(DST_A, 0, p[1], cnt, 0, i, w, ZERO | LANES))
            else:
                st = stride if cnt > 1 else 0
                _check_aligned(d, x, in_addr=p[1], im2col_stride=st)
                out.append(Load(DST_A, p[1], p[2], cnt, st, i, w, LANES))
    return out


def _b_panel(d: P.Gemm, x: _Ctx, b: int, nt: int, word: int) -> list:
    C, AB = x.C, x.AB
    kw = ceil_div(d.K, AB)
    if d.has(P.B_PACKED):
        if d.b_stride_k != kw * AB:
            raise _refuse(d, f"packed B lanes must be round_up(K, AB)={kw * AB} bytes, not {d.b_stride_k}")
        addr = d.b_base + nt * d.b_stride_n
        _check_aligned(d, x, b_addr=addr)
        return [Load(DST_B, addr, kw, C, d.b_stride_k, 0, word, LANES)]
    if d.b_stride_k != 1:
        raise _refuse(d, f"B^T rows are not available (B is read as rows of B^T: b_stride_k must "
                         f"be 1, is {d.b_stride_k})")
    valid = min(C, d.N - nt * C)
    addr = d.b_base + b * d.b_stride_batch + nt * C * d.b_stride_n
    stride = d.b_stride_n if valid > 1 else 0
    _check_aligned(d, x, b_addr=addr, b_stride_n=stride)
    return [Load(DST_B, addr, kw, valid, stride, 0, word, LANES)]


def _with_commit(cmds: list) -> list:
    return cmds[:-1] + [dataclasses.replace(cmds[-1], flags=cmds[-1].flags | COMMIT)]


def _gemm(d: P.Gemm, x: _Ctx) -> list:
    R, C, AB, cfg = x.R, x.C, x.AB, x.cfg
    K = d.K
    kw = ceil_div(K, AB)
    if not 1 <= K <= cfg.max_k:
        raise _refuse(d, f"K={K} outside 1..max_k={cfg.max_k}")
    if d.m_tiles != ceil_div(d.M, R) or d.n_tiles != ceil_div(d.N, C) or d.block < 1:
        raise _refuse(d, "tile counts do not match M, N and the array")
    split = K > k_chunk(cfg)
    if split and d.block != 1:
        raise _refuse(d, f"K={K} is split into chunks of {k_chunk(cfg)}: the core keeps one "
                         f"tile's sums, so the block must be 1, not {d.block}")
    a_stat = d.order == P.A_STATIONARY
    depth = (cfg.spad_a_depth if a_stat else cfg.spad_b_depth) // AB        # words per lane
    if not split and d.block * kw > depth:
        raise _refuse(d, f"a block of {d.block} panels of {kw} words does not fit the scratchpad")
    per_tensor = d.has(P.PER_TENSOR)
    n_rec = d.n_tiles * C
    cap = cfg.spad_c_depth
    resident = per_tensor or n_rec <= cap
    win = d.n_tiles if resident else (cap // 2) // C       # n-tiles per P window (half of P)
    if win < 1:
        raise _refuse(d, f"{n_rec} post-op records exceed config spad_c_depth={cap}, and half of it "
                         f"cannot hold the {C} records of one tile (double-buffered reloads)")
    if not resident and not a_stat and d.block > win:
        raise _refuse(d, f"a B-stationary block of {d.block} n-tiles needs more records than half "
                         f"of spad_c_depth={cap}")
    st_flags = (S_RELU if d.has(P.RELU) else 0) | (S_PER_TENSOR if per_tensor else 0)
    if split:
        return _gemm_split(d, x, a_stat, per_tensor, resident, win, st_flags)

    # blocks: (batch, stationary tiles, streamed tiles)
    blocks = []
    for b in range(d.batch):
        if a_stat:
            for m0 in range(0, d.m_tiles, d.block):
                blocks.append((b, list(range(m0, min(m0 + d.block, d.m_tiles))), list(range(d.n_tiles))))
        else:
            for n0 in range(0, d.n_tiles, d.block):
                blocks.append((b, list(range(n0, min(n0 + d.block, d.n_tiles))), list(range(d.m_tiles))))

    def window(bi, si):
        """First n-tile of the records the tiles of streamed panel (bi, si) use."""
        if resident:
            return 0
        _, stat, stream = blocks[bi]
        return (stream[si] // win) * win if a_stat else stat[0]

    def stat_loads(bi):
        b, stat, _ = blocks[bi]
        f = _a_panel if a_stat else _b_panel
        return [f(d, x, b, t, s * kw) for s, t in enumerate(stat)]

    cmds: list = []
    p_state = {"window": None, "half": 1, "half_of": {}}

    def load_params(bi, si):
        """Before the load of streamed panel (bi, si): its tiles' records, if not loaded. A reload
        goes to the other half of P (STOREs still using the current half are not disturbed; the
        dispatcher holds it until every earlier STORE is done), and it precedes the panel whose
        COMMIT the tiles' EXECs wait for, so the records are in P before those STOREs run."""
        w = window(bi, si)
        if w != p_state["window"]:
            p_state["window"], p_state["half"] = w, 1 - p_state["half"]
            if per_tensor:
                cmds.append(Load(DST_P, d.p_base, ceil_div(P.PARAM_RECORD_BYTES, AB), 1, 0, 0, 0, 0))
            else:
                n = min(win, d.n_tiles - w) * C
                cmds.append(Load(DST_P, d.p_base + w * C * P.PARAM_RECORD_BYTES,
                                 n * P.PARAM_RECORD_BYTES // AB, 1, 0, p_state["half"] * (cap // 2), 0, 0))
        p_state["half_of"][(bi, si)] = (w, p_state["half"])

    def stream_load(bi, si):
        load_params(bi, si)
        b, _, stream = blocks[bi]
        return _with_commit((_b_panel if a_stat else _a_panel)(d, x, b, stream[si], 0))

    load_params(0, 0)                                     # P first: the store engine is idle
    first = stat_loads(0)
    cmds += _with_commit([c for p in first for c in p])
    cmds += stream_load(0, 0)
    for bi, (b, stat, stream) in enumerate(blocks):
        nxt_stat = stat_loads(bi + 1) if bi + 1 < len(blocks) else []
        share = ceil_div(len(nxt_stat), len(stream)) if nxt_stat else 0
        for si, st in enumerate(stream):
            if si + 1 < len(stream):
                cmds += stream_load(bi, si + 1)
            elif bi + 1 < len(blocks):
                cmds += stream_load(bi + 1, 0)
            if nxt_stat:
                part, nxt_stat = nxt_stat[:share], nxt_stat[share:]
                flat = [c for p in part for c in p]
                cmds += _with_commit(flat) if not nxt_stat else flat
            w, half = p_state["half_of"][(bi, si)]
            for s, t in enumerate(stat):
                mt, nt = (t, st) if a_stat else (st, t)
                last_slot = s == len(stat) - 1
                fl = 0
                if last_slot:
                    fl |= REL_B if a_stat else REL_A
                    if si == len(stream) - 1:
                        fl |= REL_A if a_stat else REL_B
                a_word, b_word = (s * kw, 0) if a_stat else (0, s * kw)
                cmds.append(Exec(K, a_word, b_word, fl))
                p_index = 0 if per_tensor else (0 if resident else half * (cap // 2)) + (nt - w) * C
                addr = d.c_base + b * d.c_stride_batch + mt * R * d.c_stride_m + nt * C
                valid = min(R, d.M - mt * R)
                stride = d.c_stride_m if valid > 1 else 0
                _check_aligned(d, x, c_addr=addr, c_stride_m=stride)
                cmds.append(Store(addr, valid, stride, p_index, st_flags))
    return cmds


def _gemm_split(d: P.Gemm, x: _Ctx, a_stat: bool, per_tensor: bool, resident: bool, win: int,
                st_flags: int) -> list:
    """A GEMM whose K does not fit a bank (tiling.py, "K splitting"): per tile, its K chunks as
    consecutive EXECs, CHAIN on all but the last, then its STORE. Program order::

        [LOAD P window] LOAD A chunk 0 (COMMIT), LOAD B chunk 0 (COMMIT)
        for each (tile, chunk): LOAD A, B of the next (tile, chunk) (COMMIT each; before a
                                tile's first chunk the LOAD P of its window if it is new)
                                EXEC chunk (REL_A | REL_B, CHAIN unless the tile's last chunk)
                                STORE after the tile's last chunk

    Each chunk's banks are released by its EXEC, so the LOAD of chunk c+1 fills the bank
    chunk c-1 released (earlier in program order: no deadlock) while chunk c runs. A LOAD P
    precedes the COMMITs its tile's EXECs wait for, and only STOREs of earlier tiles precede it."""
    R, C, AB, cap = x.R, x.C, x.AB, x.cfg.spad_c_depth
    chunks = k_chunks(d.K, x.cfg)
    tiles = []
    for b in range(d.batch):
        outer, inner = (d.m_tiles, d.n_tiles) if a_stat else (d.n_tiles, d.m_tiles)
        for o in range(outer):
            for i in range(inner):
                tiles.append((b, o, i) if a_stat else (b, i, o))
    steps = [(t, ci) for t in tiles for ci in range(len(chunks))]
    cmds: list = []
    p_state = {"window": None, "half": 1}
    tile_p = {}

    def loads(i):
        (b, mt, nt), ci = steps[i]
        out = []
        if ci == 0:
            w = 0 if resident else (nt // win) * win
            if w != p_state["window"]:
                p_state["window"], p_state["half"] = w, 1 - p_state["half"]
                if per_tensor:
                    out.append(Load(DST_P, d.p_base, ceil_div(P.PARAM_RECORD_BYTES, AB), 1, 0, 0, 0, 0))
                else:
                    n = min(win, d.n_tiles - w) * C
                    out.append(Load(DST_P, d.p_base + w * C * P.PARAM_RECORD_BYTES,
                                    n * P.PARAM_RECORD_BYTES // AB, 1, 0, p_state["half"] * (cap // 2),
                                    0, 0))
            tile_p[i] = (w, p_state["half"])
        k0, kl = chunks[ci]
        win_w = (k0 // AB, k0 // AB + ceil_div(kl, AB))
        out += _with_commit(_a_panel(d, x, b, mt, 0, win_w))
        out += _with_commit(_clip(_b_panel(d, x, b, nt, 0), *win_w, AB))
        return out

    cmds += loads(0)
    first = 0
    for i, ((b, mt, nt), ci) in enumerate(steps):
        if ci == 0:
            first = i
        if i + 1 < len(steps):
            cmds += loads(i + 1)
        last = ci == len(chunks) - 1
        cmds.append(Exec(chunks[ci][1], 0, 0, REL_A | REL_B | (0 if last else CHAIN)))
        if last:
            w, half = tile_p[first]
            p_index = 0 if per_tensor else (0 if resident else half * (cap // 2)) + (nt - w) * C
            addr = d.c_base + b * d.c_stride_batch + mt * R * d.c_stride_m + nt * C
            valid = min(R, d.M - mt * R)
            stride = d.c_stride_m if valid > 1 else 0
            _check_aligned(d, x, c_addr=addr, c_stride_m=stride)
            cmds.append(Store(addr, valid, stride, p_index, st_flags))
    return cmds


# ---- MAXPOOL ---------------------------------------------------------------------------------

def _maxpool(d: P.MaxPool, x: _Ctx) -> list:
    AB, depth = x.AB, x.cfg.spad_c_depth
    sn, sc, sh_, sw_ = d.in_strides
    on, oc, oh_s, ow_s = d.out_strides
    pitch = sw_
    if sc != 1 or oc != 1 or pitch % AB or ow_s != pitch or pitch < d.c:
        raise _refuse(d, f"max-pool works on channels-last maps whose pixel stride is the padded "
                         f"channel pitch in input and output (strides in {list(d.in_strides)}, "
                         f"out {list(d.out_strides)})")
    tb = pitch // AB
    if tb > depth:
        raise _refuse(d, f"a pixel of {tb} beats does not fit the X buffer (spad_c_depth={depth})")
    cap = depth // tb
    kh_, kw_ = P.unpack2(d.kernel)
    sh, sw = P.unpack2(d.stride)
    ph, pw = P.unpack2(d.pad)
    dh, dw = P.unpack2(getattr(d, "dilation", 0x10001))

    def iw(ow, kj):
        return ow * sw + kj * dw - pw

    def valid(ow, kj):
        return 0 <= iw(ow, kj) < d.w

    cmds = []
    for n in range(d.n):
        for oh in range(d.out_h):
            khs = [ki for ki in range(kh_) if 0 <= oh * sh + ki * dh - ph < d.h]
            if not khs:
                raise _refuse(d, f"output row {oh} has no input row (padding too large)")
            ow = 0
            while ow < d.out_w:
                runs = []
                for kj in range(kw_):
                    r = 0
                    while ow + r < d.out_w and valid(ow + r, kj):
                        r += 1
                    runs.append(r)
                kj0 = int(np.argmax(runs))
                if runs[kj0] == 0:
                    raise _refuse(d, f"output pixel ({oh}, {ow}) has no input pixel")
                g = min(runs[kj0], cap, d.out_w - ow)

                def tap_load(dst, ki, kj, lo, hi, index=0):
                    ih = oh * sh + ki * dh - ph
                    addr = d.in_base + n * sn + ih * sh_ + iw(lo, kj) * pitch
                    rows = hi - lo
                    return Load(dst, addr, tb, rows, sw * pitch if rows > 1 else 0, index, 0, 0)

                init = (khs[0], kj0)
                others, full = [], []
                for ki in khs:
                    for kj in range(kw_):
                        if (ki, kj) == init:
                            continue
                        lo = next((o for o in range(ow, ow + g) if valid(o, kj)), None)
                        if lo is None:
                            continue                      # a padding tap: -128 is the identity
                        hi = lo
                        while hi < ow + g and valid(hi, kj):
                            hi += 1
                        (full if (lo, hi) == (ow, ow + g) else others).append((ki, kj, lo, hi))
                taps = others + full
                out_addr = d.out_base + n * on + oh * oh_s + ow * pitch
                cmds.append(tap_load(DST_X, init[0], init[1], ow, ow + g))
                if not full:
                    taps.append((init[0], init[1], ow, ow + g))   # max is idempotent
                for i, (ki, kj, lo, hi) in enumerate(taps):
                    cmds.append(tap_load(DST_S, ki, kj, lo, hi))
                    if i == len(taps) - 1:
                        cmds.append(Vec(g * tb, 0, out_addr, 0, 0, 0, V_MAX))
                    else:
                        off = (lo - ow) * tb
                        cmds.append(Vec((hi - lo) * tb, off, off, 0, 0, 0, V_MAX | V_TO_X))
                _check_aligned(d, x, out_addr=out_addr, in_stride_h=sh_, in_stride_n=sn)
                ow += g
    return cmds


# ---- ADD / RELU --------------------------------------------------------------------------------

def _eltwise(d, x: _Ctx, a, b, out, sa, sb, so, ma, mb, shift, flags) -> list:
    AB, depth = x.AB, x.cfg.spad_c_depth
    if tuple(sa) != tuple(sb) or tuple(sa) != tuple(so) or any(s < 0 for s in sa):
        raise _refuse(d, f"element-wise operands and result must share one layout (strides "
                         f"{list(sa)}, {list(sb)} -> {list(so)}); re-laying a tensor out needs a COPY")
    _check_aligned(d, x, a=a, b=b, out=out)
    span = sum((n - 1) * s for n, s in zip(d.dims, sa)) + 1
    beats = ceil_div(span, AB)
    cmds = []
    for off in range(0, beats, depth):
        nb = min(depth, beats - off)
        cmds += [Load(DST_X, a + off * AB, nb, 1, 0, 0, 0, 0),
                 Load(DST_S, b + off * AB, nb, 1, 0, 0, 0, 0),
                 Vec(nb, 0, out + off * AB, ma, mb, shift, flags)]
    return cmds


# ---- VMAX ---------------------------------------------------------------------------------------

def _vmax(d: P.VMax, x: _Ctx) -> list:
    """Chunks of ``spad_c_depth`` beats over the common padded span: LOAD X x; with ``pre``
    LOAD S ZERO + VEC ADD (ma, shift_a) TO_X in place; LOAD S s; VEC MAX (to DRAM, or TO_X
    followed by LOAD S ZERO + VEC ADD (mb, shift_b) to DRAM with ``post``). ZERO S beats cost
    no DMA read: the bus moves x, s and the result once."""
    AB, depth = x.AB, x.cfg.spad_c_depth
    sa, sb, so = d.x_strides, d.s_strides, d.out_strides
    if tuple(sa) != tuple(sb) or tuple(sa) != tuple(so) or any(v < 0 for v in sa):
        raise _refuse(d, f"element-wise operands and result must share one layout (strides "
                         f"{list(sa)}, {list(sb)} -> {list(so)})")
    _check_aligned(d, x, x_base=d.x_base, s_base=d.s_base, out=d.out_base)
    span = sum((n - 1) * v for n, v in zip(d.dims, sa)) + 1
    beats = ceil_div(span, AB)
    cmds = []
    for off in range(0, beats, depth):
        nb = min(depth, beats - off)
        out = d.out_base + off * AB
        cmds.append(Load(DST_X, d.x_base + off * AB, nb, 1, 0, 0, 0, 0))
        if d.ma:
            cmds += [Load(DST_S, 0, nb, 1, 0, 0, 0, ZERO), Vec(nb, 0, 0, d.ma, 0, d.shift_a, V_TO_X)]
        cmds.append(Load(DST_S, d.s_base + off * AB, nb, 1, 0, 0, 0, 0))
        if d.mb:
            cmds += [Vec(nb, 0, 0, 0, 0, 0, V_MAX | V_TO_X), Load(DST_S, 0, nb, 1, 0, 0, 0, ZERO),
                     Vec(nb, 0, out, d.mb, 0, d.shift_b, 0)]
        else:
            cmds.append(Vec(nb, 0, out, 0, 0, 0, V_MAX))
    return cmds


# ---- GATHER -------------------------------------------------------------------------------------

def _gather_tiles(d: P.Gather, R: int) -> list:
    """The m-tiles: lists of up to R output pixels (b, oh, ow) whose results are at a constant
    stride (one STORE): runs of the output's pixel order, not crossing an output row unless the
    output is dense."""
    dense = d.c_stride_h == d.out_w * d.c_pitch and d.c_stride_n == d.out_h * d.c_stride_h
    pix = [(b, oh, ow) for b in range(d.n) for oh in range(d.out_h) for ow in range(d.out_w)]
    if dense:
        return [pix[i:i + R] for i in range(0, len(pix), R)]
    out = []
    for b in range(d.n):
        for oh in range(d.out_h):
            row = [(b, oh, ow) for ow in range(d.out_w)]
            out += [row[i:i + R] for i in range(0, len(row), R)]
    return out


def _gather_a(d: P.Gather, x: _Ctx, tile: list) -> list:
    """LOADs of one A panel: per source, runs of consecutive lanes whose source pixels are at a
    constant beat-aligned address step (one LANES LOAD each), ZERO for pixels outside the source;
    with CONST the extra beat (``one_base`` outside, ZERO inside)."""
    AB = x.AB
    src = [P.gather_pixel(d, oh, ow) for (_, oh, ow) in tile]
    cmds = []
    word = 0
    for s in range(d.n_srcs):
        pitch, base = d.src_pitch[s], d.src_base[s]
        tb = pitch // AB
        addrs = [None if p is None else base + ((b * d.in_h + p[0]) * d.in_w + p[1]) * pitch
                 for (b, _, _), p in zip(tile, src)]
        i = 0
        while i < len(tile):
            if addrs[i] is None:
                j = i
                while j < len(tile) and addrs[j] is None:
                    j += 1
                cmds.append(Load(DST_A, 0, tb, j - i, 0, i, word, ZERO | LANES))
                i = j
                continue
            j, step = i + 1, None
            while j < len(tile) and addrs[j] is not None:
                st = addrs[j] - addrs[j - 1]
                if st < 0 or (step is not None and st != step):
                    break
                step = st
                j += 1
            cmds.append(Load(DST_A, addrs[i], tb, j - i, step if j - i > 1 else 0, i, word, LANES))
            i = j
        word += tb
    if d.mode & P.G_CONST:
        i = 0
        while i < len(tile):
            out = src[i] is None
            j = i
            while j < len(tile) and (src[j] is None) == out:
                j += 1
            cmds.append(Load(DST_A, d.one_base if out else 0, 1, j - i, 0, i, word,
                             LANES if out else ZERO | LANES))
            i = j
    return cmds


def _gather(d: P.Gather, x: _Ctx) -> list:
    """Per group of n-tiles whose post-op records fit P (all of them, unless the output has more
    than ``spad_c_depth`` channels): LOAD P (the group's records) and every B panel of the group
    first, all resident in one B bank (panel nt at word ``nt * ceil(K/AB)``); then per m-tile
    (up to R output pixels, see :func:`_gather_tiles`): the A panel's LOADs (COMMIT), and per
    n-tile an EXEC over its K window (REL_A on the last; REL_B on the very last) and its STORE.
    Each source pixel is read once per group; when the panels do not fit one bank, each n-tile's
    panel is loaded in turn and the A panels are reloaded per n-tile."""
    R, C, AB, cfg = x.R, x.C, x.AB, x.cfg
    kw = ceil_div(d.K, AB)
    if any(p % AB for p in d.src_pitch[:d.n_srcs]) or d.c_pitch % AB:
        raise _refuse(d, "gather sources and output need beat-aligned pixel pitches")
    if not 1 <= d.K <= min(cfg.max_k, cfg.spad_a_depth, cfg.spad_b_depth):
        raise _refuse(d, f"a gather's pixel of K={d.K} bytes exceeds min(max_k, spad depths)")
    n_tiles = ceil_div(d.N, C)
    group = cfg.spad_c_depth // C                      # n-tiles whose records fit P at once
    if group < 1:
        raise _refuse(d, f"config spad_c_depth={cfg.spad_c_depth} holds fewer post-op records "
                         f"than one n-tile needs ({C})")
    tiles = _gather_tiles(d, R)
    windows = [P.gather_k_window(d, nt * C, min(d.N, nt * C + C), AB) for nt in range(n_tiles)]
    rec_beats = C * P.PARAM_RECORD_BYTES // AB

    def b_load(nt, word, commit):
        return Load(DST_B, d.b_base + nt * C * kw * AB, kw, C, kw * AB, 0, word,
                    LANES | (COMMIT if commit else 0))

    def tile_cmds(tile, nts, b_words, last_b, g0):
        out = _with_commit(_gather_a(d, x, tile))
        for j, nt in enumerate(nts):
            k0, k1 = windows[nt]
            fl = (REL_A if j == len(nts) - 1 else 0) | (REL_B if last_b and j == len(nts) - 1 else 0)
            out.append(Exec(k1 - k0, k0 // AB, b_words[j] + k0 // AB, fl))
            b, oh, ow = tile[0]
            addr = d.c_base + b * d.c_stride_n + oh * d.c_stride_h + ow * d.c_pitch + nt * C
            _check_aligned(d, x, c_addr=addr)
            out.append(Store(addr, len(tile), d.c_pitch if len(tile) > 1 else 0, (nt - g0) * C, 0))
        return out

    cmds = []
    for g0 in range(0, n_tiles, group):
        nts = list(range(g0, min(n_tiles, g0 + group)))
        cmds.append(Load(DST_P, d.p_base + g0 * C * P.PARAM_RECORD_BYTES, len(nts) * rec_beats,
                         1, 0, 0, 0, 0))
        if len(nts) * kw <= cfg.spad_b_depth // AB:      # the group's panels resident: A read once
            cmds += [b_load(nt, (nt - g0) * kw, nt == nts[-1]) for nt in nts]
            for ti, tile in enumerate(tiles):
                cmds += tile_cmds(tile, nts, [(nt - g0) * kw for nt in nts], ti == len(tiles) - 1, g0)
            continue
        for nt in nts:
            cmds.append(b_load(nt, 0, True))
            for ti, tile in enumerate(tiles):
                cmds += tile_cmds(tile, [nt], [0], ti == len(tiles) - 1, g0)
    return cmds


#: beats of one LUT chunk (one LOAD S + one VEC LUT; the 16-bit fields bound it)
LUT_CHUNK = 1 << 15


def _lut(d: P.Lut, x: _Ctx) -> list:
    AB = x.AB
    if tuple(d.in_strides) != tuple(d.out_strides) or any(s < 0 for s in d.in_strides):
        raise _refuse(d, f"LUT input and result must share one layout (strides "
                         f"{list(d.in_strides)} -> {list(d.out_strides)})")
    _check_aligned(d, x, in_base=d.in_base, out_base=d.out_base, table_base=d.table_base)
    tb = ceil_div(contract.LUT_ENTRIES, AB)
    cmds = [Load(DST_S, d.table_base, tb, 1, 0, 0, 0, 0), Vec(tb, 0, 0, 0, 0, 0, V_LUT_SET)]
    span = sum((n - 1) * s for n, s in zip(d.dims, d.in_strides)) + 1
    beats = ceil_div(span, AB)
    for off in range(0, beats, LUT_CHUNK):
        nb = min(LUT_CHUNK, beats - off)
        cmds += [Load(DST_S, d.in_base + off * AB, nb, 1, 0, 0, 0, 0),
                 Vec(nb, 0, d.out_base + off * AB, 0, 0, 0, V_LUT)]
    return cmds


def _rowred(d: P.RowRed, x: _Ctx) -> list:
    """ROWRED: per chunk of whole rows (at most LUT_CHUNK beats) one 2-D LOAD S of the rows
    (``pitch / AB`` beats of each, from its start: lanes past ``length`` are ignored) and one
    VEC ROWRED of them to the output rows (``x_off`` = beats per row, ``mb`` = length | reduce << 16,
    ``ma``/``shift`` the requantization)."""
    AB = x.AB
    _check_aligned(d, x, in_base=d.in_base, out_base=d.out_base, in_stride=d.in_stride,
                   pitch=d.pitch)
    bpr = d.pitch // AB
    if not 1 <= d.length <= d.pitch or bpr > LUT_CHUNK:
        raise _refuse(d, f"ROWRED rows of {d.length} elements in a pitch of {d.pitch} bytes")
    per = max(1, LUT_CHUNK // bpr)
    cmds = []
    for r0 in range(0, d.rows, per):
        k = min(per, d.rows - r0)
        cmds += [Load(DST_S, d.in_base + r0 * d.in_stride, bpr, k, d.in_stride, 0, 0, 0),
                 Vec(k * bpr, bpr, d.out_base + r0 * d.pitch, d.m0, d.length | d.reduce << 16,
                     d.shift, V_ROWRED)]
    return cmds


def _mul(d: P.Mul, x: _Ctx) -> list:
    if not d.has(P.BCAST):
        return _eltwise(d, x, d.a_base, d.b_base, d.out_base, d.a_strides, d.b_strides,
                        d.out_strides, d.m0, 0, d.shift, V_MUL)
    AB, depth = x.AB, x.cfg.spad_c_depth
    _, n_img, pixels, pitch = d.dims
    img_a, img_b = d.a_strides[1], d.b_strides[1]
    _check_aligned(d, x, a=d.a_base, b=d.b_base, out=d.out_base, pitch=pitch, img_a=img_a,
                   img_b=img_b)
    pb = pitch // AB
    if pb > depth:
        raise _refuse(d, f"a broadcast vector of {pb} beats does not fit the X buffer "
                         f"({depth} beats)")
    per = max(1, LUT_CHUNK // pb)                        # pixels per VEC
    cmds = []
    for i in range(n_img):
        cmds.append(Load(DST_X, d.b_base + i * img_b, pb, 1, 0, 0, 0, 0))
        for p0 in range(0, pixels, per):
            k = min(per, pixels - p0)
            off = i * img_a + p0 * pitch
            cmds += [Load(DST_S, d.a_base + off, k * pb, 1, 0, 0, 0, 0),
                     Vec(k * pb, 0, d.out_base + off, d.m0, pb, d.shift, V_MUL)]
    return cmds


# ---- WGEMM (windowed GEMM per channel slice) -----------------------------------------------

def _wgemm_record_table(d: P.WinGemm):
    """Record index per output row and column class (the average modes): rec[oh][ow]."""
    ch, cw = d.count_classes()
    rh = [ch.index(d.count(0, o)) for o in range(d.out_h)]
    rw = [cw.index(d.count(1, o)) for o in range(d.out_w)]
    return rh, rw, len(cw)


def _wgemm_tiles(d: P.WinGemm, x: _Ctx) -> list:
    """Runs of up to R consecutive output pixels (n, oh, ow) at one output address step and, for
    the average modes, one record: ``(pixels, record)``."""
    per_tensor = d.mode != P.WG_CONV
    rh, rw, nw = _wgemm_record_table(d) if per_tensor else (None, None, 0)
    tiles, cur, rec, step = [], [], None, None

    def addr(p):
        n, oh, ow = p
        return d.out_base + n * d.out_stride_n + oh * d.out_stride_h + ow * d.out_pitch

    for n in range(d.n):
        for oh in range(d.out_h):
            for ow in range(d.out_w):
                p = (n, oh, ow)
                r = rh[oh] * nw + rw[ow] if per_tensor else 0
                st = addr(p) - addr(cur[-1]) if cur else None
                if cur and (len(cur) == x.R or r != rec or (step is not None and st != step)):
                    tiles.append((cur, rec))
                    cur, step = [], None
                    st = None
                if cur and step is None:
                    step = st
                cur.append(p)
                rec = r
    if cur:
        tiles.append((cur, rec))
    return tiles


def _wgemm_a_panel(d: P.WinGemm, x: _Ctx, pixels: list, nt, taps_h: dict, taps_w: dict) -> list:
    """Loads of the A panel of one tile and n-tile: lane i = pixel i, words ``t * slice / AB``
    of tap t = (ki, kj); a tap's slice is one beat run; a kernel row's taps merge into one run
    when they are consecutive in memory (slice = pitch, dilation 1); equal pieces of consecutive
    lanes at a constant address step are one LANES LOAD, padding taps ZERO loads."""
    AB = x.AB
    kh_, kw_ = P.unpack2(d.kernel)
    sb = d.slice // AB
    contiguous = d.slice == d.in_pitch and P.unpack2(d.dilation)[1] == 1
    pieces: dict = {}                 # (word, kind, beats) -> [(lane, addr)]
    nts = nt if isinstance(nt, list) else [nt] * len(pixels)
    for lane, (n, oh, ow) in enumerate(pixels):
        for ki in range(kh_):
            ih = taps_h[oh][ki]
            run = None                # [word, addr, beats] of the current read run
            for kj in range(kw_):
                w = (ki * kw_ + kj) * sb
                iw = taps_w[ow][kj]
                if ih is None or iw is None:
                    if run:
                        pieces.setdefault((run[0], "r", run[2]), []).append((lane, run[1]))
                        run = None
                    pieces.setdefault((w, "z", sb), []).append((lane, 0))
                    continue
                a = d.in_base + n * d.in_stride_n + ih * d.in_stride_h + iw * d.in_pitch + nts[lane] * d.slice_step
                if run and contiguous and run[1] + run[2] * AB == a:
                    run[2] += sb
                    continue
                if run:
                    pieces.setdefault((run[0], "r", run[2]), []).append((lane, run[1]))
                run = [w, a, sb]
            if run:
                pieces.setdefault((run[0], "r", run[2]), []).append((lane, run[1]))
    out = []
    for (w, kind, beats) in sorted(pieces):
        items = pieces[(w, kind, beats)]
        g = [items[0][0], 1, items[0][1], None]          # first lane, count, addr, stride
        groups = []
        for lane, a in items[1:]:
            if lane == g[0] + g[1]:
                if kind == "z":
                    g[1] += 1
                    continue
                step = a - (g[2] + (g[1] - 1) * (g[3] or 0))
                if g[1] == 1 and a > g[2] and (a - g[2]) % AB == 0:
                    g[3] = a - g[2]
                    g[1] += 1
                    continue
                if g[1] > 1 and step == g[3]:
                    g[1] += 1
                    continue
            groups.append(g)
            g = [lane, 1, a, None]
        groups.append(g)
        for lane, cnt, a, st in groups:
            if kind == "z":
                out.append(Load(DST_A, 0, beats, cnt, 0, lane, w, ZERO | LANES))
            else:
                st = st if cnt > 1 else 0
                _check_aligned(d, x, in_addr=a, in_stride=st)
                out.append(Load(DST_A, a, beats, cnt, st, lane, w, LANES))
    return out


def _wgemm_a_per_lane(d: P.WinGemm, x: _Ctx, pixels: list, nt, taps_h: dict, taps_w: dict) -> list:
    """The other form of a tile's A panel: per lane, each run of consecutive taps (in K order)
    at a constant address step is one 2-D LOAD into that lane (LANES clear: rows = taps), each
    run of padding taps one ZERO load; a global pool's whole window is one LOAD."""
    AB = x.AB
    kh_, kw_ = P.unpack2(d.kernel)
    sb = d.slice // AB
    out = []
    nts = nt if isinstance(nt, list) else [nt] * len(pixels)
    for lane, (n, oh, ow) in enumerate(pixels):
        addrs = []
        for ki in range(kh_):
            ih = taps_h[oh][ki]
            for kj in range(kw_):
                iw = taps_w[ow][kj]
                addrs.append(None if ih is None or iw is None else
                             d.in_base + n * d.in_stride_n + ih * d.in_stride_h + iw * d.in_pitch
                             + nts[lane] * d.slice_step)
        t = 0
        while t < len(addrs):
            if addrs[t] is None:
                e = t
                while e < len(addrs) and addrs[e] is None:
                    e += 1
                out.append(Load(DST_A, 0, (e - t) * sb, 1, 0, lane, t * sb, ZERO))
                t = e
                continue
            e, step = t + 1, None
            while e < len(addrs) and addrs[e] is not None:
                st = addrs[e] - addrs[e - 1]
                if st <= 0 or st % AB or (step is not None and st != step):
                    break
                step, e = st, e + 1
            _check_aligned(d, x, in_addr=addrs[t], in_stride=step or 0)
            out.append(Load(DST_A, addrs[t], sb, e - t, step or 0, lane, t * sb, 0))
            t = e
    return out


def _wgemm(d: P.WinGemm, x: _Ctx) -> list:
    R, C, AB, cfg = x.R, x.C, x.AB, x.cfg
    kh_, kw_ = P.unpack2(d.kernel)
    K = kh_ * kw_ * d.slice
    kwords = ceil_div(K, AB)
    dwm = d.has(P.DEPTHWISE)
    if dwm:     # the core's depthwise mode: one A word per tap, B lane j = channel j's taps
        if not (d.slice == C == AB and d.slice_step == C and not d.has(P.W_SHARED)):
            raise _refuse(d, f"DEPTHWISE needs slice = step = cols = axi bytes ({AB}), got slice "
                             f"{d.slice}, step {d.slice_step}, cols {C}")
        K = kh_ * kw_
        kwords = ceil_div(K, AB)
        if K > min(cfg.max_k, cfg.spad_a_depth // AB, cfg.spad_b_depth):
            raise _refuse(d, f"K={K} taps outside 1..min(max_k, spad words)")
    if d.slice <= 0 or d.slice % AB or d.in_pitch % AB or d.slice_step % AB or d.out_pitch % AB:
        raise _refuse(d, f"the channel slice ({d.slice}), its step ({d.slice_step}) and the pixel "
                         f"pitches ({d.in_pitch}, {d.out_pitch}) must be whole AXI beats ({AB} bytes)")
    if not dwm and not 1 <= K <= min(cfg.max_k, cfg.spad_a_depth, cfg.spad_b_depth):
        raise _refuse(d, f"K={K} (a window of {kh_}x{kw_} taps of {d.slice} bytes) outside "
                         f"1..min(max_k, spad depths)")
    if d.n_tiles != ceil_div(d.N, C):
        raise _refuse(d, "n_tiles does not match N and the array")
    per_tensor = d.mode != P.WG_CONV
    cap = cfg.spad_c_depth
    resident = d.records <= cap
    if not resident and (per_tensor or C > cap // 2):
        raise _refuse(d, f"{d.records} post-op records exceed config spad_c_depth={cap}")
    taps_h = [[d.tap(0, o, k) for k in range(kh_)] for o in range(d.out_h)]
    taps_w = [[d.tap(1, o, k) for k in range(kw_)] for o in range(d.out_w)]
    tiles = _wgemm_tiles(d, x)
    st_flags = (S_RELU if d.has(P.RELU) else 0) | (S_PER_TENSOR if per_tensor else 0)
    panel_bytes = C * kwords * AB
    cmds: list = []

    def load_p(nt):
        if resident:
            n = d.records * P.PARAM_RECORD_BYTES
            cmds.append(Load(DST_P, d.p_base, ceil_div(n, AB), 1, 0, 0, 0, 0))
        else:
            cmds.append(Load(DST_P, d.p_base + nt * C * P.PARAM_RECORD_BYTES,
                             C * P.PARAM_RECORD_BYTES // AB, 1, 0, (nt % 2) * (cap // 2), 0, 0))

    def b_panel(nt):
        a = d.w_base + (0 if shared else nt * panel_bytes)
        _check_aligned(d, x, w_addr=a)
        return [Load(DST_B, a, kwords, C, kwords * AB, 0, 0, LANES | COMMIT)]

    def a_panel(nt, ti, pixels=None):
        pixels = tiles[ti][0] if pixels is None else pixels
        lanes = _wgemm_a_panel(d, x, pixels, nt, taps_h, taps_w)
        if len(lanes) > 1:
            per = _wgemm_a_per_lane(d, x, pixels, nt, taps_h, taps_w)
            lanes = per if len(per) < len(lanes) else lanes
        return _with_commit(lanes)

    shared = d.has(P.W_SHARED)
    if shared and d.n_tiles > 1 and d.n * d.out_h * d.out_w * ceil_div(d.n_tiles, R) < len(tiles) * d.n_tiles:
        return _wgemm_channel_lanes(d, x, cmds, load_p, a_panel, K, kwords, st_flags)

    load_p(0)
    cmds += b_panel(0)
    cmds += a_panel(0, 0)
    T = len(tiles)
    for nt in range(d.n_tiles):
        for ti, (pix, rec) in enumerate(tiles):
            if ti + 1 < T:
                cmds += a_panel(nt, ti + 1)
            elif nt + 1 < d.n_tiles:
                if not resident:
                    load_p(nt + 1)
                cmds += a_panel(nt + 1, 0)
            if ti == 0 and nt + 1 < d.n_tiles and not shared:
                cmds += b_panel(nt + 1)
            last_b = ti == T - 1 and (not shared or nt == d.n_tiles - 1)
            cmds.append(Exec(K, 0, 0, REL_A | (REL_B if last_b else 0) | (DW if dwm else 0)))
            n, oh, ow = pix[0]
            addr = d.out_base + n * d.out_stride_n + oh * d.out_stride_h + ow * d.out_pitch + nt * C
            if len(pix) > 1:
                n1, oh1, ow1 = pix[1]
                stride = d.out_base + n1 * d.out_stride_n + oh1 * d.out_stride_h + ow1 * d.out_pitch + nt * C - addr
            else:
                stride = 0
            _check_aligned(d, x, out_addr=addr, out_stride=stride)
            if per_tensor:
                p_index = rec
            else:
                p_index = nt * C if resident else (nt % 2) * (cap // 2)
            cmds.append(Store(addr, len(pix), stride, p_index, st_flags))
    return cmds


def _wgemm_channel_lanes(d: P.WinGemm, x: _Ctx, cmds: list, load_p, a_panel, K, kwords, st_flags) -> list:
    """WGEMM with one shared weight panel and fewer pixels than lanes per n-tile (a global
    pool): the lanes of a tile are R n-tiles of one output pixel (lane i: the slice of n-tile
    g*R + i; the shared panel's column j is channel j of every slice), so the tile's row i is
    the pixel's channels (g*R + i)*C.. and its STORE writes the rows at stride C."""
    R, C, AB = x.R, x.C, x.AB
    pix = [(n, oh, ow) for n in range(d.n) for oh in range(d.out_h) for ow in range(d.out_w)]
    rh, rw, nw = _wgemm_record_table(d) if d.mode != P.WG_CONV else (None, None, 0)
    groups = [(p, g) for p in pix for g in range(0, d.n_tiles, R)]

    def lanes(i):
        p, g = groups[i]
        cnt = min(R, d.n_tiles - g)
        return a_panel(list(range(g, g + cnt)), None, [p] * cnt)

    load_p(0)
    cmds.append(Load(DST_B, d.w_base, kwords, C, kwords * AB, 0, 0, LANES | COMMIT))
    cmds += lanes(0)
    for i, (p, g) in enumerate(groups):
        if i + 1 < len(groups):
            cmds += lanes(i + 1)
        cmds.append(Exec(K, 0, 0, REL_A | (REL_B if i == len(groups) - 1 else 0)))
        n, oh, ow = p
        addr = d.out_base + n * d.out_stride_n + oh * d.out_stride_h + ow * d.out_pitch + g * C
        cnt = min(R, d.n_tiles - g)
        _check_aligned(d, x, out_addr=addr)
        rec = rh[oh] * nw + rw[ow] if d.mode != P.WG_CONV else 0
        cmds.append(Store(addr, cnt, C if cnt > 1 else 0, rec, st_flags))
    return cmds


#: descriptor KIND -> scheduler: (descriptor, context) -> (commands, useful MACs)
SCHEDULERS = {
    "gemm": lambda d, x: (_gemm(d, x), d.batch * d.M * d.N * d.K),
    "maxpool": lambda d, x: (_maxpool(d, x), 0),
    "maxpoold": lambda d, x: (_maxpool(d, x), 0),
    "add": lambda d, x: (_eltwise(d, x, d.a_base, d.b_base, d.out_base, d.a_strides, d.b_strides,
                                  d.out_strides, d.ma, d.mb, d.shift,
                                  V_RELU if d.has(P.RELU) else 0), 0),
    "relu": lambda d, x: (_eltwise(d, x, d.in_base, d.in_base, d.out_base, d.in_strides,
                                   d.in_strides, d.out_strides, 1, 0, 0, V_RELU), 0),
    "vmax": lambda d, x: (_vmax(d, x), 0),
    "gather": lambda d, x: (_gather(d, x), 0),
    "lut": lambda d, x: (_lut(d, x), 0),
    "mul": lambda d, x: (_mul(d, x), 0),
    "rowred": lambda d, x: (_rowred(d, x), 0),
    "wgemm": lambda d, x: (_wgemm(d, x), _wgemm_array_macs(d)),
}


def _wgemm_array_macs(d: P.WinGemm) -> int:
    """The MACs the array does for the layer's outputs: every output pixel and channel streams
    the whole K = taps * slice (a depthwise conv's slice holds ``cols`` channels, of which the
    channel's weights face one: the rest is padding), padding taps included as in a GEMM.
    DEPTHWISE (the core's depthwise mode): K = taps per output, for every column of every
    n-tile (the columns of the last n-tile past N multiply zero weights: that is its waste)."""
    kh_, kw_ = P.unpack2(d.kernel)
    if d.has(P.DEPTHWISE):
        return d.n * d.out_h * d.out_w * d.n_tiles * d.slice * kh_ * kw_  # slice == cols
    return d.n * d.out_h * d.out_w * d.N * kh_ * kw_ * d.slice

