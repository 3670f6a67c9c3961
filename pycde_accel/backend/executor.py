"""Golden model of the layer program's descriptor semantics, out of a DRAM image.

(The accelerator runs each layer's commands, :mod:`.cmdexec` is their golden model; this one
checks that the descriptors alone say what the layer computes.)

:func:`execute` reads the program header at address 0 of the image, decodes each descriptor and
runs it the way the hardware will, touching the image only through the addresses and strides in
the descriptors (nothing of the compiler's own data structures is used):

* GEMM: the loop nest of :func:`pycde_accel.backend.tiling.schedule`; ``load_a`` gathers one A
  panel (``rows`` lanes x K beats; plain strided or im2col addressing, lanes past M and padding
  positions zero) into a half of the A scratchpad, ``load_b`` one B panel (a packed weight panel
  of ``cols`` B^T lanes of ``b_stride_k`` bytes, or an activation read with strides, lanes past N
  zero) and its post-op
  records into the B scratchpad; ``tile`` computes the ``rows x cols`` int32 tile as the systolic
  core does (``sum_k A[i][k] * B[k][j]``, wrapping at ``acc_width``), then the post-op kernel adds
  the bias (int32, wrapping), applies :func:`pycde_accel.frontend.quantize.requantize` per column
  (m0, shift from the records; fused ReLU) and the write DMA stores the valid rows/columns.
* ADD: :func:`~pycde_accel.frontend.quantize.residual_add` over the descriptor's 4 strided loops;
  RELU: :func:`~pycde_accel.frontend.quantize.relu_int8`; MAXPOOL: the input read once, the max over
  each window (padding -128); COPY: a strided gather into the destination strides; VMAX:
  ``post(max(pre(x), s))`` with the optional rescales of :class:`~.program.VMax`; GATHER: each
  output pixel's A row from its source pixel (:func:`~.program.gather_pixel`) times B, requantized.

Every DMA byte is counted (``dram_bytes_read``/``dram_bytes_written`` per layer; a packed weight
panel counts its whole aligned size, a strided read counts the elements it fetches, padding
positions of im2col count nothing), as are the core tiles; the compiler's analytic figures
(:mod:`pycde_accel.backend.tiling`) must agree with these. ``dram_beats_*`` count the AXI data
beats a beat-aligned DMA would move for the same accesses (each DMA access -- one panel, one
C tile, one element-wise operand -- fetches the distinct beats that cover its bytes, so an im2col panel that
uses an input byte several times fetches its beat once, while ``dram_bytes_read`` counts every
element fetch); they are a measurement of this executor only, with no analytic twin. Scratchpad capacity is checked against
the config when one is given.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..config import AccelConfig
from ..frontend import quantize as q
from . import program as P
from .tiling import k_chunk, schedule


class ExecutionError(RuntimeError):
    """The program asked for something the hardware cannot do (out-of-image access, a panel that
    does not fit its scratchpad, a bad descriptor)."""


def _wrap(x: np.ndarray, bits: int) -> np.ndarray:
    m = 1 << bits
    return ((x + (m >> 1)) % m) - (m >> 1)


def _loop_offsets(dims, strides) -> np.ndarray:
    off = np.zeros(tuple(dims), dtype=np.int64)
    for d, (n, s) in enumerate(zip(dims, strides)):
        off += (np.arange(n, dtype=np.int64) * s).reshape((1,) * d + (n,) + (1,) * (len(dims) - d - 1))
    return off


@dataclass
class LayerCounters:
    index: int
    op: str
    tiles: int = 0
    dram_bytes_read: int = 0
    dram_bytes_written: int = 0
    dram_beats_read: int = 0       # AXI beats a beat-aligned DMA moves (covering beats per access)
    dram_beats_written: int = 0    # (partial beats on writes need byte strobes)


def row_reduce(rows, op: int) -> np.ndarray:
    """ROWRED's R of each row of ``rows`` (int8 codes, rows x length): the max
    (contract.ROW_MAX), the sum (ROW_SUM) or the sum of squares (ROW_SUMSQ), int64."""
    from .. import contract
    rows = np.asarray(rows, np.int64)
    if op == contract.ROW_MAX:
        return rows.max(axis=1)
    if op == contract.ROW_SUMSQ:
        return (rows * rows).sum(axis=1)
    if op != contract.ROW_SUM:
        raise ExecutionError(f"ROWRED op {op}")
    return rows.sum(axis=1)


class _Machine:
    def __init__(self, image: bytearray, config: AccelConfig | None, axi_bytes: int,
                 rows: int = 0, cols: int = 0):
        self.axi = axi_bytes
        self.rows, self.cols = rows, cols
        self.image = image
        self.mem = np.frombuffer(image, dtype=np.int8)
        self.cfg = config
        self.acc_width = config.acc_width if config else 32

    def read(self, addrs: np.ndarray, c: LayerCounters) -> np.ndarray:
        addrs = np.asarray(addrs, np.int64)
        if addrs.size and (addrs.min() < 0 or addrs.max() >= self.mem.size):
            raise ExecutionError(f"layer {c.index}: read outside the image "
                                 f"[{addrs.min()}, {addrs.max()}] of {self.mem.size} bytes")
        c.dram_bytes_read += addrs.size
        c.dram_beats_read += np.unique(addrs // self.axi).size
        return self.mem[addrs].astype(np.int64)

    def write(self, addrs: np.ndarray, values: np.ndarray, c: LayerCounters) -> None:
        addrs = np.asarray(addrs, np.int64)
        if addrs.size and (addrs.min() < 0 or addrs.max() >= self.mem.size):
            raise ExecutionError(f"layer {c.index}: write outside the image")
        q._check_range(f"layer {c.index} output", np.asarray(values), q.INT8_MIN, q.INT8_MAX)
        c.dram_bytes_written += addrs.size
        c.dram_beats_written += np.unique(addrs // self.axi).size
        self.mem[addrs] = np.asarray(values, np.int64).astype(np.int8)

    def read_words(self, addr: int, n: int, c: LayerCounters) -> np.ndarray:
        raw = self.read(np.arange(addr, addr + 4 * n), c)
        return np.frombuffer(raw.astype(np.int8).tobytes(), dtype="<i4").astype(np.int64)

    # ---- GEMM ------------------------------------------------------------------------------
    def gemm(self, d: P.Gemm, c: LayerCounters) -> None:
        rows, cols, axi = self.rows, self.cols, self.axi
        K = d.K
        if self.cfg:
            kw = -(-K // axi)
            if d.order == P.A_STATIONARY:
                a_need, b_need = d.block * kw, kw
            else:
                a_need, b_need = kw, d.block * kw
            if K > self.cfg.max_k:
                raise ExecutionError(f"layer {d.index}: K={K} exceeds max_k={self.cfg.max_k}")
            if K > k_chunk(self.cfg):
                # K split into chunks accumulated in the core (tiling.py): one tile at a time
                if d.block != 1:
                    raise ExecutionError(f"layer {d.index}: K={K} is split into chunks, which "
                                         f"needs block 1, not {d.block}")
            elif a_need * axi > self.cfg.spad_a_depth or b_need * axi > self.cfg.spad_b_depth:
                raise ExecutionError(f"layer {d.index}: panels of K={K} (block {d.block}) do not fit "
                                     f"the scratchpads")
        if d.m_tiles * rows < d.M or d.n_tiles * cols < d.N or d.block < 1:
            raise ExecutionError(f"layer {d.index}: tile counts do not cover M x N")
        spad_a: dict = {}
        spad_b: dict = {}
        kh, kw = P.unpack2(d.kernel)
        sh, sw = P.unpack2(d.stride)
        ph, pw = P.unpack2(d.pad)
        karange = np.arange(K, dtype=np.int64)
        steps = schedule(d.batch, d.m_tiles, d.n_tiles, d.order, d.block)
        if self.cfg and K > k_chunk(self.cfg):
            steps = _per_tile_loads(steps)
        for st in steps:
            if st.kind == "load_a":
                m = st.mt * rows + np.arange(rows, dtype=np.int64)
                valid_m = m < d.M
                panel = np.zeros((rows, K), dtype=np.int64)
                if d.has(P.IM2COL):
                    pix = m[valid_m]
                    n, rem = np.divmod(pix, d.out_h * d.out_w)
                    oh, ow = np.divmod(rem, d.out_w)
                    kk, ci = np.divmod(karange, d.in_c)
                    ki, kj = np.divmod(kk, kw)
                    hh = oh[:, None] * sh + ki[None, :] - ph
                    ww = ow[:, None] * sw + kj[None, :] - pw
                    inside = (hh >= 0) & (hh < d.in_h) & (ww >= 0) & (ww < d.in_w)
                    addr = (d.a_base + n[:, None] * d.a_stride_batch + ci[None, :] * d.in_stride_c
                            + hh * d.in_stride_h + ww * d.in_stride_w)
                    vals = np.zeros(addr.shape, dtype=np.int64)
                    vals[inside] = self.read(addr[inside], c)
                    panel[valid_m] = vals
                else:
                    addr = (d.a_base + st.batch * d.a_stride_batch + m[valid_m, None] * d.a_stride_m
                            + karange[None, :] * d.a_stride_k)
                    panel[valid_m] = self.read(addr, c)
                spad_a[(st.a_half, st.a_slot)] = panel
            elif st.kind == "load_b":
                if d.has(P.B_PACKED):
                    start = d.b_base + st.nt * d.b_stride_n      # cols lanes of b_stride_k bytes
                    raw = self.read(np.arange(start, start + cols * d.b_stride_k), c)
                    panel = raw.reshape(cols, d.b_stride_k)[:, :K].T
                else:
                    n = st.nt * cols + np.arange(cols, dtype=np.int64)
                    valid_n = n < d.N
                    panel = np.zeros((K, cols), dtype=np.int64)
                    addr = (d.b_base + st.batch * d.b_stride_batch + karange[:, None] * d.b_stride_k
                            + n[None, valid_n] * d.b_stride_n)
                    panel[:, valid_n] = self.read(addr, c)
                if d.has(P.PER_TENSOR):
                    rec = np.repeat(self.read_words(d.p_base, 4, c).reshape(1, 4), cols, axis=0)
                else:
                    rec = self.read_words(d.p_base + st.nt * cols * P.PARAM_RECORD_BYTES, 4 * cols, c)
                    rec = rec.reshape(cols, 4)
                spad_b[(st.b_half, st.b_slot)] = (panel, rec)
            else:
                a = spad_a[(st.a_half, st.a_slot)]
                b, rec = spad_b[(st.b_half, st.b_slot)]
                acc = _wrap(a @ b, self.acc_width)                     # the systolic core
                c.tiles += 1
                if d.has(P.BIAS):
                    acc = _wrap(_wrap(acc, 32) + rec[:, 0][None, :], 32)
                y = q.requantize(_wrap(acc, 32), rec[:, 1][None, :], rec[:, 2][None, :], d.has(P.RELU))
                m = st.mt * rows + np.arange(rows, dtype=np.int64)
                n = st.nt * cols + np.arange(cols, dtype=np.int64)
                vm, vn = m < d.M, n < d.N
                addr = (d.c_base + st.batch * d.c_stride_batch + m[vm, None] * d.c_stride_m + n[None, vn])
                self.write(addr, y[np.ix_(vm, vn)], c)

    # ---- element-wise ----------------------------------------------------------------------
    def add(self, d: P.Add, c: LayerCounters) -> None:
        a = self.read(d.a_base + _loop_offsets(d.dims, d.a_strides), c)
        b = self.read(d.b_base + _loop_offsets(d.dims, d.b_strides), c)
        y = q.residual_add(a, b, d.ma, d.mb, d.shift, d.has(P.RELU))
        self.write(d.out_base + _loop_offsets(d.dims, d.out_strides), y, c)

    def relu(self, d: P.Relu, c: LayerCounters) -> None:
        x = self.read(d.in_base + _loop_offsets(d.dims, d.in_strides), c)
        self.write(d.out_base + _loop_offsets(d.dims, d.out_strides), q.relu_int8(x), c)

    def lut(self, d: P.Lut, c: LayerCounters) -> None:
        table = self.read(d.table_base + np.arange(256), c)
        x = self.read(d.in_base + _loop_offsets(d.dims, d.in_strides), c)
        self.write(d.out_base + _loop_offsets(d.dims, d.out_strides), table[x + 128], c)

    def rowred(self, d: P.RowRed, c: LayerCounters) -> None:
        r = np.arange(d.rows, dtype=np.int64)[:, None]
        j = np.arange(d.length, dtype=np.int64)[None, :]
        x = self.read(d.in_base + r * d.in_stride + j, c)
        y = q.requantize(row_reduce(x, d.reduce), d.m0, d.shift)
        self.write(d.out_base + r * d.pitch + j, np.broadcast_to(y[:, None], x.shape), c)

    def mul(self, d: P.Mul, c: LayerCounters) -> None:
        a = self.read(d.a_base + _loop_offsets(d.dims, d.a_strides), c)
        b = self.read(d.b_base + _loop_offsets(d.dims, d.b_strides), c)
        self.write(d.out_base + _loop_offsets(d.dims, d.out_strides),
                   q.requantize(a * b, d.m0, d.shift), c)

    def copy(self, d: P.Copy, c: LayerCounters) -> None:
        x = self.read(d.src_base + _loop_offsets(d.dims, d.src_strides), c)
        self.write(d.dst_base + _loop_offsets(d.dims, d.dst_strides), x, c)

    def vmax(self, d: P.VMax, c: LayerCounters) -> None:
        x = self.read(d.x_base + _loop_offsets(d.dims, d.x_strides), c)
        s = self.read(d.s_base + _loop_offsets(d.dims, d.s_strides), c)
        if d.ma:
            x = q.residual_add(x, x, d.ma, 0, d.shift_a)
        y = np.maximum(x, s)
        if d.mb:
            y = q.residual_add(y, y, d.mb, 0, d.shift_b)
        self.write(d.out_base + _loop_offsets(d.dims, d.out_strides), y, c)

    def gather(self, d: P.Gather, c: LayerCounters) -> None:
        AB = self.axi
        kp = -(-d.K // AB) * AB
        n_tiles = -(-d.N // self.cols)
        b = self.read(d.b_base + np.arange(n_tiles * self.cols * kp), c).reshape(-1, kp)[:d.N]
        rec = self.read_words(d.p_base, 4 * n_tiles * self.cols, c).reshape(-1, 4)[:d.N]
        one = self.read(d.one_base + np.arange(AB), c) if d.mode & P.G_CONST else None
        for bi in range(d.n):
            for oh in range(d.out_h):
                for ow in range(d.out_w):
                    src = P.gather_pixel(d, oh, ow)
                    parts = []
                    for s_ in range(d.n_srcs):
                        if src is None:
                            parts.append(np.zeros(d.src_pitch[s_], np.int64))
                        else:
                            a0 = d.src_base[s_] + ((bi * d.in_h + src[0]) * d.in_w + src[1]) * d.src_pitch[s_]
                            parts.append(self.read(a0 + np.arange(d.src_pitch[s_]), c))
                    if one is not None:
                        parts.append(one if src is None else np.zeros(AB, np.int64))
                    a = np.concatenate(parts)
                    acc = _wrap(b[:, :a.size] @ a + rec[:, 0], 32)
                    y = q.requantize(acc, rec[:, 1], rec[:, 2])
                    addr = d.c_base + bi * d.c_stride_n + oh * d.c_stride_h + ow * d.c_pitch
                    self.write(addr + np.arange(d.N), y, c)

    def maxpool(self, d: P.MaxPool, c: LayerCounters) -> None:
        kh, kw = P.unpack2(d.kernel)
        sh, sw = P.unpack2(d.stride)
        ph, pw = P.unpack2(d.pad)
        dh, dw = P.unpack2(getattr(d, "dilation", 0x10001))
        x = self.read(d.in_base + _loop_offsets((d.n, d.c, d.h, d.w), d.in_strides), c)
        # bottom/right: the padding, or more (ceil mode's last window may hang over it)
        eh = max(ph, (d.out_h - 1) * sh + dh * (kh - 1) + 1 - d.h - ph)
        ew = max(pw, (d.out_w - 1) * sw + dw * (kw - 1) + 1 - d.w - pw)
        xp = np.full((d.n, d.c, d.h + ph + eh, d.w + pw + ew), q.INT8_MIN, dtype=np.int64)
        xp[:, :, ph:ph + d.h, pw:pw + d.w] = x
        y = np.full((d.n, d.c, d.out_h, d.out_w), q.INT8_MIN, dtype=np.int64)
        for i in range(kh):
            for j in range(kw):
                y = np.maximum(y, xp[:, :, i * dh:i * dh + sh * (d.out_h - 1) + 1:sh,
                                     j * dw:j * dw + sw * (d.out_w - 1) + 1:sw])
        self.write(d.out_base + _loop_offsets((d.n, d.c, d.out_h, d.out_w), d.out_strides), y, c)

    def wgemm(self, d: P.WinGemm, c: LayerCounters) -> None:
        cols, axi = self.cols, self.axi
        kh, kw = P.unpack2(d.kernel)
        dwm = d.has(P.DEPTHWISE)
        if dwm and not d.slice == cols == axi:
            raise ExecutionError(f"layer {d.index}: DEPTHWISE with slice {d.slice}, cols {cols}, "
                                 f"axi bytes {axi}")
        K = kh * kw * (1 if dwm else d.slice)
        kp = -(-K // axi) * axi
        if self.cfg and (K > self.cfg.spad_a_depth or K > self.cfg.spad_b_depth or K > self.cfg.max_k):
            raise ExecutionError(f"layer {d.index}: a window of K={K} does not fit the scratchpads / max_k")
        pix = [(n, oh, ow) for n in range(d.n) for oh in range(d.out_h) for ow in range(d.out_w)]
        th = [[d.tap(0, o, k) for k in range(kh)] for o in range(d.out_h)]
        tw = [[d.tap(1, o, k) for k in range(kw)] for o in range(d.out_w)]
        b = np.arange(d.slice, dtype=np.int64)
        base = np.full((len(pix), kh * kw), -1, np.int64)      # per pixel and tap: slice start
        for p, (n, oh, ow) in enumerate(pix):
            for ki in range(kh):
                for kj in range(kw):
                    ih, iw = th[oh][ki], tw[ow][kj]
                    if ih is not None and iw is not None:
                        base[p, ki * kw + kj] = d.in_base + n * d.in_stride_n + ih * d.in_stride_h + iw * d.in_pitch
        inside = base >= 0
        recs = self.read_words(d.p_base, 4 * d.records, c).reshape(d.records, 4)
        if d.mode != P.WG_CONV:
            rec_of = np.array([d.record(oh, ow) for (_, oh, ow) in pix], np.int64)
        out_addr = np.array([d.out_base + n * d.out_stride_n + oh * d.out_stride_h + ow * d.out_pitch
                             for (n, oh, ow) in pix], np.int64)
        for nt in range(d.n_tiles):
            a = np.zeros((len(pix), kh * kw, d.slice), np.int64)
            addr = base[:, :, None] + nt * d.slice_step + b[None, None, :]
            a[inside] = self.read(addr[inside], c)
            start = d.w_base + (0 if d.has(P.W_SHARED) else nt * cols * kp)
            w = self.read(np.arange(start, start + cols * kp), c).reshape(cols, kp)[:, :K]
            if dwm:     # channel j of the slice against lane j's taps
                acc = _wrap(np.einsum("ptj,jt->pj", a, w), self.acc_width)
            else:
                acc = _wrap(a.reshape(len(pix), K) @ w.T, self.acc_width)
            c.tiles += 1
            ch = nt * cols + np.arange(cols)
            valid = ch < d.N
            if d.mode == P.WG_CONV:
                r = recs[np.minimum(ch, d.records - 1)][None, :, :]
            else:
                r = recs[rec_of][:, None, :]
            if d.has(P.BIAS):
                acc = _wrap(_wrap(acc, 32) + r[..., 0], 32)
            y = q.requantize(_wrap(acc, 32), r[..., 1], r[..., 2], d.has(P.RELU))
            self.write((out_addr[:, None] + ch[None, valid]), y[:, valid], c)

    maxpoold = maxpool


@dataclass
class Execution:
    image: bytearray
    program: P.Program
    layers: list            # LayerCounters per layer


def execute(image, config: AccelConfig | None = None, program_addr: int = 0) -> Execution:
    """Run the program stored at ``program_addr`` of ``image`` (bytes or bytearray; a copy is
    made) and return the final image with per-layer counters."""
    img = bytearray(image)
    prog = P.Program.decode(bytes(img[program_addr:]))
    if config is not None and (prog.rows, prog.cols) != (config.rows, config.cols):
        raise ExecutionError(f"program tiled for {prog.rows}x{prog.cols}, config is {config.array}")
    m = _Machine(img, config, prog.axi_bytes, prog.rows, prog.cols)
    counters = []
    for d in prog.layers:
        c = LayerCounters(d.index, d.KIND)
        run = getattr(m, d.KIND, None)     # one method per engine function, named by its KIND
        if run is None:  # pragma: no cover
            raise ExecutionError(f"layer {d.index}: op {d.KIND} has no semantics")
        run(d, c)
        counters.append(c)
    return Execution(img, prog, counters)


def run(compiled, inputs_q) -> tuple[list, Execution]:
    """Write the int8 model inputs into the compiled image, execute, read the outputs."""
    ex = execute(compiled.load_inputs(inputs_q), compiled.config)
    return compiled.read_outputs(ex.image), ex


def _per_tile_loads(steps):
    """A split-K GEMM's loop nest (tiling.py, "K splitting"): the core keeps one tile's sums,
    so each tile loads its own A and B panel (chunk by chunk, which the DMA byte count does not
    see), in the tile order of the loop nest."""
    for st in steps:
        if st.kind == "tile":
            yield dataclasses.replace(st, kind="load_a")
            yield dataclasses.replace(st, kind="load_b")
            yield st
