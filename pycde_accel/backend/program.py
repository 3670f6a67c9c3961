"""The layer program: one fixed-size descriptor per accelerator layer, a header, and their encodings.

The program describes the layers (the host reads it to understand them; design.json carries its
JSON form); the accelerator itself runs each layer's *commands* (:mod:`.commands`), which the
compiler derives from the descriptor alone. :mod:`pycde_accel.backend.executor` is the golden
model of the descriptor semantics, :mod:`.cmdexec` that of the commands.

Version 2: the padded channels-last layout (docs/accelerator-contract.md; innermost dim padded to
a multiple of ``cols``; B packed as B^T lanes; im2col over the padded channel pitch).

Binary encoding (all words little-endian 32 bit)
------------------------------------------------
Header, :data:`HEADER_WORDS` = 8 words::

    w0  magic        0x43434150 (the bytes b"PACC")
    w1  version      :data:`VERSION`
    w2  num_layers
    w3  desc_words   words per descriptor (:data:`DESC_WORDS` = 32)
    w4  rows         array rows the program was tiled for
    w5  cols         array cols
    w6  axi_bytes    AXI data width in bytes the image is aligned to
    w7  checksum     sum of all descriptor words mod 2^32

Then ``num_layers`` descriptors of :data:`DESC_WORDS` words each. Descriptor word 0 is
``op | flags << 8`` (op in bits 0-7, flag bits 8-15, bits 16-31 zero); word 1 is the layer index;
words 2.. are the op's fields, one word each, in the order of the dataclass fields listed in
``FIELDS`` below (unused trailing words are zero). Fields named ``*stride*``, ``ma``, ``mb`` are
signed (two's complement); all others unsigned. Strides and addresses are in bytes (every
activation is int8, so a byte is an element). Address fields are absolute DRAM byte addresses.

Ops and their fields (``dims``/strides lists are 4 entries, outermost first; unused outer
entries have count 1 and stride 0):

* ``GEMM`` (1): ``C = post(A @ B)``, tiled per :mod:`pycde_accel.backend.tiling`.
  a_base, b_base, c_base, p_base (post-op parameter records), M, N, K, batch, m_tiles, n_tiles,
  block (panels of the stationary operand per block),
  a_stride_batch, a_stride_m, a_stride_k, b_stride_batch, b_stride_k, b_stride_n, c_stride_batch, c_stride_m, and for im2col (flag IM2COL):
  in_c, in_h, in_w, out_h, out_w, kernel (kh | kw << 16), stride (sh | sw << 16),
  pad (ph | pw << 16), in_stride_c, in_stride_h, in_stride_w (a_stride_batch is the stride of n).
  Flags: RELU, BIAS (records carry a bias), B_PACKED (B is a pre-packed weight), IM2COL (A is read
  from a feature map by im2col addressing), PER_TENSOR (one parameter record for every column),
  B_STAT (loop order B-stationary; clear: A-stationary). Bit values (of the flags byte): RELU 1,
  BIAS 2, B_PACKED 4, IM2COL 8, PER_TENSOR 16, B_STAT 32. With IM2COL, A row m is output pixel
  (n, oh, ow) = unravel(m, (batch_n, out_h, out_w)) and A column k is (kh, kw, c) =
  unravel(k, (kh, kw, in_c)) where in_c is the input's padded channel pitch (K = kh*kw*in_c; the
  weights are zero past the real channels, whose count the descriptor does not need); without
  it, A[m][k] is at a_base + b*a_stride_batch + m*a_stride_m + k*a_stride_k. B[k][n]: with
  B_PACKED at b_base + (n // cols)*b_stride_n + (n % cols)*b_stride_k + k (panels of ``cols``
  lanes, B^T rows of b_stride_k = round_up(K, axi_bytes) bytes, b_stride_n = cols*b_stride_k);
  without it at b_base + b*b_stride_batch + k*b_stride_k + n*b_stride_n (the command compiler
  needs b_stride_k = 1: B^T rows). C[m][n] goes to c_base + b*c_stride_batch + m*c_stride_m + n
  (c_stride_m the output's padded pitch). K counts padding bytes of A's rows (their weights are
  zero), so ``M*N*K`` is the work of the array, not of the torch layer.
* ``ADD`` (2): residual add. a_base, b_base, out_base, ma, mb, shift, dims[4], a_strides[4],
  b_strides[4], out_strides[4]. Flag RELU.
* ``RELU`` (3): standalone ReLU. in_base, out_base, dims[4], in_strides[4], out_strides[4].
* ``MAXPOOL`` (4): in_base, out_base, n, c, h, w, out_h, out_w, kernel, stride, pad (packed as in
  GEMM), in_strides (n, c, h, w), out_strides (n, c, h, w). Padding is -128.
* ``COPY`` (5): strided gather (reshape/transpose that is not a view). src_base, dst_base,
  dims[4], src_strides[4], dst_strides[4].
* ``VMAX`` (6): ``out = post(max(pre(x), s))`` element-wise over the 4 strided loops, where
  ``pre(x) = sat8(RoundingDivideByPOT(x * ma, shift_a))`` (none when ``ma == 0``) and
  ``post(y) = sat8(RoundingDivideByPOT(y * mb, shift_b))`` (none when ``mb == 0``). x_base,
  s_base, out_base, ma, shift_a, mb, shift_b, dims[4], x_strides[4], s_strides[4],
  out_strides[4]. (``maximum`` rescales its smaller-scale operand with ``pre``; ``minimum`` is
  ``-max(-x', -s)`` with the negations in ``pre`` and ``post``.)
* ``GATHER`` (7): a pixel gather on the systolic array (flip, padding, nearest upsampling,
  concatenation along channels, channel permutations). Fields b_base (packed B: ``N`` lanes of
  ``K`` bytes), c_base, p_base (``n_tiles * cols`` post-op records), one_base (a beat whose
  byte 0 is 1, mode CONST), mode (bits FLIP_H 1, FLIP_W 2, CAT 4, CONST 8), n, in_h, in_w, out_h, out_w, N, K, pad (top | left << 16), up
  (uh | uw << 16), c_stride_n, c_stride_h, c_pitch, n_srcs, src_base[4], src_pitch[4],
  src_channels[4]. Output pixel (b, oh, ow): ``th = oh - top``, ``tw = ow - left``; inside iff
  ``0 <= th < in_h * uh`` and ``0 <= tw < in_w * uw``; then ``ih = th // uh`` (``in_h - 1 - ih``
  with FLIP_H), ``iw`` likewise (FLIP_W). Its A row (K bytes) is the concatenation over the
  sources s of the ``src_pitch[s]`` bytes at ``src_base[s] + ((b * in_h + ih) * in_w + iw) *
  src_pitch[s]`` (dense channels-last sources), then with mode CONST one more beat: zero inside,
  ``one_base``'s beat outside; zero bytes outside for the sources. The result
  ``y[c] = requantize(sum_k A[k] * B[c][k] + bias[c], m0[c], shift[c])`` for c < N goes to
  ``c_base + b * c_stride_n + oh * c_stride_h + ow * c_pitch + c``. Mode CAT: B is the
  selection of a concatenation (output channel c of source s's channel j is K byte
  ``sum(src_pitch[:s]) + j``, ``src_channels`` the real channel counts), so each n-tile streams
  only the beats of K its channels come from (the scheduler's K window).
* ``LUT`` (8): element-wise function by table: ``out = table[in + 128]``. in_base, out_base,
  table_base (256 int8 codes, entry i for input code i - 128), dims[4], in_strides[4],
  out_strides[4].
* ``MUL`` (9): element-wise product ``out = sat8(RDBPOT(SRDHM(a * b, m0), shift))``. a_base,
  b_base, out_base, m0, shift, dims[4], a_strides[4], b_strides[4], out_strides[4]. Flag
  BCAST (16): b is broadcast over pixels: dims = (1, images, pixels, pitch) with b's pixel
  stride 0 (a's and out's channels-last, one ``pitch``-byte vector per pixel).
* ``WGEMM`` (10): a windowed GEMM per channel slice (grouped and depthwise convolution, average
  pooling); :class:`WinGemm` gives its fields and semantics.
* ``MAXPOOLD`` (11): MAXPOOL with a ``dilation`` field (:class:`MaxPoolDilated`).
* ``ROWRED`` (12): a row reduction broadcast over the row (:class:`RowRed`).

``word_map(Gemm)`` (etc.) gives each field's word index, for the controller's decoder.

Post-op parameter records (GEMM ``p_base``): 16 bytes per output column n: int32 bias (0 without
flag BIAS), int32 m0, int32 shift, int32 zero; ``n_tiles * cols`` records (the padding columns are
zero), or one record with flag PER_TENSOR (repeated to fill 64 bytes).

JSON form (``Program.to_json()``): ``{"magic", "version", "rows", "cols", "axi_bytes",
"layers": [{"op": "gemm", "index", "name", "module", "flags": [...], <fields>}]}``; ``name`` and
``module`` (the frontend's node name and module path) are not in the binary form.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass, field
from typing import ClassVar

from .. import contract

MAGIC = 0x43434150          # b"PACC" little-endian
VERSION = 2
HEADER_WORDS = 8
DESC_WORDS = 32
ND = 4                      # loop dims of element-wise / copy descriptors

# flag bits (shifted by 8 in word 0)
RELU, BIAS, B_PACKED, IM2COL, PER_TENSOR, B_STAT = 1, 2, 4, 8, 16, 32
#: WGEMM: one weight panel for every n-tile (pooling's unit weights), loaded once
W_SHARED = 64
#: WGEMM: a depthwise conv on the core's depthwise mode (slice == cols == axi bytes)
DEPTHWISE = 128
FLAG_NAMES = {RELU: "relu", BIAS: "bias", B_PACKED: "b_packed", IM2COL: "im2col", PER_TENSOR: "per_tensor",
              B_STAT: "b_stationary", W_SHARED: "w_shared", DEPTHWISE: "depthwise"}

A_STATIONARY, B_STATIONARY = 0, 1
PARAM_RECORD_BYTES = contract.PARAM_RECORD_BYTES


class ProgramError(ValueError):
    """A malformed binary program (bad magic, version, size or checksum)."""


def pack2(lo: int, hi: int) -> int:
    """Two 16-bit values in one word (``lo | hi << 16``)."""
    if not (0 <= lo < 1 << 16 and 0 <= hi < 1 << 16):
        raise ValueError(f"pack2: {lo}, {hi} do not fit 16 bits")
    return lo | hi << 16


def unpack2(w: int) -> tuple[int, int]:
    return w & 0xFFFF, w >> 16


def _signed_field(name: str) -> bool:
    return "stride" in name or name in ("ma", "mb")


def word_map(cls) -> dict[str, int]:
    """Field name (lists as ``name[i]``) -> word index in the descriptor (word 0: op | flags << 8,
    word 1: index)."""
    return {name: 2 + i for i, (name, _) in enumerate(_flat_fields(cls()))}


def _flat_fields(desc) -> list[tuple[str, int]]:
    """(name, value) of each word after word 1, lists expanded to name[i]."""
    out = []
    for f in dataclasses.fields(desc):
        if f.name in ("flags", "index", "name", "module"):
            continue
        v = getattr(desc, f.name)
        if isinstance(v, tuple):
            out += [(f"{f.name}[{i}]", x) for i, x in enumerate(v)]
        else:
            out.append((f.name, v))
    return out


@dataclass(frozen=True)
class Descriptor:
    """Common part: ``index`` (layer position), ``flags`` and, not encoded, the frontend's node
    ``name`` and ``module`` path."""
    OP: ClassVar[int] = 0
    KIND: ClassVar[str] = "?"

    def words(self) -> list[int]:
        ws = [self.OP | self.flags << 8, self.index]
        for name, v in _flat_fields(self):
            v = int(v)
            lo, hi = (-(1 << 31), (1 << 31) - 1) if _signed_field(name) else (0, (1 << 32) - 1)
            if not lo <= v <= hi:
                raise ValueError(f"{self.KIND} layer {self.index}: field {name}={v} does not fit a "
                                 f"{'signed' if lo else 'unsigned'} 32-bit word")
            ws.append(v & 0xFFFFFFFF)
        if len(ws) > DESC_WORDS:  # pragma: no cover - a layout bug, checked by the tests
            raise AssertionError(f"{self.KIND}: {len(ws)} words > {DESC_WORDS}")
        return ws + [0] * (DESC_WORDS - len(ws))

    @classmethod
    def from_words(cls, ws: list[int], name: str = "", module: str = "") -> "Descriptor":
        kw = {"flags": (ws[0] >> 8) & 0xFF, "index": ws[1], "name": name, "module": module}
        i = 2
        for f in dataclasses.fields(cls):
            if f.name in kw:
                continue
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            n = len(default) if isinstance(default, tuple) else 1
            vals = []
            for j in range(n):
                v = ws[i]
                i += 1
                if _signed_field(f.name) and v >= 1 << 31:
                    v -= 1 << 32
                vals.append(v)
            kw[f.name] = tuple(vals) if isinstance(default, tuple) else vals[0]
        return cls(**kw)

    def has(self, flag: int) -> bool:
        return bool(self.flags & flag)

    def to_json(self) -> dict:
        d = {"op": self.KIND, "index": self.index, "name": self.name, "module": self.module,
             "flags": [n for b, n in FLAG_NAMES.items() if self.flags & b]}
        for f in dataclasses.fields(self):
            if f.name not in ("flags", "index", "name", "module"):
                v = getattr(self, f.name)
                d[f.name] = list(v) if isinstance(v, tuple) else v
        return d

    @staticmethod
    def from_json(d: dict) -> "Descriptor":
        cls = OPS_BY_KIND[d["op"]]
        flags = 0
        for b, n in FLAG_NAMES.items():
            if n in d["flags"]:
                flags |= b
        kw = {"flags": flags, "index": d["index"], "name": d.get("name", ""), "module": d.get("module", "")}
        for f in dataclasses.fields(cls):
            if f.name not in kw:
                v = d[f.name]
                kw[f.name] = tuple(v) if isinstance(v, list) else v
        return cls(**kw)


_Z4 = (0, 0, 0, 0)
_O4 = (1, 1, 1, 1)


@dataclass(frozen=True)
class Gemm(Descriptor):
    index: int = 0
    flags: int = 0
    a_base: int = 0
    b_base: int = 0
    c_base: int = 0
    p_base: int = 0
    M: int = 1
    N: int = 1
    K: int = 1
    batch: int = 1
    m_tiles: int = 1
    n_tiles: int = 1
    block: int = 1
    a_stride_batch: int = 0
    a_stride_m: int = 0
    a_stride_k: int = 0
    b_stride_batch: int = 0
    b_stride_k: int = 0
    b_stride_n: int = 0
    c_stride_batch: int = 0
    c_stride_m: int = 0
    in_c: int = 0
    in_h: int = 0
    in_w: int = 0
    out_h: int = 0
    out_w: int = 0
    kernel: int = 0
    stride: int = 0
    pad: int = 0
    in_stride_c: int = 0
    in_stride_h: int = 0
    in_stride_w: int = 0
    name: str = field(default="", compare=False)
    module: str = field(default="", compare=False)
    OP: ClassVar[int] = 1
    KIND: ClassVar[str] = "gemm"

    @property
    def order(self) -> int:
        return B_STATIONARY if self.flags & B_STAT else A_STATIONARY


@dataclass(frozen=True)
class Add(Descriptor):
    index: int = 0
    flags: int = 0
    a_base: int = 0
    b_base: int = 0
    out_base: int = 0
    ma: int = 0
    mb: int = 0
    shift: int = 0
    dims: tuple = _O4
    a_strides: tuple = _Z4
    b_strides: tuple = _Z4
    out_strides: tuple = _Z4
    name: str = field(default="", compare=False)
    module: str = field(default="", compare=False)
    OP: ClassVar[int] = 2
    KIND: ClassVar[str] = "add"


@dataclass(frozen=True)
class Relu(Descriptor):
    index: int = 0
    flags: int = 0
    in_base: int = 0
    out_base: int = 0
    dims: tuple = _O4
    in_strides: tuple = _Z4
    out_strides: tuple = _Z4
    name: str = field(default="", compare=False)
    module: str = field(default="", compare=False)
    OP: ClassVar[int] = 3
    KIND: ClassVar[str] = "relu"


@dataclass(frozen=True)
class MaxPool(Descriptor):
    index: int = 0
    flags: int = 0
    in_base: int = 0
    out_base: int = 0
    n: int = 1
    c: int = 1
    h: int = 1
    w: int = 1
    out_h: int = 1
    out_w: int = 1
    kernel: int = 0
    stride: int = 0
    pad: int = 0
    in_strides: tuple = _Z4
    out_strides: tuple = _Z4
    name: str = field(default="", compare=False)
    module: str = field(default="", compare=False)
    OP: ClassVar[int] = 4
    KIND: ClassVar[str] = "maxpool"


@dataclass(frozen=True)
class Copy(Descriptor):
    index: int = 0
    flags: int = 0
    src_base: int = 0
    dst_base: int = 0
    dims: tuple = _O4
    src_strides: tuple = _Z4
    dst_strides: tuple = _Z4
    name: str = field(default="", compare=False)
    module: str = field(default="", compare=False)
    OP: ClassVar[int] = 5
    KIND: ClassVar[str] = "copy"


@dataclass(frozen=True)
class VMax(Descriptor):
    """Element-wise max of two int8 operands on the vector engine, with an optional rescale of
    the X operand before it and of the result after it (both in X, see the module docstring)."""
    index: int = 0
    flags: int = 0
    x_base: int = 0
    s_base: int = 0
    out_base: int = 0
    ma: int = 0
    shift_a: int = 0
    mb: int = 0
    shift_b: int = 0
    dims: tuple = _O4
    x_strides: tuple = _Z4
    s_strides: tuple = _Z4
    out_strides: tuple = _Z4
    name: str = field(default="", compare=False)
    module: str = field(default="", compare=False)
    OP: ClassVar[int] = 6
    KIND: ClassVar[str] = "vmax"


#: bits of a Gather's ``mode`` field
G_FLIP_H, G_FLIP_W, G_CAT, G_CONST = 1, 2, 4, 8
NSRC = 4


@dataclass(frozen=True)
class Gather(Descriptor):
    """A pixel gather on the systolic array: each output pixel's channel vector is a channel
    matrix B applied to the concatenated channel vectors of its source pixel (see the module
    docstring)."""
    index: int = 0
    flags: int = 0
    b_base: int = 0
    c_base: int = 0
    p_base: int = 0
    one_base: int = 0
    mode: int = 0
    n: int = 1
    in_h: int = 1
    in_w: int = 1
    out_h: int = 1
    out_w: int = 1
    N: int = 1
    K: int = 1
    pad: int = 0
    up: int = 0x10001          # uh | uw << 16: 1, 1
    c_stride_n: int = 0
    c_stride_h: int = 0
    c_pitch: int = 0
    n_srcs: int = 1
    src_base: tuple = _Z4
    src_pitch: tuple = _Z4
    src_channels: tuple = _Z4
    name: str = field(default="", compare=False)
    module: str = field(default="", compare=False)
    OP: ClassVar[int] = 7
    KIND: ClassVar[str] = "gather"


def gather_pixel(d: Gather, oh: int, ow: int):
    """``(ih, iw)`` of output pixel (oh, ow) of a gather, or None outside the source."""
    pt, pl = unpack2(d.pad)
    uh, uw = unpack2(d.up)
    th, tw = oh - pt, ow - pl
    if not (0 <= th < d.in_h * uh and 0 <= tw < d.in_w * uw):
        return None
    ih, iw = th // uh, tw // uw
    if d.mode & G_FLIP_H:
        ih = d.in_h - 1 - ih
    if d.mode & G_FLIP_W:
        iw = d.in_w - 1 - iw
    return ih, iw


def gather_k_window(d: Gather, c0: int, c1: int, axi_bytes: int) -> tuple[int, int]:
    """The beat-aligned K byte range ``[k0, k1)`` that output channels ``c0 .. c1-1`` read:
    with mode CAT from their sources' segments (and the constant's beat with CONST), else all
    of K."""
    if not d.mode & G_CAT:
        return 0, -(-d.K // axi_bytes) * axi_bytes
    ks, kbase, cbase = [], 0, 0
    for s in range(d.n_srcs):
        lo, hi = max(c0, cbase), min(c1, cbase + d.src_channels[s])
        if lo < hi:
            ks += [kbase + lo - cbase, kbase + hi - cbase]
        kbase += d.src_pitch[s]
        cbase += d.src_channels[s]
    if d.mode & G_CONST:                      # the constant's beat, last in K
        ks += [d.K - axi_bytes, d.K]
    if not ks:
        return 0, axi_bytes
    return min(ks) // axi_bytes * axi_bytes, -(-max(ks) // axi_bytes) * axi_bytes


@dataclass(frozen=True)
class Lut(Descriptor):
    index: int = 0
    flags: int = 0
    in_base: int = 0
    out_base: int = 0
    table_base: int = 0
    dims: tuple = _O4
    in_strides: tuple = _Z4
    out_strides: tuple = _Z4
    name: str = field(default="", compare=False)
    module: str = field(default="", compare=False)
    OP: ClassVar[int] = 8
    KIND: ClassVar[str] = "lut"


@dataclass(frozen=True)
class Mul(Descriptor):
    index: int = 0
    flags: int = 0
    a_base: int = 0
    b_base: int = 0
    out_base: int = 0
    m0: int = 0
    shift: int = 0
    dims: tuple = _O4
    a_strides: tuple = _Z4
    b_strides: tuple = _Z4
    out_strides: tuple = _Z4
    name: str = field(default="", compare=False)
    module: str = field(default="", compare=False)
    OP: ClassVar[int] = 9
    KIND: ClassVar[str] = "mul"


#: MUL flag: the b operand is broadcast over the pixels (the flags byte is per descriptor)
BCAST = 16

#: WGEMM ``mode``: which post-op record each output uses and how a window's taps are placed
WG_CONV, WG_AVG_PAD, WG_AVG, WG_ADAPTIVE = 0, 1, 2, 3


@dataclass(frozen=True)
class WinGemm(Descriptor):
    """``WGEMM`` (10): a windowed GEMM per channel slice (grouped/depthwise convolution, average
    pooling). Output pixel (n, oh, ow), channel ``o = nt * cols + j`` (n-tile nt, lane j < N):
    ``acc = bias + sum_{ki, kj, b < slice} x[n, ih, iw, nt * slice_step + b] * W_nt[j][(ki * kw +
    kj) * slice + b]`` over the taps whose input pixel exists (others are zero), then the
    requantize of the record (:meth:`record`), written channels-last at ``out_base + n *
    out_stride_n + oh * out_stride_h + ow * out_pitch + o``. ``x[n, ih, iw, byte]`` is at
    ``in_base + n * in_stride_n + ih * in_stride_h + iw * in_pitch + byte``. ``W_nt`` is the
    packed panel at ``w_base + nt * cols * round_up(K, axi_bytes)`` (``cols`` lanes, K = kh * kw *
    slice). Tap placement (:meth:`tap`): ``mode`` WG_CONV / WG_AVG_PAD / WG_AVG: ``ih = oh * sh +
    ki * dh - ph`` (pad = top | left << 16, dilation dh | dw << 16); WG_ADAPTIVE: ``ih =
    floor(oh * in_h / out_h) + ki`` while below ``ceil((oh + 1) * in_h / out_h)`` (kernel: the
    largest window). Records: WG_CONV per channel (record o; when they do not all fit P the
    schedule reloads them per n-tile); the average modes one record per class of window counts
    (flag PER_TENSOR; WG_AVG_PAD counts the taps inside the padded extent ``[-ph, in_h + ph)``,
    as PyTorch's count_include_pad, WG_AVG and WG_ADAPTIVE the taps inside the input).
    ``group_in``: the input channels one output channel reads (its MACs per tap; 1 for pooling).
    Flags: RELU, BIAS, PER_TENSOR, W_SHARED (every n-tile uses the panel at ``w_base``),
    DEPTHWISE (slice == cols == axi bytes, a depthwise conv: ``acc = bias + sum_{ki, kj}
    x[n, ih, iw, nt * slice_step + j] * W_nt[j][ki * kw + kj]``, the panel's lane j holding
    channel j's kh * kw taps, K = kh * kw, ``cols * round_up(K, axi_bytes)`` bytes per n-tile;
    the EXEC's DW mode)."""
    index: int = 0
    flags: int = 0
    in_base: int = 0
    w_base: int = 0
    out_base: int = 0
    p_base: int = 0
    n: int = 1
    in_h: int = 1
    in_w: int = 1
    out_h: int = 1
    out_w: int = 1
    kernel: int = 0
    stride: int = 0
    pad: int = 0
    dilation: int = 0
    in_pitch: int = 0
    in_stride_h: int = 0
    in_stride_n: int = 0
    out_pitch: int = 0
    out_stride_h: int = 0
    out_stride_n: int = 0
    N: int = 1
    n_tiles: int = 1
    slice: int = 0
    slice_step: int = 0
    mode: int = 0
    records: int = 0
    group_in: int = 1
    name: str = field(default="", compare=False)
    module: str = field(default="", compare=False)
    OP: ClassVar[int] = 10
    KIND: ClassVar[str] = "wgemm"

    def _dim(self, axis: int):
        kh, kw = unpack2(self.kernel)
        sh, sw = unpack2(self.stride)
        ph, pw = unpack2(self.pad)
        dh, dw = unpack2(self.dilation)
        return ((kh, sh, ph, dh, self.in_h, self.out_h) if axis == 0 else
                (kw, sw, pw, dw, self.in_w, self.out_w))

    def tap(self, axis: int, o: int, k: int):
        """Input coordinate of tap k of output coordinate o along ``axis`` (0: h, 1: w), or None
        (padding / outside the window)."""
        kk, s, p, d, n_in, n_out = self._dim(axis)
        if self.mode == WG_ADAPTIVE:
            lo, hi = (o * n_in) // n_out, -(-((o + 1) * n_in) // n_out)
            i = lo + k
            return i if i < hi else None
        i = o * s + k * d - p
        return i if 0 <= i < n_in else None

    def count(self, axis: int, o: int) -> int:
        """Taps along ``axis`` that the average of output coordinate o divides by."""
        kk, s, p, d, n_in, n_out = self._dim(axis)
        if self.mode == WG_AVG_PAD:
            start = o * s - p
            return min(start + kk, n_in + p) - start
        return sum(self.tap(axis, o, k) is not None for k in range(kk))

    def count_classes(self) -> tuple[list, list]:
        """The sorted distinct counts along h and along w (records: one per pair, h-major)."""
        return (sorted({self.count(0, o) for o in range(self.out_h)}),
                sorted({self.count(1, o) for o in range(self.out_w)}))

    def record(self, oh: int, ow: int, lane_channel: int = 0) -> int:
        """Post-op record of output (oh, ow) and channel ``lane_channel``."""
        if self.mode == WG_CONV:
            return lane_channel
        ch, cw = self.count_classes()
        return ch.index(self.count(0, oh)) * len(cw) + cw.index(self.count(1, ow))


@dataclass(frozen=True)
class MaxPoolDilated(Descriptor):
    """``MAXPOOLD`` (11): MAXPOOL with a dilation (dh | dw << 16): tap (ki, kj) of output (oh, ow)
    is input (oh * sh + ki * dh - ph, ow * sw + kj * dw - pw); taps outside the input are -128
    (ceil mode's overhang as well)."""
    index: int = 0
    flags: int = 0
    in_base: int = 0
    out_base: int = 0
    n: int = 1
    c: int = 1
    h: int = 1
    w: int = 1
    out_h: int = 1
    out_w: int = 1
    kernel: int = 0
    stride: int = 0
    pad: int = 0
    in_strides: tuple = _Z4
    out_strides: tuple = _Z4
    dilation: int = 0
    name: str = field(default="", compare=False)
    module: str = field(default="", compare=False)
    OP: ClassVar[int] = 11
    KIND: ClassVar[str] = "maxpoold"


@dataclass(frozen=True)
class RowRed(Descriptor):
    """``ROWRED`` (12): per row r < rows of ``length`` int8 elements at ``in_base + r *
    in_stride`` (beat aligned), R = the row's max (``reduce`` = contract.ROW_MAX), sum (ROW_SUM)
    or sum of squares (ROW_SUMSQ), ``y = sat8(RDBPOT(SRDHM(R, m0), shift))`` in elements
    ``0 .. length-1`` of output row r at ``out_base + r * pitch`` (``pitch`` a whole number of
    beats; the VEC ROWRED that runs it writes y into the row's padding too)."""
    index: int = 0
    flags: int = 0
    in_base: int = 0
    out_base: int = 0
    rows: int = 1
    length: int = 1
    in_stride: int = 0
    pitch: int = 0
    reduce: int = 0
    m0: int = 0
    shift: int = 0
    name: str = field(default="", compare=False)
    module: str = field(default="", compare=False)
    OP: ClassVar[int] = 12
    KIND: ClassVar[str] = "rowred"


OPS = {c.OP: c for c in (Gemm, Add, Relu, MaxPool, Copy, VMax, Gather, Lut, Mul, WinGemm,
                             MaxPoolDilated, RowRed)}
OPS_BY_KIND = {c.KIND: c for c in OPS.values()}


@dataclass(frozen=True)
class Program:
    """The header values and the descriptors, in execution order."""
    rows: int
    cols: int
    axi_bytes: int
    layers: tuple = ()

    def encode(self) -> bytes:
        body: list[int] = []
        for i, d in enumerate(self.layers):
            if d.index != i:
                raise ValueError(f"layer {i} has index {d.index}")
            body += d.words()
        header = [MAGIC, VERSION, len(self.layers), DESC_WORDS, self.rows, self.cols, self.axi_bytes,
                  sum(body) & 0xFFFFFFFF]
        return struct.pack(f"<{HEADER_WORDS + len(body)}I", *header, *body)

    @property
    def nbytes(self) -> int:
        return 4 * (HEADER_WORDS + DESC_WORDS * len(self.layers))

    @staticmethod
    def decode(data: bytes, names: list[tuple[str, str]] | None = None) -> "Program":
        """Parse an encoded program (``data`` may run past its end). ``names``: optional
        (name, module) per layer, which the binary form does not carry."""
        data = bytes(data)
        if len(data) < 4 * HEADER_WORDS:
            raise ProgramError("program shorter than its header")
        h = struct.unpack_from(f"<{HEADER_WORDS}I", data)
        if h[0] != MAGIC:
            raise ProgramError(f"bad magic 0x{h[0]:08x} (expected 0x{MAGIC:08x})")
        if h[1] != VERSION:
            raise ProgramError(f"program version {h[1]}, this decoder reads {VERSION}")
        if h[3] != DESC_WORDS:
            raise ProgramError(f"descriptor size {h[3]} words, expected {DESC_WORDS}")
        n = h[2]
        need = 4 * (HEADER_WORDS + DESC_WORDS * n)
        if len(data) < need:
            raise ProgramError(f"program of {n} layers needs {need} bytes, got {len(data)}")
        body = struct.unpack_from(f"<{DESC_WORDS * n}I", data, 4 * HEADER_WORDS)
        if sum(body) & 0xFFFFFFFF != h[7]:
            raise ProgramError("descriptor checksum mismatch")
        layers = []
        for i in range(n):
            ws = list(body[i * DESC_WORDS:(i + 1) * DESC_WORDS])
            op = ws[0] & 0xFF
            if op not in OPS:
                raise ProgramError(f"layer {i}: unknown op {op}")
            nm, mod = names[i] if names else ("", "")
            layers.append(OPS[op].from_words(ws, nm, mod))
        return Program(rows=h[4], cols=h[5], axi_bytes=h[6], layers=tuple(layers))

    def to_json(self) -> dict:
        return {"magic": MAGIC, "version": VERSION, "rows": self.rows, "cols": self.cols,
                "axi_bytes": self.axi_bytes, "desc_words": DESC_WORDS,
                "layers": [d.to_json() for d in self.layers]}

    @staticmethod
    def from_json(d: dict) -> "Program":
        if d.get("magic") != MAGIC or d.get("version") != VERSION:
            raise ProgramError("JSON program: wrong magic or version")
        return Program(rows=d["rows"], cols=d["cols"], axi_bytes=d["axi_bytes"],
                       layers=tuple(Descriptor.from_json(x) for x in d["layers"]))
