"""Tiling of matmul-like layers onto the ``rows x cols`` output-stationary array.

Every matmul-like layer is a GEMM ``C[M, N] = A[M, K] @ B[K, N]`` (per batch element):

* Linear: ``A = x.reshape(M, K)``, ``B = W_q.T`` (a weight, pre-packed by the host);
* Conv2d: ``A = im2col(x)`` (M = N*OH*OW output pixels, K = KH*KW*C), ``B`` the packed weight;
* MatMul/bmm of two activations: ``A``, ``B`` both activations read with strides, ``batch`` > 1.

Tiles
-----
A core tile is ``rows x cols`` of C with the full reduction K streamed through the array (the
core takes any K in 1..max_k per tile, so K is never padded (a K longer than a scratchpad
bank is fed in chunks, see "K splitting" below): zero padding of K
would be numerically free, but it costs cycles and bytes and buys nothing here). M and N are cut
into ``m_tiles = ceil(M / rows)``, ``n_tiles = ceil(N / cols)``. The last tile of each may be
*partial*: the LOAD moves only the valid rows of A (columns of B); the other scratchpad lanes
keep stale data, the core computes a full tile (its cost does not depend on how many lanes are
valid), and the STORE writes only the valid rows (its columns past N land in the output's padding).
Activations follow docs/accelerator-contract.md: channels-last, the innermost dim padded to a multiple
of ``cols`` (so a C-tile row is whole AXI beats and every row starts on a beat); weights are packed
per N-panel as ``cols`` lanes (rows of B^T) of ``round_up(K, AB)`` bytes, zero past N and K, so
one panel is one 2-D LOAD (:mod:`pycde_accel.backend.layout`). A Linear reading a padded row has K
= the row's span (zero weights facing the padding), a conv K = KH*KW*Pin (Pin the padded
channel pitch).

Conv2d: im2col by DMA addressing
--------------------------------
The A panel of a conv tile (``rows`` output pixels x K) is gathered by the DMA straight from the
input feature map: for pixel (n, oh, ow) and k = (kh, kw, c) it reads
``in_base + n*s_n + c + (oh*sh + kh - ph)*s_h + (ow*sw + kw - pw)*Pin``, i.e. one run of
``KW*Pin`` bytes per kernel row, and ZERO-loads the scratchpad where a tap lies in the padding
(nothing is read). We do it in the DMA and not on
the host because (1) the input of a conv is usually the previous layer's output, produced on chip
and written to DRAM by the accelerator: host-side im2col would force a round trip to the host per
conv layer (read back, expand, write again) and serialize the whole model on the host; (2) a
host-expanded A occupies ``KH*KW/(sh*sw)`` times the feature map in DRAM and is written once more
and read once; the DMA reads the same A bytes (each input byte up to KH*KW times, which the
traffic figures below count) without the extra write and storage; (3) the address generator is a
few nested counters (kernel, stride, pad and four strides are descriptor fields), no more complex
than the strided reads a bmm operand needs anyway. K is ordered (kh, kw, c) so that with
channels-last activations (what a GEMM writes: ``C[pixel, oc]``) every (kh, kw) is one
contiguous run of C bytes; the host packs the weights in the same K order.

Loop order and reuse
--------------------
Each output tile needs one A panel (``rows x K``, K scratchpad words of ``rows`` bytes) and one B
panel (``K x cols``). One operand is *stationary*: a block of ``block`` of its panels is loaded
into one half of its double-buffered scratchpad and reused against every panel of the other
operand, which is *streamed* panel by panel through the two halves of its scratchpad (the DMA
fills panel t+1 while the core computes with panel t; likewise the next stationary block is
prefetched into the other half). The loop nest the hardware runs (:func:`schedule`)::

    for b in batch:
      A_STATIONARY:  for each block of `block` M-tiles: load those A panels
                       for nt in n_tiles: load B panel nt (+ its post-op records)
                         for mt in block: tile (mt, nt) -> post-op -> write C tile
      B_STATIONARY:  for each block of `block` N-tiles: load those B panels (+ records)
                       for mt in m_tiles: load A panel mt
                         for nt in block: tile (mt, nt) -> post-op -> write C tile

DRAM traffic: the stationary operand is read once, the streamed one once per stationary block,
C is written once. :func:`plan_gemm` takes ``block`` as large as a scratchpad half allows
(``(spad_depth / AB) // ceil(K / AB)`` panels: a lane of a bank holds ``spad_depth`` int8
elements, ``spad_depth / AB`` words, and a panel takes ``ceil(K / AB)`` of them) and picks the order with fewer bytes read (ties: A-stationary).
For batch-1 Linear layers (M = 1) that is A-stationary with every weight byte read once; for
convolutions with few output channels it is B-stationary (the weights stay on chip and the
feature map is read once).

K splitting
-----------
A panel fits one half when its ``ceil(K / AB)`` words fit a lane of both banks and K fits the
EXEC's 16-bit K field: K <= :func:`k_chunk` (the whole words of the smaller bank, at most 65535
elements). A longer K is split into ``ceil(K / k_chunk)`` chunks at word boundaries (k0 =
c * k_chunk; the last chunk is ragged) and the partial sums accumulate *in the core*: the
chunks of one tile are consecutive EXECs with the CHAIN flag on all but the last, so the PEs
keep accumulating one tile of the whole K (the core sees one long tile; no int32 partial sums
leave the array, no extra engine and no DRAM traffic for them). The price is reuse: the core
holds one tile's sums, so every tile streams all of its K and its A and B chunks are loaded for
that tile alone (block = 1; traffic ``tiles * (valid rows + valid cols) * K``): the A and B
banks are double-buffered, so chunk c+1 loads while chunk c runs. The loop order still decides
the tile order (A-stationary: n-tiles inner, B-stationary: m-tiles inner) and thereby how
often non-resident post-op records are reloaded. The only limit left is max_k: the total K of
a tile, for which the accumulator is proven not to overflow (``config.max_k``, by default
the largest K that a 32-bit accumulator proves for int8).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from ..config import AccelConfig
from ..errors import UserError
from .program import A_STATIONARY, B_STATIONARY, PARAM_RECORD_BYTES


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def align(n: int, a: int) -> int:
    return ceil_div(n, a) * a


def conv_out(size: int, k: int, s: int, p: int) -> int:
    return (size + 2 * p - k) // s + 1


def inbounds_1d(out: int, k: int, s: int, p: int, size: int) -> int:
    """Number of (o, kk) pairs, o < out, kk < k, whose input index o*s + kk - p is in [0, size)."""
    return sum(1 for o in range(out) for kk in range(k) if 0 <= o * s + kk - p < size)


def k_chunk(config: AccelConfig) -> int:
    """The longest K one EXEC streams: the whole words of a lane of the smaller bank (A, B),
    at most the EXEC K field's 16 bits; a longer K is split into chunks of this length."""
    ab = config.axi_data_width // 8
    return min(config.spad_a_depth // ab, config.spad_b_depth // ab, 0xFFFF // ab) * ab


def k_chunks(K: int, config: AccelConfig) -> list[tuple[int, int]]:
    """(k0, length) of the chunks of a K-long reduction (one chunk when K fits a bank)."""
    kc = k_chunk(config)
    return [(k0, min(kc, K - k0)) for k0 in range(0, K, kc)]


def packed_panel_bytes(K: int, cols: int, axi_bytes: int) -> int:
    """Bytes of one packed weight panel: ``cols`` lanes (B^T rows) of ``round_up(K, AB)`` bytes."""
    return cols * align(K, axi_bytes)


def k_words(K: int, axi_bytes: int) -> int:
    """Scratchpad words one lane of a K-long panel takes (element k = byte k%AB of word k//AB)."""
    return ceil_div(K, axi_bytes)


@dataclass(frozen=True)
class GemmTiling:
    """A GEMM's tiling and its traffic, all derived from the shape and the config."""
    M: int
    N: int
    K: int
    batch: int
    rows: int
    cols: int
    m_tiles: int
    n_tiles: int
    order: int
    block: int
    a_pass_bytes: int        # bytes of A read by one pass over all M panels (one batch element)
    b_pass_bytes: int        # bytes of B read by one pass over all N panels
    p_panel_bytes: int       # post-op record bytes per N panel
    p_resident: bool = True  # all records fit the parameter memory at once
    k_chunks: int = 1        # EXECs per tile (K split into chunks that fit the banks)

    @property
    def tiles(self) -> int:
        return self.batch * self.m_tiles * self.n_tiles

    @property
    def macs(self) -> int:
        return self.batch * self.M * self.N * self.K

    @property
    def a_passes(self) -> int:
        if self.k_chunks > 1:                  # every tile loads its own chunks
            return self.batch * self.n_tiles
        return self.batch * (1 if self.order == A_STATIONARY else ceil_div(self.n_tiles, self.block))

    @property
    def b_passes(self) -> int:
        if self.k_chunks > 1:
            return self.batch * self.m_tiles
        return self.batch * (ceil_div(self.m_tiles, self.block) if self.order == A_STATIONARY else 1)

    @property
    def p_passes(self) -> int:
        """Loads of the post-op records: once when they all fit the parameter memory (or with
        B-stationary blocks sized to fit it), else once per pass over the N panels."""
        if self.k_chunks > 1 and not self.p_resident:     # records follow the tile order
            return self.batch * (self.m_tiles if self.order == A_STATIONARY else 1)
        return 1 if self.p_resident or self.order == B_STATIONARY else self.b_passes

    @property
    def bytes_read(self) -> int:
        return (self.a_passes * self.a_pass_bytes + self.b_passes * self.b_pass_bytes
                + self.p_passes * self.n_tiles * self.p_panel_bytes)

    @property
    def bytes_written(self) -> int:
        return self.batch * self.M * self.N

    @property
    def core_cycles(self) -> int:
        """Cycles of the core alone for the tiles back to back (``systolic.run_cycles``)."""
        t = self.tiles
        return self.K + (t - 1) * max(self.K, self.rows) + 2 * self.rows + self.cols + 1 if t else 0

    def stats(self) -> dict:
        return {"M": self.M, "N": self.N, "K": self.K, "batch": self.batch, "m_tiles": self.m_tiles,
                "n_tiles": self.n_tiles, "tiles": self.tiles, "macs": self.macs,
                "pe_utilization": round(self.macs / (self.tiles * self.rows * self.cols * self.K), 6),
                "order": "A-stationary" if self.order == A_STATIONARY else "B-stationary",
                "block": self.block, "dram_bytes_read": self.bytes_read,
                "dram_bytes_written": self.bytes_written, "core_cycles": self.core_cycles,
                **({"k_chunks": self.k_chunks} if self.k_chunks > 1 else {})}


def plan_gemm(M: int, N: int, K: int, batch: int, config: AccelConfig, *, a_pass_bytes: int,
              b_pass_bytes: int, p_panel_bytes: int, where: str) -> GemmTiling:
    """Tile a GEMM; ``where`` names the layer in a refusal (``layer X (module Y)``)."""
    rows, cols = config.rows, config.cols
    if K > config.max_k:
        raise UserError(f"{where}: reduction length K={K} exceeds config max_k={config.max_k}, the "
                        f"longest K whose sum of products is proven to fit acc_width="
                        f"{config.acc_width} (raise max_k, and acc_width with it if needed)")
    if p_panel_bytes > PARAM_RECORD_BYTES and config.spad_c_depth < cols:
        raise UserError(f"{where}: config spad_c_depth={config.spad_c_depth} cannot hold the "
                        f"{cols} post-op records of one tile")
    m_tiles, n_tiles = ceil_div(M, rows), ceil_div(N, cols)
    chunks = len(k_chunks(K, config))
    kw = k_words(min(K, k_chunk(config)), config.axi_data_width // 8)
    common = dict(k_chunks=chunks, M=M, N=N, K=K, batch=batch, rows=rows, cols=cols, m_tiles=m_tiles, n_tiles=n_tiles,
                  a_pass_bytes=a_pass_bytes, b_pass_bytes=b_pass_bytes, p_panel_bytes=p_panel_bytes,
                  p_resident=p_panel_bytes <= PARAM_RECORD_BYTES or n_tiles * cols <= config.spad_c_depth)
    ab = config.axi_data_width // 8
    b_block = min(n_tiles, (config.spad_b_depth // ab) // kw)
    if p_panel_bytes > PARAM_RECORD_BYTES and n_tiles * cols > config.spad_c_depth:
        # the records of a B-stationary block must fit half of the parameter memory together
        # (reloads are double-buffered, see commands.py)
        if config.spad_c_depth // 2 < cols:
            raise UserError(f"{where}: {n_tiles * cols} post-op records exceed config spad_c_depth="
                            f"{config.spad_c_depth}, and half of it cannot hold the {cols} records "
                            f"of one tile for double-buffered reloads (raise spad_c_depth)")
        b_block = min(b_block, (config.spad_c_depth // 2) // cols)
    a_block = min(m_tiles, (config.spad_a_depth // ab) // kw)
    if chunks > 1:            # the core keeps one tile's sums: one panel per bank
        a_block = b_block = 1
    a_stat = GemmTiling(order=A_STATIONARY, block=a_block, **common)
    b_stat = GemmTiling(order=B_STATIONARY, block=b_block, **common)
    return a_stat if a_stat.bytes_read <= b_stat.bytes_read else b_stat


@dataclass(frozen=True)
class Step:
    """One step of the loop nest: ``kind`` "load_a" (tile=mt), "load_b" (tile=nt, with its
    post-op records) or "tile" (mt, nt); ``half``/``slot``: where the A and B panels are in the
    scratchpads (half 0/1, panel slot within the half)."""
    kind: str
    batch: int
    mt: int = -1
    nt: int = -1
    a_half: int = 0
    a_slot: int = 0
    b_half: int = 0
    b_slot: int = 0


def schedule(batch: int, m_tiles: int, n_tiles: int, order: int, block: int) -> Iterator[Step]:
    """The loop nest above, as the controller runs it (loads in issue order; with double
    buffering the load of the next panel overlaps the tiles of the current one)."""
    stream_half = 0
    blk_half = 0
    for b in range(batch):
        if order == A_STATIONARY:
            for m0 in range(0, m_tiles, block):
                mts = range(m0, min(m0 + block, m_tiles))
                for s, mt in enumerate(mts):
                    yield Step("load_a", b, mt=mt, a_half=blk_half, a_slot=s)
                for nt in range(n_tiles):
                    yield Step("load_b", b, nt=nt, b_half=stream_half)
                    for s, mt in enumerate(mts):
                        yield Step("tile", b, mt=mt, nt=nt, a_half=blk_half, a_slot=s, b_half=stream_half)
                    stream_half ^= 1
                blk_half ^= 1
        elif order == B_STATIONARY:
            for n0 in range(0, n_tiles, block):
                nts = range(n0, min(n0 + block, n_tiles))
                for s, nt in enumerate(nts):
                    yield Step("load_b", b, nt=nt, b_half=blk_half, b_slot=s)
                for mt in range(m_tiles):
                    yield Step("load_a", b, mt=mt, a_half=stream_half)
                    for s, nt in enumerate(nts):
                        yield Step("tile", b, mt=mt, nt=nt, a_half=stream_half, b_half=blk_half, b_slot=s)
                    stream_half ^= 1
                blk_half ^= 1
        else:
            raise ValueError(f"unknown loop order {order}")
