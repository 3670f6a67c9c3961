"""The compiler back end: quantized layer graph + config -> layer program + commands + DRAM image.

``compile_program(frontend_result, config) -> CompiledProgram``. Per graph node:

* ``linear`` / ``conv2d`` / ``matmul``: one GEMM descriptor, tiled by
  :func:`pycde_accel.backend.tiling.plan_gemm` (conv by im2col addressing); the post-op (bias,
  per-channel requantize, fused ReLU) is part of the GEMM.
* ``add``: ADD; ``relu``: RELU (both on the operands' common padded layout); ``maxpool2d``: MAXPOOL.
* ``reshape`` / ``transpose``: no layer. A tensor is a buffer plus the byte offset of every
  element; reshapes and transposes only permute those offsets. A consumer that needs strides
  (conv, matmul, add, maxpool) refuses a tensor whose offsets are not strided; a Linear takes
  any tensor whose rows are equal-shaped byte runs at a constant, beat-aligned stride: its K is
  the run's span and its packed weight has zero rows facing the gaps (a flatten of a
  channels-last map folds into the weight order this way).
* matmul of two activations: A must be available as rows (K contiguous) and B as rows of B^T
  (``q @ k.transpose(-1, -2)`` gives B^T = k directly). An operand available only as the
  transposed rows (``scores @ v``: B^T would be the columns of v) is transposed on the array by
  an extra GEMM layer ``<node>.<operand>T`` (A = an identity constant, B^T rows = the operand's
  rows, requantize with m0 = 2^31-1, shift 0, which is exact for int8). Anything else is
  refused with a UserError naming the layer.

Every descriptor is then compiled into commands (:mod:`.commands`), placed in the ``commands``
region at the end of the image; :class:`CompiledProgram` is the host-facing result.
Layers the hardware cannot run raise :class:`~pycde_accel.errors.UserError` naming the layer's
module path. Configs with ``cols % (axi_data_width/8) != 0`` are refused (ConfigError).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from .. import contract
from ..config import AccelConfig
from ..errors import UserError
from ..frontend import graph as g
from . import commands as CMD
from . import program as P
from .layout import (ALIGN, ConstSpec, Layout, Placement, View, as_view, build_image, merge_loops,
                     padded_view, view_span)
from .tiling import align, ceil_div, conv_out, packed_panel_bytes, plan_gemm

#: requantization that is the identity on int8 accumulators (transpose layers)
IDENTITY_M0, IDENTITY_SHIFT = (1 << 31) - 1, 0


@dataclass
class LayerEntry:
    """What the host needs to run one layer: write ``cmd_base = cmd_addr``, ``cmd_count``."""
    index: int
    name: str
    op: str
    cmd_addr: int
    cmd_count: int
    macs: int
    tiles: int
    exec_cycles: int
    bytes_read: int
    bytes_written: int

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class CompiledProgram:
    program: P.Program
    image: bytes
    symbols: dict
    layout: Layout
    stats: list                      # one dict per layer (program order)
    inputs: list                     # symbol names of the model inputs, in order
    outputs: list                    # symbol names of the buffers holding the outputs, in order
    config: AccelConfig = None
    input_placements: list = field(default_factory=list)
    output_placements: list = field(default_factory=list)
    layers: list = field(default_factory=list)        # LayerEntry.to_json() dict per layer
    commands: list = field(default_factory=list)      # list of commands per layer

    # ---- host side -------------------------------------------------------------------------
    def pack_input(self, i: int, x) -> bytes:
        return self.input_placements[i].pack_input(x)

    def unpack_output(self, i: int, data) -> np.ndarray:
        return self.output_placements[i].unpack_output(data)

    def load_inputs(self, inputs_q) -> bytearray:
        """A copy of the image with the int8 model inputs written in."""
        img = bytearray(self.image)
        for p, x in zip(self.input_placements, inputs_q):
            img[p.addr:p.addr + p.size] = p.pack_input(x)
        return img

    def read_outputs(self, image) -> list:
        return [p.unpack_output(bytes(image[p.addr:p.addr + p.size])).astype(np.int64)
                for p in self.output_placements]

    def totals(self) -> dict:
        keys = ("tiles", "macs", "dram_bytes_read", "dram_bytes_written", "core_cycles", "commands",
                "exec_cycles")
        t = {k: sum(s.get(k, 0) for s in self.stats) for k in keys}
        t["layers"] = len(self.stats)
        t["program_bytes"] = self.program.nbytes
        t["command_bytes"] = CMD.CMD_BYTES * t["commands"]
        t["image_bytes"] = len(self.image)
        return t

    def to_json(self) -> dict:
        d = self.program.to_json()
        d.update({
            "image": {"file": "dram.bin", "bytes": len(self.image),
                      "sha256": hashlib.sha256(self.image).hexdigest(), "program_addr": 0,
                      "commands_addr": self.symbols["commands"].addr},
            "symbols": [s.to_json() for s in sorted(self.symbols.values(), key=lambda s: s.addr)],
            "inputs": list(self.inputs), "outputs": list(self.outputs),
            "input_placements": [p.to_json() for p in self.input_placements],
            "output_placements": [p.to_json() for p in self.output_placements],
            "layer_commands": [dict(e) for e in self.layers],
            "stats": self.stats, "totals": self.totals(),
        })
        return d


def _where(node) -> str:
    mod = f"module {node.module}" if node.module else "the top-level forward"
    src = f", {node.source}" if node.source else ""
    return f"layer {node.name} ({node.kind}) in {mod}{src}"


@dataclass
class _T:
    """A tensor: element offsets (shaped like the tensor) into ``buffer``."""
    buffer: str
    offs: np.ndarray

    @property
    def shape(self):
        return tuple(self.offs.shape)

    def view(self) -> View | None:
        return as_view(self.buffer, self.offs)


class _Compiler:
    def __init__(self, qm, config: AccelConfig):
        self.qm = qm
        self.cfg = config
        self.R, self.C = config.rows, config.cols
        self.axi = config.axi_data_width // 8
        self.layout = Layout(self.axi)
        self.tensors: dict[str, _T] = {}
        self.layers: list[tuple] = []     # (builder(layout, index) -> Descriptor, stats)

    # ---- helpers ---------------------------------------------------------------------------
    def padded(self, name: str, shape, node: str) -> View:
        v = padded_view(name, shape, self.C)
        self.layout.request("activation", name, view_span(v), "activation", node)
        return v

    def base(self, v: View) -> int:
        return self.layout.addr(v.buffer) + v.offset

    def emit(self, builder, stats: dict) -> None:
        self.layers.append((builder, stats))

    def put(self, name: str, v: View) -> None:
        self.tensors[name] = _T(v.buffer, v.offsets())

    def strided(self, name: str, node, what: str) -> View:
        t = self.tensors[name]
        v = t.view()
        if v is None:
            raise UserError(f"{_where(node)}: {what} is a reshape of {name} that is not a strided "
                            f"view of its buffer; it would need a COPY, which the accelerator's "
                            f"commands cannot express")
        return v

    def rows_ok(self, v: View) -> bool:
        """Last dim contiguous, every other stride and the start beat-aligned."""
        if v.offset % self.axi:
            return False
        for n, s in zip(v.shape[:-1], v.strides[:-1]):
            if n > 1 and s % self.axi:
                return False
        return v.shape[-1] <= 1 or v.strides[-1] == 1

    # ---- GEMM ------------------------------------------------------------------------------
    def gemm(self, node, *, name, M, N, K, batch, a_pass, b_packed, per_tensor, fields: dict,
             flags: int, out_buf: str, relu: bool, weight: ConstSpec | None = None,
             params: ConstSpec | None = None, has_bias: bool = False, module=None):
        cols = self.C
        n_tiles = ceil_div(N, cols)
        panel = packed_panel_bytes(K, cols, self.axi)
        kp = align(K, self.axi)
        rec = P.PARAM_RECORD_BYTES * (1 if per_tensor else cols)
        t = plan_gemm(M, N, K, batch, self.cfg, a_pass_bytes=a_pass,
                      b_pass_bytes=n_tiles * panel, p_panel_bytes=rec, where=_where(node))
        if weight is not None:
            self.layout.request("const", weight.symbol, n_tiles * panel, "weight", node.name)
            self.layout.consts.append(weight)
        psym = f"{name}.params"
        n_rec = 1 if per_tensor else n_tiles * cols
        if params is None:
            params = ConstSpec(psym, node.name, "params", n_pad=n_rec)
        self.layout.request("const", psym, ALIGN if per_tensor else n_rec * P.PARAM_RECORD_BYTES,
                            "params", node.name)
        self.layout.consts.append(params)
        flags |= (P.RELU if relu else 0) | (P.BIAS if has_bias else 0)
        flags |= (P.B_PACKED if b_packed else 0) | (P.PER_TENSOR if per_tensor else 0)
        flags |= P.B_STAT if t.order == P.B_STATIONARY else 0

        def build(L, i):
            f = {k: (v(L) if callable(v) else v) for k, v in fields.items()}
            if b_packed:
                f["b_base"] = L.addr(weight.symbol)
                f["b_stride_n"] = panel
                f["b_stride_k"] = kp
            return P.Gemm(i, flags, p_base=L.addr(psym), c_base=L.addr(out_buf), M=M, N=N, K=K,
                          batch=batch, m_tiles=t.m_tiles, n_tiles=t.n_tiles, block=t.block, name=name,
                          module=node.module if module is None else module, **f)
        s = t.stats()
        for k in ("dram_bytes_read", "dram_bytes_written"):
            s.pop(k)
        self.emit(build, {"kind": node.kind, **s})

    def linear(self, node):
        K, N = node.in_features, node.out_features
        x = self.tensors[node.inputs[0]]
        offs = x.offs.reshape(-1, K)
        M = offs.shape[0]
        starts = offs.min(axis=1)
        rel = offs - starts[:, None]
        stride_m = int(starts[1] - starts[0]) if M > 1 else 0
        ok = (np.array_equal(rel, np.broadcast_to(rel[0], rel.shape))
              and np.array_equal(starts, starts[0] + stride_m * np.arange(M))
              and starts[0] % self.axi == 0 and stride_m % self.axi == 0 and stride_m >= 0)
        if not ok:
            raise UserError(f"{_where(node)}: the input rows are not equal byte runs at a constant "
                            f"beat-aligned stride; re-laying them out needs a COPY, which the "
                            f"accelerator's commands cannot express")
        keff = int(rel[0].max()) + 1
        k_map = np.full(keff, -1, np.int64)
        k_map[rel[0]] = np.arange(K)
        out = self.padded(node.name, node.shape, node.name)
        self.put(node.name, out)
        a_base = int(starts[0])
        lq = self.qm.layers[node.name]
        fields = dict(a_base=lambda L, b=x.buffer, o=a_base: L.addr(b) + o, a_stride_m=stride_m,
                      a_stride_k=1, a_stride_batch=M * stride_m, c_stride_m=out.strides[-2] if len(out.shape) > 1 else 0,
                      c_stride_batch=view_span(out))
        self.gemm(node, name=node.name, M=M, N=N, K=keff, batch=1, a_pass=M * align(keff, self.axi),
                  b_packed=True, per_tensor=False, fields=fields, flags=0, out_buf=out.buffer,
                  relu=node.relu, has_bias=lq.bias is not None,
                  weight=ConstSpec(f"{node.name}.weight", node.name, "weight", "linear", k_map))

    def conv2d(self, node):
        v = self.strided(node.inputs[0], node, "the input")
        oc, c, kh, kw = self.qm.layers[node.name].weight.shape
        n, _, h, w = v.shape
        (sh, sw), (ph, pw) = node.stride, node.padding
        pin = v.strides[3] if w > 1 else align(c, self.C)
        if not (v.strides[1] == 1 or c == 1) or pin % self.axi or pin < c or \
                (h > 1 and v.strides[2] % self.axi) or (n > 1 and v.strides[0] % self.axi) or v.offset % self.axi:
            raise UserError(f"{_where(node)}: im2col needs a channels-last input whose pixel stride "
                            f"is a beat-aligned channel pitch (strides {list(v.strides)}); re-laying "
                            f"it out needs a COPY, which the accelerator's commands cannot express")
        oh, ow = conv_out(h, kh, sh, ph), conv_out(w, kw, sw, pw)
        M, K = n * oh * ow, kh * kw * pin
        k_map = np.full((kh, kw, pin), -1, np.int64)
        k_map[:, :, :c] = np.arange(c * kh * kw).reshape(c, kh, kw).transpose(1, 2, 0)
        out = self.padded(node.name, (n, oh, ow, oc), node.name)
        self.put(node.name, out.transpose((0, 3, 1, 2)))
        lq = self.qm.layers[node.name]
        fields = dict(a_base=lambda L, v=v: self.base(v), a_stride_batch=v.strides[0],
                      in_c=pin, in_h=h, in_w=w, out_h=oh, out_w=ow, kernel=P.pack2(kh, kw),
                      stride=P.pack2(sh, sw), pad=P.pack2(ph, pw), in_stride_c=1,
                      in_stride_h=v.strides[2], in_stride_w=pin, c_stride_m=out.strides[2],
                      c_stride_batch=view_span(out))
        self.gemm(node, name=node.name, M=M, N=oc, K=K, batch=1, a_pass=M * K, b_packed=True,
                  per_tensor=False, fields=fields, flags=P.IM2COL, out_buf=out.buffer, relu=node.relu,
                  has_bias=lq.bias is not None,
                  weight=ConstSpec(f"{node.name}.weight", node.name, "weight", "conv2d", k_map.ravel()))

    def as_rows(self, v: View, node, operand: str) -> View:
        """``v`` (batch, X, Y) with contiguous rows; transposed on the array if only its
        transpose has them; else refused."""
        if self.rows_ok(v):
            return v
        tv = v.transpose((0, 2, 1))
        if not self.rows_ok(tv):
            raise UserError(f"{_where(node)}: {operand} is neither row-contiguous nor its transpose "
                            f"(strides {list(v.strides)}); it would need a COPY, which the "
                            f"accelerator's commands cannot express")
        # T = tv^T computed as I @ tv^T: A = identity (Y x Y), B^T rows = rows of tv
        batch, X, Y = v.shape                    # tv: (batch, Y, X) rows contiguous
        name = f"{node.name}.{operand}T"
        out = self.padded(name, (batch, X, Y), node.name)
        kp = align(X, self.axi)
        eye = np.zeros((X, kp), np.int8)
        eye[np.arange(X), np.arange(X)] = 1
        esym = f"{name}.eye"
        self.layout.request("const", esym, eye.size, "identity", node.name)
        self.layout.consts.append(ConstSpec(esym, node.name, "data", data=eye.tobytes()))
        rec = np.array([0, IDENTITY_M0, IDENTITY_SHIFT, 0] * (ALIGN // 16), "<i4").tobytes()
        params = ConstSpec(f"{name}.params", node.name, "data", data=rec)
        fields = dict(a_base=lambda L: L.addr(esym), a_stride_m=kp, a_stride_k=1, a_stride_batch=0,
                      b_base=lambda L, tv=tv: self.base(tv), b_stride_batch=tv.strides[0],
                      b_stride_k=1, b_stride_n=tv.strides[1],
                      c_stride_m=out.strides[1], c_stride_batch=out.strides[0])

        class _N:   # the transpose layer reports as the matmul's helper
            kind = "transpose"
        _N.name, _N.module, _N.source = name, node.module, node.source
        self.gemm(_N, name=name, M=X, N=Y, K=X, batch=batch, a_pass=X * kp, b_packed=False,
                  per_tensor=True, fields=fields, flags=0, out_buf=out.buffer, relu=False, params=params)
        return out

    def matmul(self, node):
        sa, sb = self.tensors[node.inputs[0]].shape, self.tensors[node.inputs[1]].shape
        M, K, N = sa[-2], sa[-1], sb[-1]
        batch = int(np.prod(sa[:-2], dtype=np.int64))
        a = self.strided(node.inputs[0], node, "operand A").reshape((batch, M, K))
        b = self.strided(node.inputs[1], node, "operand B").reshape((batch, K, N))
        if a is None or b is None:
            raise UserError(f"{_where(node)}: the batch dims of an operand do not merge into one "
                            f"strided dim; it would need a COPY")
        a = self.as_rows(a, node, "a")
        bt = self.as_rows(b.transpose((0, 2, 1)), node, "b")     # rows of B^T
        out = self.padded(node.name, (batch, M, N), node.name)
        self.tensors[node.name] = _T(out.buffer, out.offsets().reshape(node.shape))
        fields = dict(a_base=lambda L, a=a: self.base(a), a_stride_batch=a.strides[0],
                      a_stride_m=a.strides[1], a_stride_k=1,
                      b_base=lambda L, bt=bt: self.base(bt), b_stride_batch=bt.strides[0],
                      b_stride_k=1, b_stride_n=bt.strides[1], c_stride_m=out.strides[1],
                      c_stride_batch=out.strides[0])
        self.gemm(node, name=node.name, M=M, N=N, K=K, batch=batch, a_pass=M * align(K, self.axi),
                  b_packed=False, per_tensor=True, fields=fields, flags=0, out_buf=out.buffer,
                  relu=node.relu)

    # ---- vector layers ---------------------------------------------------------------------
    def eltwise(self, node):
        ins = [self.strided(i, node, "an operand") for i in node.inputs]
        a = ins[0]
        if any(v.strides != a.strides or v.shape != a.shape for v in ins) or a.offset % self.axi \
                or any(v.offset % self.axi for v in ins) or any(s < 0 for s in a.strides):
            raise UserError(f"{_where(node)}: the operands are laid out differently (strides "
                            f"{[list(v.strides) for v in ins]}); re-laying one out needs a COPY, "
                            f"which the accelerator's commands cannot express")
        span = view_span(View("", a.shape, a.strides, 0))
        buf = self.layout.request("activation", node.name, span, "activation", node.name)
        out = View(buf, a.shape, a.strides, 0)
        self.put(node.name, out)
        loops = merge_loops(a.shape, *[v.strides for v in ins], out.strides)
        if loops is None:
            raise UserError(f"{_where(node)}: operands need more than {P.ND} strided loop dimensions")
        dims, strides = loops
        if isinstance(node, g.Add):
            lq = self.qm.layers[node.name]
            self.emit(lambda L, i: P.Add(i, P.RELU if node.relu else 0, self.base(ins[0]), self.base(ins[1]),
                                         self.base(out), int(lq.ma), int(lq.mb), int(lq.shift), dims,
                                         strides[0], strides[1], strides[2], name=node.name, module=node.module),
                      {"kind": "add"})
        else:
            self.emit(lambda L, i: P.Relu(i, 0, self.base(a), self.base(out), dims, strides[0], strides[1],
                                          name=node.name, module=node.module), {"kind": "relu"})

    def maxpool(self, node):
        v = self.strided(node.inputs[0], node, "the input")
        n, c, h, w = v.shape
        (kh, kw), (sh, sw), (ph, pw) = node.kernel, node.stride, node.padding
        oh, ow = conv_out(h, kh, sh, ph), conv_out(w, kw, sw, pw)
        pitch = v.strides[3] if w > 1 else align(c, self.C)
        if not (v.strides[1] == 1 or c == 1) or pitch % self.axi or pitch < c:
            raise UserError(f"{_where(node)}: max-pool needs a channels-last input with a "
                            f"beat-aligned channel pitch (strides {list(v.strides)})")
        vin = View(v.buffer, v.shape, (v.strides[0], 1, v.strides[2], pitch), v.offset)
        ov = View(node.name, (n, oh, ow, c), (oh * ow * pitch, ow * pitch, pitch, 1))
        self.layout.request("activation", node.name, view_span(ov), "activation", node.name)
        o = ov.transpose((0, 3, 1, 2))
        self.put(node.name, o)
        self.emit(lambda L, i: P.MaxPool(i, 0, self.base(vin), self.base(o), n, c, h, w, oh, ow, P.pack2(kh, kw),
                                         P.pack2(sh, sw), P.pack2(ph, pw), vin.strides, o.strides,
                                         name=node.name, module=node.module),
                  {"kind": "maxpool2d"})

    # ---- driver ----------------------------------------------------------------------------
    def run(self) -> CompiledProgram:
        graph = self.qm.graph
        for node in graph.nodes:
            if isinstance(node, g.Input):
                shape = tuple(node.shape)
                if len(shape) == 4:
                    n, c, h, w = shape
                    v = padded_view(node.name, (n, h, w, c), self.C).transpose((0, 3, 1, 2))
                else:
                    v = padded_view(node.name, shape or (1,), self.C)
                self.layout.request("input", node.name, view_span(v), "input", node.name)
                self.tensors[node.name] = _T(node.name, v.offsets().reshape(shape))
            elif isinstance(node, g.Linear):
                self.linear(node)
            elif isinstance(node, g.Conv2d):
                self.conv2d(node)
            elif isinstance(node, g.MatMul):
                self.matmul(node)
            elif isinstance(node, (g.Add, g.ReLU)):
                self.eltwise(node)
            elif isinstance(node, g.MaxPool2d):
                self.maxpool(node)
            elif isinstance(node, g.Reshape):
                t = self.tensors[node.inputs[0]]
                self.tensors[node.name] = _T(t.buffer, t.offs.reshape(node.shape))
            elif isinstance(node, g.Transpose):
                t = self.tensors[node.inputs[0]]
                self.tensors[node.name] = _T(t.buffer, t.offs.transpose(node.perm))
            else:
                raise UserError(f"{_where(node)}: the accelerator back end cannot map node kind {node.kind!r}")
        n_layers = len(self.layers)
        self.layout.request("program", "program", 4 * (P.HEADER_WORDS + P.DESC_WORDS * n_layers), "program")
        self.layout.finalize()
        descs = tuple(b(self.layout, i) for i, (b, _) in enumerate(self.layers))
        prog = P.Program(rows=self.cfg.rows, cols=self.cfg.cols, axi_bytes=self.axi, layers=descs)
        lcs = [CMD.compile_layer(d, self.cfg) for d in descs]
        total_cmds = sum(len(lc.commands) for lc in lcs)
        cbase = self.layout.place_commands(CMD.CMD_BYTES * total_cmds)
        if self.layout.total > 1 << self.cfg.axi_addr_width:
            raise UserError(f"the DRAM image needs {self.layout.total} bytes, more than config "
                            f"axi_addr_width={self.cfg.axi_addr_width} bits address")
        addr, entries = cbase, []
        for d, lc in zip(descs, lcs):
            lc.cmd_addr = addr
            addr += CMD.CMD_BYTES * len(lc.commands)
            entries.append(LayerEntry(d.index, d.name, d.KIND, lc.cmd_addr, len(lc.commands), lc.macs,
                                      lc.tiles, lc.exec_cycles, lc.bytes_read, lc.bytes_written).to_json())
        cmd_bytes = b"".join(CMD.encode_list(lc.commands) for lc in lcs)
        in_pl = [self.placement(name, "input") for name in graph.inputs]
        out_pl = [self.placement(o, "output") for o in graph.outputs]
        image, symbols = build_image(prog, self.qm, self.layout, cmd_bytes)
        stats = []
        for d, (_, s), lc in zip(descs, self.layers, lcs):
            stats.append({"index": d.index, "name": d.name, "module": d.module, "op": d.KIND, **s,
                          "macs": lc.macs, "tiles": lc.tiles, "commands": len(lc.commands),
                          "cmd_addr": lc.cmd_addr, "exec_cycles": lc.exec_cycles,
                          "dram_bytes_read": lc.bytes_read, "dram_bytes_written": lc.bytes_written})
        return CompiledProgram(prog, image, symbols, self.layout, stats, list(graph.inputs),
                               [p.name for p in out_pl], self.cfg, in_pl, out_pl, entries,
                               [lc.commands for lc in lcs])

    def placement(self, name: str, kind: str) -> Placement:
        t = self.tensors[name]
        sym = self.layout.symbols[t.buffer]
        v = t.view()
        self.layout.set_view(t.buffer, kind if sym.kind in ("activation", kind) else sym.kind, v)
        phys = self.layout.symbols[t.buffer]
        inner = [s for s in (v.strides if v else ()) if s > 1]
        pitch = min(inner) if inner else align(max(t.shape[-1] if t.shape else 1, 1), self.C)
        return Placement(t.buffer, name, phys.addr, phys.size, t.shape, t.offs.copy(), int(pitch),
                         tuple(v.strides) if v else None)


def compile_program(frontend_result, config: AccelConfig) -> CompiledProgram:
    """Compile a :class:`~pycde_accel.frontend.FrontendResult` (or a QuantizedModel)."""
    qm = getattr(frontend_result, "quantized", frontend_result)
    config.validate()
    check_config(config)
    return _Compiler(qm, config).run()


def check_config(config: AccelConfig) -> None:
    contract.check_beat_alignment(config, "config")


# ------------------------------------------------------------------------------------------
# Bench helper: one standalone GEMM layer
# ------------------------------------------------------------------------------------------

@dataclass
class GemmBench:
    """A standalone GEMM layer program (a Linear without the frontend) and its bounds."""
    compiled: CompiledProgram
    quantized: object
    a: np.ndarray                 # M x K int8 input
    expected: np.ndarray          # M x N int8 output (frontend.reference)
    compute_cycles: int           # tiles * K: the core streaming every tile back to back
    bytes_read: int               # DMA bytes of the layer's commands
    bytes_written: int
    read_beats: int
    write_beats: int

    @property
    def bandwidth_cycles(self) -> int:
        return max(self.read_beats, self.write_beats)

    @property
    def bound_cycles(self) -> int:
        return max(self.compute_cycles, self.bandwidth_cycles)

    def figures(self) -> dict:
        e = self.compiled.layers[0]
        return {"M": self.a.shape[0], "N": self.expected.shape[1], "K": self.a.shape[1],
                "tiles": e["tiles"], "macs": e["macs"], "commands": e["cmd_count"],
                "cmd_beats": ceil_div(CMD.CMD_BYTES * e["cmd_count"], self.compiled.config.axi_data_width // 8),
                "compute_cycles": self.compute_cycles, "read_beats": self.read_beats,
                "write_beats": self.write_beats, "bandwidth_cycles": self.bandwidth_cycles,
                "bound_cycles": self.bound_cycles, "order": self.compiled.stats[0]["order"],
                "block": self.compiled.stats[0]["block"]}


def gemm_program(config: AccelConfig, M: int, N: int, K: int, seed: int = 0, relu: bool = False) -> GemmBench:
    """C = requant(A @ B + bias) with random int8 A (M x K), B (K x N), int32 bias and
    per-column (m0, shift): one layer, compiled; ``expected`` from the integer reference."""
    from ..frontend import quantize as q, reference
    rng = np.random.default_rng(seed)
    x = g.Input("a", (), (M, K), index=0)
    fc = g.Linear("gemm", ("a",), (M, N), module="gemm", weight=np.zeros((N, K)), bias=np.zeros(N), relu=relu)
    w = rng.integers(-127, 128, size=(N, K))
    bias = rng.integers(-(1 << 16), 1 << 16, size=N)
    # a multiplier that maps |acc| ~ 128*128*sqrt(K) into int8 range
    m0 = rng.integers(1 << 30, 1 << 31, size=N)
    shift = np.full(N, max(0, int(np.log2(128 * 128 * max(1.0, np.sqrt(K)) / 128))), np.int64)
    lq = q.LayerQuant(weight=w, bias=bias, m0=m0, shift=shift)
    qm = q.QuantizedModel(graph=g.Graph([x, fc], ["a"], ["gemm"]), scales={"a": 1.0, "gemm": 1.0},
                          layers={"gemm": lq})
    a = rng.integers(-128, 128, size=(M, K))
    cp = compile_program(qm, config)
    exp = reference.run(qm, [a]).outputs[0]
    e = cp.layers[0]
    ab = config.axi_data_width // 8
    return GemmBench(cp, qm, a, exp, e["exec_cycles"], e["bytes_read"], e["bytes_written"],
                     ceil_div(e["bytes_read"], ab), ceil_div(e["bytes_written"], ab))
