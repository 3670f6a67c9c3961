"""The DRAM image: where everything lives, how weights are packed, tensor placements.

Layout rules (docs/accelerator-contract.md "DRAM layout"; R/C = config rows/cols, AB = AXI bytes):

Regions, in address order, every buffer starting at a multiple of :data:`ALIGN` = 64 bytes (a
deterministic bump allocator in the order the compiler visits the graph):

1. ``program`` at address 0: the encoded :class:`~pycde_accel.backend.program.Program` (the layer
   descriptors; the host reads them to understand the layers);
2. constants, per GEMM layer, in layer order: ``<node>.weight`` (packed B^T panels),
   ``<node>.params`` (post-op records), and for a transpose layer ``<node>.eye`` (an identity A);
3. ``<input>`` model inputs; 4. activations (one buffer per materialized tensor, no reuse);
5. ``commands``: the command lists of every layer, back to back (32 bytes per command).

Activations are channels-last (a 4-D NCHW tensor is stored NHWC; a GEMM output ``C[M, N]`` is
row-major), with the innermost physical dim padded to the pitch ``P = round_up(n_inner, C)``.
Padding bytes may hold garbage: nothing reads them as data (a weight row facing a padding byte
is zero; EXEC streams exactly K elements; VEC/MAXPOOL write garbage only into padding).
Model inputs follow the same rule (4-D inputs NHWC); :class:`Placement` packs/unpacks them.

Packed weights (``<node>.weight``): the GEMM B operand ``K x N`` (K already in the physical order
of A, see below) is cut into ``ceil(N / C)`` panels; panel nt is C lanes of ``Kp = round_up(K,
AB)`` bytes, lane j = B^T row n = nt*C + j (zero for n >= N and for k >= K), so one panel is one
LOAD (LANES, rows C, beats Kp/AB, stride Kp) of :func:`packed_panel_bytes` bytes. K order: the
byte order of A's row in DRAM: a Linear reading a padded row takes K = the row span (weights zero
facing padding, e.g. a flatten of a channels-last map gives K = H*W*Pin with zero rows for
c >= C_in); a Conv2d takes K = KH*KW*Pin in (kh, kw, c) order, c over the input's padded pitch.
``ConstSpec.k_map[p]`` is the logical weight column feeding packed row p (-1: zero).

Post-op records (``<node>.params``): 16 bytes per output column (int32 bias, m0, shift, 0),
``n_tiles * C`` records (zero past N); a per-tensor matmul has one record, repeated to 64 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .program import ND, Program
from .tiling import align, ceil_div

ALIGN = 64
# ------------------------------------------------------------------------------------------
# Views
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class View:
    """A tensor of int8 elements at ``buffer`` + ``offset``: element ``i`` is at byte
    ``offset + sum(i[d] * strides[d])`` of the buffer."""
    buffer: str
    shape: tuple
    strides: tuple
    offset: int = 0

    @staticmethod
    def contiguous(buffer: str, shape, offset: int = 0) -> "View":
        shape = tuple(int(s) for s in shape)
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= s
        return View(buffer, shape, tuple(reversed(strides)), offset)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def _np(self) -> np.ndarray:
        return np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), self.shape, self.strides)

    def reshape(self, shape) -> "View | None":
        """The same elements in row-major order as ``shape`` without moving data, or None."""
        shape = tuple(int(s) for s in shape)
        try:
            r = self._np().reshape(shape, copy=False)
        except ValueError:
            return None
        return View(self.buffer, shape, tuple(int(s) for s in r.strides), self.offset)

    def transpose(self, perm) -> "View":
        return View(self.buffer, tuple(self.shape[p] for p in perm),
                    tuple(self.strides[p] for p in perm), self.offset)

    def offsets(self) -> np.ndarray:
        """Byte offset (within the buffer) of every element, shaped like the tensor."""
        off = np.full(self.shape, self.offset, dtype=np.int64)
        for d, (n, s) in enumerate(zip(self.shape, self.strides)):
            idx = np.arange(n, dtype=np.int64) * s
            off += idx.reshape((1,) * d + (n,) + (1,) * (len(self.shape) - d - 1))
        return off


def merge_loops(shape, *stride_sets) -> tuple[tuple, list[tuple]] | None:
    """Loops over ``shape`` (outer first) with several stride sets, size-1 dims dropped and
    adjacent dims merged where every set allows it; padded to :data:`ND` dims (count 1, stride 0
    outside). None if more than ND loops remain."""
    dims = [int(n) for n in shape]
    sets = [list(int(x) for x in s) for s in stride_sets]
    keep = [i for i, n in enumerate(dims) if n != 1]
    dims = [dims[i] for i in keep]
    sets = [[s[i] for i in keep] for s in sets]
    i = len(dims) - 2
    while i >= 0:
        if all(s[i] == s[i + 1] * dims[i + 1] for s in sets):
            dims[i] *= dims[i + 1]
            for s in sets:
                s[i] = s[i + 1]
                del s[i + 1]
            del dims[i + 1]
        i -= 1
    if len(dims) > ND:
        return None
    pad = ND - len(dims)
    return tuple([1] * pad + dims), [tuple([0] * pad + s) for s in sets]


def padded_view(buffer: str, shape, cols: int, offset: int = 0) -> View:
    """Row-major ``shape`` with the innermost dim padded to ``round_up(shape[-1], cols)``."""
    shape = tuple(int(s) for s in shape) or (1,)
    pitch = align(max(shape[-1], 1), cols)
    strides, acc = [1], pitch
    for s in reversed(shape[:-1]):
        strides.append(acc)
        acc *= s
    return View(buffer, shape, tuple(reversed(strides)), offset)


def view_span(v: View) -> int:
    """Bytes from the view's first byte to its last element, inclusive (0 for an empty view)."""
    if v.size == 0:
        return 0
    return v.offset + sum((n - 1) * s for n, s in zip(v.shape, v.strides) if s > 0) + 1


