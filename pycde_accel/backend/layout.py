"""The DRAM image: where everything lives, how weights are packed, and strided views of tensors.

Regions (in address order, every buffer aligned to ``align = max(axi_bytes, 16)`` bytes; a
deterministic bump allocator in the order the compiler visits the graph):

1. ``program`` at address 0: the encoded :class:`~pycde_accel.backend.program.Program` (the
   controller starts fetching descriptors here);
2. constants, per GEMM layer with a weight, in layer order: ``<node>.weight`` (packed B panels)
   and ``<node>.params`` (post-op records); matmuls of two activations have only params;
3. ``<input>`` model inputs, int8, contiguous row-major in the torch shape (the host writes them
   as they are: NCHW for images);
4. activations (one buffer per materialized tensor, ``<node>``; no reuse between layers);
5. model outputs are activations whose symbol the host reads; the compiler makes them contiguous
   row-major in the torch shape (a COPY layer is added where a view would not be).

Packed weights (``<node>.weight``): the GEMM B operand ``K x N`` is cut into ``n_tiles`` panels of
``cols`` columns (zero columns past N); panel nt is stored as K rows of ``cols`` bytes (row k is
the B stream beat k, lane j = B[k][nt*cols + j]), then zero bytes up to a multiple of the AXI data
width, so each panel is one aligned burst of ``packed_panel_bytes(K, cols, axi_bytes)`` bytes and
panel nt starts at ``weight + nt * panel_bytes``. K order: Linear ``k`` of ``x.reshape(M, K)`` as
the DMA reads it (that is the torch order, except when the Linear reads a channels-last feature
map through a flatten: then the weight rows are permuted to the physical order, see
``k_perm``); Conv2d ``(kh, kw, c)``.

Post-op records (``<node>.params``): ``n_tiles * cols`` records (one for a per-tensor matmul) of
16 bytes: int32 bias, int32 m0, int32 shift, int32 0; all zero past N.

Activations are described by a :class:`View` (numpy-style strides in bytes over one buffer), so
reshape and transpose cost nothing when the strides can express them; the descriptors carry the
strides.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .program import PARAM_RECORD_BYTES, ND, Program
from .tiling import align, ceil_div, packed_panel_bytes


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

    def is_contiguous(self) -> bool:
        return self == View.contiguous(self.buffer, self.shape, self.offset)

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


# ------------------------------------------------------------------------------------------
# Allocation and symbols
# ------------------------------------------------------------------------------------------

REGIONS = ("program", "const", "input", "activation")


@dataclass(frozen=True)
class Symbol:
    """One buffer of the image: ``kind`` is program / weight / params / input / activation /
    output; ``shape``/``strides`` (bytes) give the tensor view of inputs and outputs."""
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
class ConstSpec:
    """How ``build_image`` fills a constant buffer from the quantized model."""
    symbol: str
    node: str
    kind: str                        # "weight" or "params"
    op: str = "linear"               # linear | conv2d | matmul
    k_perm: np.ndarray | None = None  # weight row p of the packed B is logical row k_perm[p]
    n_pad: int = 0                   # records / packed columns (n_tiles * cols)


@dataclass
class Layout:
    """Buffers by region; ``finalize`` assigns addresses."""
    axi_bytes: int
    requests: dict = field(default_factory=lambda: {r: [] for r in REGIONS})
    consts: list = field(default_factory=list)
    symbols: dict = field(default_factory=dict)
    total: int = 0

    @property
    def alignment(self) -> int:
        return max(self.axi_bytes, PARAM_RECORD_BYTES)

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

    def addr(self, name: str) -> int:
        return self.symbols[name].addr

    def set_view(self, name: str, kind: str, view: View) -> None:
        s = self.symbols[name]
        self.symbols[name] = Symbol(s.name, kind, s.addr, s.size, s.node, tuple(view.shape),
                                    tuple(view.strides))


# ------------------------------------------------------------------------------------------
# Packing
# ------------------------------------------------------------------------------------------

def pack_weight(b_kn: np.ndarray, cols: int, axi_bytes: int) -> bytes:
    """K x N int8 B -> the packed panels described in the module docstring."""
    K, N = b_kn.shape
    n_tiles = ceil_div(N, cols)
    pb = packed_panel_bytes(K, cols, axi_bytes)
    out = np.zeros(n_tiles * pb, dtype=np.int8)
    padded = np.zeros((K, n_tiles * cols), dtype=np.int8)
    padded[:, :N] = b_kn
    for nt in range(n_tiles):
        out[nt * pb: nt * pb + K * cols] = padded[:, nt * cols:(nt + 1) * cols].ravel()
    return out.tobytes()


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
    """The K x N B matrix of a weight constant in packed K order."""
    w = np.asarray(lq.weight, np.int64)
    if spec.op == "conv2d":
        oc = w.shape[0]
        b = w.transpose(2, 3, 1, 0).reshape(-1, oc)       # K order (kh, kw, c)
    else:
        b = w.T
        if spec.k_perm is not None:
            b = b[spec.k_perm]
    return b.astype(np.int8)


def build_image(program: Program, quantized_model, layout: Layout) -> tuple[bytes, dict]:
    """The DRAM image (program, packed weights and post-op records; inputs and activations zero)
    and the symbol table ``{name: Symbol}``. ``layout`` is the compiler's allocation (the
    program's binary form holds the addresses, the layout how to fill them)."""
    img = bytearray(layout.total)
    prog = program.encode()
    sym = layout.symbols["program"]
    if len(prog) > sym.size:  # pragma: no cover - compiler bug
        raise AssertionError("program larger than its buffer")
    img[sym.addr:sym.addr + len(prog)] = prog
    for spec in layout.consts:
        lq = quantized_model.layers[spec.node]
        s = layout.symbols[spec.symbol]
        if spec.kind == "weight":
            data = pack_weight(packed_b(spec, lq), program.cols, program.axi_bytes)
        else:
            data = pack_params(lq.bias, lq.m0, lq.shift, spec.n_pad)
        if len(data) != s.size:  # pragma: no cover - compiler bug
            raise AssertionError(f"{spec.symbol}: {len(data)} bytes for a buffer of {s.size}")
        img[s.addr:s.addr + len(data)] = data
    return bytes(img), dict(layout.symbols)


def write_tensor(image: bytearray, sym: Symbol, values: np.ndarray) -> None:
    """Host side: store int8 ``values`` (the tensor's shape) through the symbol's view."""
    view = View("", tuple(sym.shape), tuple(sym.strides))
    values = np.asarray(values)
    if values.shape != view.shape:
        raise ValueError(f"{sym.name}: shape {values.shape}, expected {view.shape}")
    buf = np.frombuffer(image, dtype=np.int8)
    buf[sym.addr + view.offsets()] = values.astype(np.int8)


def read_tensor(image, sym: Symbol) -> np.ndarray:
    """Host side: the int8 tensor behind a symbol, as int64 in its shape."""
    view = View("", tuple(sym.shape), tuple(sym.strides))
    buf = np.frombuffer(bytes(image), dtype=np.int8)
    return buf[sym.addr + view.offsets()].astype(np.int64)
