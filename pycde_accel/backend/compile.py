"""The compiler back end: quantized layer graph + config -> layer program + DRAM image + stats.

``compile_program(frontend_result, config) -> CompiledProgram``. Per graph node:

* ``linear`` / ``conv2d`` / ``matmul``: one GEMM descriptor, tiled by
  :func:`pycde_accel.backend.tiling.plan_gemm` (conv by im2col addressing, see tiling.py);
  the post-op (bias, per-channel requantize, fused ReLU) is part of the GEMM.
* ``add``: ADD; ``relu``: RELU; ``maxpool2d``: MAXPOOL (their outputs follow the physical order
  of their input: channels-last after a conv).
* ``reshape`` / ``transpose``: no layer when the result is a strided view of the input (numpy's
  rule); a ``reshape`` that is not (e.g. flattening a channels-last feature map) is folded into
  a following Linear by permuting its weight rows, and otherwise materialized by a COPY layer.
* model outputs that are not contiguous row-major get a COPY layer.

A GEMM writes ``C[M, N]`` row-major, so a conv's output is channels-last (NHWC) in DRAM; its
consumers read it through strides. Layers the hardware cannot run raise
:class:`~pycde_accel.errors.UserError` naming the layer's module path.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from ..config import AccelConfig
from ..errors import UserError
from ..frontend import graph as g
from . import program as P
from .layout import ConstSpec, Layout, Symbol, View, build_image, merge_loops, read_tensor, write_tensor
from .tiling import ceil_div, conv_out, inbounds_1d, packed_panel_bytes, plan_gemm


@dataclass
class CompiledProgram:
    program: P.Program
    image: bytes
    symbols: dict
    layout: Layout
    stats: list                      # one dict per layer (program order)
    inputs: list                     # symbol names of the model inputs, in order
    outputs: list                    # symbol names of the model outputs, in order
    config: AccelConfig = None

    def totals(self) -> dict:
        keys = ("tiles", "macs", "dram_bytes_read", "dram_bytes_written", "core_cycles")
        t = {k: sum(s.get(k, 0) for s in self.stats) for k in keys}
        t["layers"] = len(self.stats)
        t["program_bytes"] = self.program.nbytes
        t["image_bytes"] = len(self.image)
        return t

    def to_json(self) -> dict:
        d = self.program.to_json()
        d.update({
            "image": {"file": "dram.bin", "bytes": len(self.image),
                      "sha256": hashlib.sha256(self.image).hexdigest(), "program_addr": 0},
            "symbols": [s.to_json() for s in sorted(self.symbols.values(), key=lambda s: s.addr)],
            "inputs": list(self.inputs), "outputs": list(self.outputs),
            "stats": self.stats, "totals": self.totals(),
        })
        return d

    def load_inputs(self, inputs_q) -> bytearray:
        """A copy of the image with the int8 model inputs written in."""
        img = bytearray(self.image)
        for name, x in zip(self.inputs, inputs_q):
            write_tensor(img, self.symbols[name], x)
        return img

    def read_outputs(self, image) -> list:
        return [read_tensor(image, self.symbols[o]) for o in self.outputs]


def _where(node) -> str:
    mod = f"module {node.module}" if node.module else "the top-level forward"
    src = f", {node.source}" if node.source else ""
    return f"layer {node.name} ({node.kind}) in {mod}{src}"


class _Compiler:
    def __init__(self, qm, config: AccelConfig):
        self.qm = qm
        self.cfg = config
        self.axi = config.axi_data_width // 8
        self.layout = Layout(self.axi)
        self.views: dict[str, View] = {}
        self.pending: dict[str, tuple[View, tuple]] = {}
        self.layers: list[tuple] = []     # (builder(layout, index) -> Descriptor, stats)

    # ---- helpers ---------------------------------------------------------------------------
    def act(self, name: str, size: int, node: str) -> str:
        return self.layout.request("activation", name, size, "activation", node)

    def base(self, v: View) -> int:
        return self.layout.addr(v.buffer) + v.offset

    def emit(self, builder, stats: dict) -> None:
        self.layers.append((builder, stats))

    def copy(self, src: View, buf: str, node, why: str) -> View:
        """COPY ``src`` into a new contiguous buffer ``buf``; return the new view."""
        dst = View.contiguous(self.act(buf, src.size, node.name), src.shape)
        loops = merge_loops(src.shape, src.strides, dst.strides)
        if loops is None:
            raise UserError(f"{_where(node)}: {why} needs a copy with more than {P.ND} strided "
                            f"dimensions (shape {list(src.shape)}), which the DMA does not support")
        dims, (ss, ds) = loops
        self.emit(lambda L, i, s=src, d=dst: P.Copy(i, 0, self.base(s), self.base(d), dims, ss, ds,
                                                   name=node.name, module=node.module),
                  {"kind": "copy", "dram_bytes_read": src.size, "dram_bytes_written": src.size})
        return dst

    def view(self, name: str) -> View:
        """The input tensor ``name`` as a view, materializing a pending reshape."""
        if name in self.views:
            return self.views[name]
        src, shape = self.pending.pop(name)
        node = self.qm.graph.node(name)
        v = self.copy(src, name, node, "this reshape").reshape(shape)
        self.views[name] = v
        return v

    # ---- nodes -----------------------------------------------------------------------------
    def gemm(self, node, *, M, N, K, batch, a_pass, b_packed, per_tensor, fields: dict,
             flags: int, out_buf: str, b_pass: int | None = None, weight: ConstSpec | None = None):
        rows, cols = self.cfg.rows, self.cfg.cols
        n_tiles = ceil_div(N, cols)
        panel = packed_panel_bytes(K, cols, self.axi)
        rec = P.PARAM_RECORD_BYTES * (1 if per_tensor else cols)
        t = plan_gemm(M, N, K, batch, self.cfg, a_pass_bytes=a_pass,
                      b_pass_bytes=n_tiles * panel if b_packed else b_pass, p_panel_bytes=rec,
                      where=_where(node))
        if weight is not None:
            self.layout.request("const", weight.symbol, n_tiles * panel, "weight", node.name)
            self.layout.consts.append(weight)
        psym = f"{node.name}.params"
        n_rec = 1 if per_tensor else n_tiles * cols
        self.layout.request("const", psym, n_rec * P.PARAM_RECORD_BYTES, "params", node.name)
        self.layout.consts.append(ConstSpec(psym, node.name, "params", n_pad=n_rec))
        lq = self.qm.layers[node.name]
        flags |= (P.RELU if node.relu else 0) | (P.BIAS if getattr(lq, "bias", None) is not None else 0)
        flags |= (P.B_PACKED if b_packed else 0) | (P.PER_TENSOR if per_tensor else 0)
        flags |= P.B_STAT if t.order == P.B_STATIONARY else 0

        def build(L, i):
            f = {k: (v(L) if callable(v) else v) for k, v in fields.items()}
            if b_packed:
                f["b_base"] = L.addr(weight.symbol)
                f["b_stride_n"] = panel
            return P.Gemm(i, flags, p_base=L.addr(psym), c_base=L.addr(out_buf), M=M, N=N, K=K,
                          batch=batch, m_tiles=t.m_tiles, n_tiles=t.n_tiles, block=t.block, name=node.name, module=node.module, **f)
        self.emit(build, {"kind": node.kind, **t.stats()})

    def ab_strided(self, name: str, shape3: tuple, node) -> View:
        v = self.view(name)
        r = v.reshape(shape3)
        if r is None:
            r = self.copy(v, f"{name}.{node.name}.packed", node, "this matmul operand").reshape(shape3)
        return r

    def linear(self, node):
        K, N = node.in_features, node.out_features
        x = node.inputs[0]
        M = int(np.prod(self.qm.graph.node(x).shape)) // K
        perm = None
        a = None
        if x in self.pending:
            absorbed = _absorb(*self.pending[x], M, K)
            if absorbed is not None:
                a, perm = absorbed
        if a is None:
            v = self.view(x)
            a = v.reshape((M, K))
            if a is None:
                a = self.copy(v, f"{x}.{node.name}.rows", node, "the input of this linear").reshape((M, K))
        out = self.act(node.name, M * N, node.name)
        self.views[node.name] = View.contiguous(out, node.shape)
        fields = dict(a_base=lambda L, a=a: self.base(a), a_stride_m=a.strides[0], a_stride_k=a.strides[1],
                      a_stride_batch=M * a.strides[0], c_stride_m=N, c_stride_batch=M * N)
        self.gemm(node, M=M, N=N, K=K, batch=1, a_pass=M * K, b_packed=True, per_tensor=False,
                  fields=fields, flags=0, out_buf=out,
                  weight=ConstSpec(f"{node.name}.weight", node.name, "weight", "linear", perm))

    def conv2d(self, node):
        v = self.view(node.inputs[0])
        oc, c, kh, kw = self.qm.layers[node.name].weight.shape
        n, _, h, w = v.shape
        (sh, sw), (ph, pw) = node.stride, node.padding
        oh, ow = conv_out(h, kh, sh, ph), conv_out(w, kw, sw, pw)
        M, K = n * oh * ow, kh * kw * c
        out = self.act(node.name, M * oc, node.name)
        self.views[node.name] = View.contiguous(out, (n, oh, ow, oc)).transpose((0, 3, 1, 2))
        a_pass = n * c * inbounds_1d(oh, kh, sh, ph, h) * inbounds_1d(ow, kw, sw, pw, w)
        fields = dict(a_base=lambda L, v=v: self.base(v), a_stride_batch=v.strides[0],
                      in_c=c, in_h=h, in_w=w, out_h=oh, out_w=ow, kernel=P.pack2(kh, kw),
                      stride=P.pack2(sh, sw), pad=P.pack2(ph, pw), in_stride_c=v.strides[1],
                      in_stride_h=v.strides[2], in_stride_w=v.strides[3], c_stride_m=oc,
                      c_stride_batch=M * oc)
        self.gemm(node, M=M, N=oc, K=K, batch=1, a_pass=a_pass, b_packed=True, per_tensor=False,
                  fields=fields, flags=P.IM2COL, out_buf=out,
                  weight=ConstSpec(f"{node.name}.weight", node.name, "weight", "conv2d"))

    def matmul(self, node):
        sa, sb = self.qm.graph.node(node.inputs[0]).shape, self.qm.graph.node(node.inputs[1]).shape
        M, K, N = sa[-2], sa[-1], sb[-1]
        batch = int(np.prod(sa[:-2], dtype=np.int64))
        a = self.ab_strided(node.inputs[0], (batch, M, K), node)
        b = self.ab_strided(node.inputs[1], (batch, K, N), node)
        out = self.act(node.name, batch * M * N, node.name)
        self.views[node.name] = View.contiguous(out, node.shape)
        fields = dict(a_base=lambda L, a=a: self.base(a), a_stride_batch=a.strides[0],
                      a_stride_m=a.strides[1], a_stride_k=a.strides[2],
                      b_base=lambda L, b=b: self.base(b), b_stride_batch=b.strides[0],
                      b_stride_k=b.strides[1], b_stride_n=b.strides[2], c_stride_m=N, c_stride_batch=M * N)
        self.gemm(node, M=M, N=N, K=K, batch=batch, a_pass=M * K, b_packed=False, per_tensor=True,
                  fields=fields, flags=0, out_buf=out, b_pass=K * N)

    def eltwise(self, node):
        ins = [self.view(i) for i in node.inputs]
        a = ins[0]
        order = sorted(range(len(a.shape)), key=lambda d: -abs(a.strides[d]))
        out_shape = tuple(a.shape[d] for d in order)
        out = View.contiguous(self.act(node.name, a.size, node.name), out_shape)
        inv = np.argsort(order)
        self.views[node.name] = out.transpose(tuple(int(i) for i in inv))
        loops = merge_loops(out_shape, *[[v.strides[d] for d in order] for v in ins], out.strides)
        if loops is None:
            raise UserError(f"{_where(node)}: operands need more than {P.ND} strided loop dimensions")
        dims, strides = loops
        if isinstance(node, g.Add):
            lq = self.qm.layers[node.name]
            self.emit(lambda L, i: P.Add(i, P.RELU if node.relu else 0, self.base(ins[0]), self.base(ins[1]),
                                         self.base(out), int(lq.ma), int(lq.mb), int(lq.shift), dims,
                                         strides[0], strides[1], strides[2], name=node.name, module=node.module),
                      {"kind": "add", "dram_bytes_read": 2 * a.size, "dram_bytes_written": a.size})
        else:
            self.emit(lambda L, i: P.Relu(i, 0, self.base(a), self.base(out), dims, strides[0], strides[1],
                                          name=node.name, module=node.module),
                      {"kind": "relu", "dram_bytes_read": a.size, "dram_bytes_written": a.size})

    def maxpool(self, node):
        v = self.view(node.inputs[0])
        n, c, h, w = v.shape
        (kh, kw), (sh, sw), (ph, pw) = node.kernel, node.stride, node.padding
        oh, ow = conv_out(h, kh, sh, ph), conv_out(w, kw, sw, pw)
        o = View.contiguous(self.act(node.name, n * c * oh * ow, node.name), (n, oh, ow, c)).transpose((0, 3, 1, 2))
        self.views[node.name] = o
        self.emit(lambda L, i: P.MaxPool(i, 0, self.base(v), self.base(o), n, c, h, w, oh, ow, P.pack2(kh, kw),
                                         P.pack2(sh, sw), P.pack2(ph, pw), v.strides, o.strides,
                                         name=node.name, module=node.module),
                  {"kind": "maxpool2d", "dram_bytes_read": v.size, "dram_bytes_written": o.size})

    def run(self) -> CompiledProgram:
        graph = self.qm.graph
        for node in graph.nodes:
            if isinstance(node, g.Input):
                buf = self.layout.request("input", node.name, int(np.prod(node.shape)), "input", node.name)
                self.views[node.name] = View.contiguous(buf, node.shape)
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
                x = node.inputs[0]
                if x in self.pending:
                    self.pending[node.name] = (self.pending[x][0], tuple(node.shape))
                else:
                    r = self.views[x].reshape(node.shape)
                    if r is None:
                        self.pending[node.name] = (self.views[x], tuple(node.shape))
                    else:
                        self.views[node.name] = r
            elif isinstance(node, g.Transpose):
                self.views[node.name] = self.view(node.inputs[0]).transpose(node.perm)
            else:
                raise UserError(f"{_where(node)}: the accelerator back end cannot map node kind {node.kind!r}")
        out_syms, used = [], set()
        for o in graph.outputs:
            v = self.view(o)
            kind = self.layout.requests
            is_input = any(r[0] == v.buffer for r in kind["input"])
            if not v.is_contiguous() or v.offset or v.buffer in used or is_input \
                    or self._size_of(v.buffer) != v.size:
                v = self.copy(v, f"{o}.out", graph.node(o), "this model output")
            used.add(v.buffer)
            out_syms.append((v.buffer, v))
        n_layers = len(self.layers)
        self.layout.request("program", "program", 4 * (P.HEADER_WORDS + P.DESC_WORDS * n_layers), "program")
        self.layout.finalize()
        if self.layout.total > 1 << self.cfg.axi_addr_width:
            raise UserError(f"the DRAM image needs {self.layout.total} bytes, more than config "
                            f"axi_addr_width={self.cfg.axi_addr_width} bits address")
        descs = tuple(b(self.layout, i) for i, (b, _) in enumerate(self.layers))
        prog = P.Program(rows=self.cfg.rows, cols=self.cfg.cols, axi_bytes=self.axi, layers=descs)
        for name in graph.inputs:
            self.layout.set_view(name, "input", self.views[name])
        for buf, v in out_syms:
            self.layout.set_view(buf, "output", v)
        image, symbols = build_image(prog, self.qm, self.layout)
        stats = []
        for d, (_, s) in zip(descs, self.layers):
            stats.append({"index": d.index, "name": d.name, "module": d.module, "op": d.KIND, **s})
        return CompiledProgram(prog, image, symbols, self.layout, stats, list(graph.inputs),
                               [b for b, _ in out_syms], self.cfg)

    def _size_of(self, buf: str) -> int:
        for reqs in self.layout.requests.values():
            for name, size, _, _ in reqs:
                if name == buf:
                    return size
        raise KeyError(buf)


def _absorb(src: View, shape: tuple, M: int, K: int):
    """Fold ``src.reshape(shape)`` (not a view) into a Linear's A operand ``[M, K]``: if src's
    dims split into a leading part of M elements that is one strided dim and a trailing part of
    K elements that is one contiguous run in *some* dim order, return (A view with that run as
    its k axis, perm) where packed weight row p is logical row perm[p]; else None."""
    if shape[-1] != K:
        return None
    dims = list(src.shape)
    j = next((j for j in range(len(dims) + 1) if int(np.prod(dims[:j], dtype=np.int64)) == M
              and int(np.prod(dims[j:], dtype=np.int64)) == K), None)
    if j is None:
        return None
    bpart = View(src.buffer, tuple(dims[:j]), tuple(src.strides[:j]), src.offset).reshape((M,))
    kshape, kstr = dims[j:], src.strides[j:]
    order = sorted(range(len(kshape)), key=lambda d: -abs(kstr[d]))
    kpart = View(src.buffer, tuple(kshape[d] for d in order), tuple(kstr[d] for d in order)).reshape((K,))
    if bpart is None or kpart is None:
        return None
    perm = np.arange(K).reshape(kshape).transpose(order).ravel()
    return View(src.buffer, (M, K), (bpart.strides[0], kpart.strides[0]), src.offset), perm


def compile_program(frontend_result, config: AccelConfig) -> CompiledProgram:
    """Compile a :class:`~pycde_accel.frontend.FrontendResult` (or a QuantizedModel)."""
    qm = getattr(frontend_result, "quantized", frontend_result)
    config.validate()
    return _Compiler(qm, config).run()