def as_view(buffer: str, offs: np.ndarray) -> View | None:
    """The strided View whose element offsets are ``offs``, or None if no strides give them."""
    offs = np.asarray(offs, np.int64)
    if offs.size == 0:
        return None
    base = int(offs.reshape(-1)[0])
    strides = []
    for d, n in enumerate(offs.shape):
        if n == 1:
            strides.append(0)
        else:
            idx = [0] * offs.ndim
            idx[d] = 1
            strides.append(int(offs[tuple(idx)]) - base)
    v = View(buffer, tuple(offs.shape), tuple(strides), base)
    if np.any(np.asarray(strides) < 0) or not np.array_equal(v.offsets(), offs):
        return None
    return v


# ------------------------------------------------------------------------------------------
# Allocation, symbols, placements
# ------------------------------------------------------------------------------------------

REGIONS = ("program", "const", "input", "activation")


@dataclass(frozen=True)
class Symbol:
    """One buffer of the image: ``kind`` is program / weight / params / identity / input /
    activation / output / commands; ``shape``/``strides`` (bytes) give the tensor view of inputs
    and outputs when it is strided."""
    name: str
    kind: str
    addr: int
    size: int
    node: str = ""
    shape: tuple = ()
    strides: tuple = ()

    def to_json(self) -> dict:
        d = {"name": self.name, "kind": self.kind, "addr": self.addr, "size": self.size}
        if self.node:
            d["node"] = self.node
        if self.shape:
            d["shape"], d["strides"] = list(self.shape), list(self.strides)
        return d


@dataclass
class Placement:
    """Where a model input or output lives: ``size`` bytes at ``addr``; element ``i`` of the
    tensor (torch ``shape``) is byte ``offsets[i]`` of that region. ``pitch`` is the padded
    innermost physical dim; ``strides`` the byte strides per torch dim (None if the tensor is a
    non-strided reshape of its buffer, e.g. a flattened channels-last map).

    ``gather`` (an input the host writes im2col'd, ``layout`` describes it): byte j of the
    region holds element ``gather[j]`` of the tensor (flat, row-major), zero where it is -1 (a
    conv's zero-padding tap: data) or -2 (a row's tail past K: never multiplied, may hold
    garbage); an element may be in several bytes, and ``offsets`` gives its first (-1 if no
    byte holds it)."""
    name: str
    node: str
    addr: int
    size: int
    shape: tuple
    offsets: np.ndarray
    pitch: int
    strides: tuple | None
    gather: np.ndarray | None = None
    layout: dict | None = None

    def pack_input(self, x) -> bytes:
        """int8 tensor in torch shape -> the ``size`` bytes to write at ``addr`` (padding 0)."""
        x = np.asarray(x)
        if tuple(x.shape) != tuple(self.shape):
            raise ValueError(f"{self.name}: shape {tuple(x.shape)}, expected {tuple(self.shape)}")
        if x.size and (x.min() < -128 or x.max() > 127):
            raise ValueError(f"{self.name}: values outside int8")
        buf = np.zeros(self.size, np.int8)
        if self.gather is not None:
            m = self.gather >= 0
            buf[m] = x.astype(np.int8).ravel()[self.gather[m]]
        else:
            buf[self.offsets] = x.astype(np.int8)
        return buf.tobytes()

    def data_bytes(self) -> np.ndarray:
        """The region's bytes that the layers read as data (the rest is padding, garbage allowed)."""
        if self.gather is not None:
            return np.nonzero(self.gather >= -1)[0]
        return np.asarray(self.offsets).ravel()

    def unpack_output(self, data) -> np.ndarray:
        """The ``size`` bytes read at ``addr`` -> int8 tensor in torch shape."""
        buf = np.frombuffer(bytes(data), np.int8)
        if buf.size < self.size:
            raise ValueError(f"{self.name}: {buf.size} bytes, need {self.size}")
        return buf[self.offsets].astype(np.int8)

    def to_json(self) -> dict:
        d = {"name": self.name, "node": self.node, "addr": self.addr, "size": self.size,
             "shape": list(self.shape), "pitch": self.pitch,
             "strides": None if self.strides is None else list(self.strides)}
        if self.layout is not None:
            d["layout"] = dict(self.layout)
        return d


@dataclass
class ConstSpec:
    """How ``build_image`` fills a constant buffer: a packed weight from the quantized model
    (``k_map``), post-op records, or literal ``data``."""
    symbol: str
    node: str
    kind: str                        # "weight", "params" or "data"
    op: str = "linear"               # linear | conv2d
    k_map: np.ndarray | None = None  # packed row p <- logical weight column k_map[p] (-1: zero)
    n_pad: int = 0                   # records (params)
    data: bytes = b""


@dataclass
class Layout:
    """Buffers by region; ``finalize`` assigns addresses, ``place_commands`` appends the command
    region after everything else."""
    axi_bytes: int
    requests: dict = field(default_factory=lambda: {r: [] for r in REGIONS})
    consts: list = field(default_factory=list)
    symbols: dict = field(default_factory=dict)
    total: int = 0

    @property
    def alignment(self) -> int:
        return max(ALIGN, self.axi_bytes)

    def request(self, region: str, name: str, size: int, kind: str, node: str = "") -> str:
        if any(name == r[0] for reqs in self.requests.values() for r in reqs):
            raise ValueError(f"buffer {name} requested twice")
        self.requests[region].append((name, int(size), kind, node))
        return name

    def finalize(self) -> None:
        addr = 0
        for region in REGIONS:
            for name, size, kind, node in self.requests[region]:
                self.symbols[name] = Symbol(name, kind, addr, size, node)
                addr = align(addr + max(size, 1), self.alignment)
        self.total = addr

    def place_commands(self, nbytes: int) -> int:
        addr = self.total
        self.symbols["commands"] = Symbol("commands", "commands", addr, nbytes)
        self.total = align(addr + max(nbytes, 1), self.alignment)
        return addr

    def addr(self, name: str) -> int:
        return self.symbols[name].addr

    def set_view(self, name: str, kind: str, view: View | None) -> None:
        s = self.symbols[name]
        self.symbols[name] = Symbol(s.name, kind, s.addr, s.size, s.node,
                                    tuple(view.shape) if view else (), tuple(view.strides) if view else ())


# ------------------------------------------------------------------------------------------
# Packing
# ------------------------------------------------------------------------------------------

def pack_weight(b_kn: np.ndarray, cols: int, axi_bytes: int) -> bytes:
    """K x N int8 B -> ``ceil(N/cols)`` panels of ``cols`` lanes x ``round_up(K, axi_bytes)``
    bytes (lane j of panel nt = column nt*cols + j of B; zeros past N and K)."""
    K, N = b_kn.shape
    n_tiles = ceil_div(N, cols)
    kp = align(K, axi_bytes)
    lanes = np.zeros((n_tiles * cols, kp), dtype=np.int8)
    lanes[:N, :K] = np.asarray(b_kn).T
    return lanes.tobytes()


def pack_params(bias, m0, shift, n_records: int) -> bytes:
    """Post-op records: (bias, m0, shift, 0) int32 each, zero past len(m0)."""
    m0 = np.atleast_1d(np.asarray(m0, np.int64))
    shift = np.broadcast_to(np.asarray(shift, np.int64), m0.shape)
    recs = np.zeros((n_records, 4), dtype="<i4")
    n = len(m0)
    recs[:n, 1] = m0
    recs[:n, 2] = shift
    if bias is not None:
        recs[:n, 0] = np.asarray(bias, np.int64)
    return recs.tobytes()


def packed_b(spec: ConstSpec, lq) -> np.ndarray:
    """The Kp x N B matrix of a weight constant, rows in packed (physical) K order."""
    w = np.asarray(lq.weight, np.int64)
    w2 = w.reshape(w.shape[0], -1)                     # [N, logical K] (conv: (c, kh, kw))
    b = np.zeros((len(spec.k_map), w2.shape[0]), np.int64)
    ok = spec.k_map >= 0
    b[ok] = w2[:, spec.k_map[ok]].T
    return b.astype(np.int8)


def build_image(program: Program, quantized_model, layout: Layout, commands: bytes = b"") -> tuple[bytes, dict]:
    """The DRAM image (program, packed weights, records, commands; inputs and activations zero)
    and the symbol table ``{name: Symbol}``."""
    img = bytearray(layout.total)
    prog = program.encode()
    sym = layout.symbols["program"]
    if len(prog) > sym.size:  # pragma: no cover - compiler bug
        raise AssertionError("program larger than its buffer")
    img[sym.addr:sym.addr + len(prog)] = prog
    for spec in layout.consts:
        s = layout.symbols[spec.symbol]
        if spec.kind == "data":
            data = spec.data
        else:
            lq = quantized_model.layers[spec.node]
            if spec.kind == "weight":
                data = pack_weight(packed_b(spec, lq), program.cols, program.axi_bytes)
            else:
                data = pack_params(lq.bias, lq.m0, lq.shift, spec.n_pad)
                if spec.n_pad == 1:
                    data = data * (s.size // len(data))
        if len(data) != s.size:  # pragma: no cover - compiler bug
            raise AssertionError(f"{spec.symbol}: {len(data)} bytes for a buffer of {s.size}")
        img[s.addr:s.addr + len(data)] = data
    if commands:
        c = layout.symbols["commands"]
        img[c.addr:c.addr + len(commands)] = commands
    return bytes(img), dict(layout.symbols)
