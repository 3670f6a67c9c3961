"""The compiler back end: quantized layer graph + config -> layer program + commands + DRAM image.

``compile_program(frontend_result, config) -> CompiledProgram``. Each graph node's ``lower``
hook (:mod:`pycde_accel.ops`, one module per kind, where each op's mapping is described) emits
its layers through the compiler context (:class:`Compiler`): matmul-like ops one GEMM
descriptor each (:meth:`Compiler.gemm`, tiled by :func:`pycde_accel.backend.tiling.plan_gemm`;
the post-op -- bias, per-channel requantize, fused ReLU -- is part of the GEMM), element-wise
ops ADD or RELU on the operands' common padded layout (:meth:`Compiler.eltwise`), max-pooling a
MAXPOOL; reshapes and transposes emit no layer: a tensor is a buffer plus the byte offset of
every element (:meth:`Compiler.set_tensor`), and they only permute those offsets. A consumer
that needs strides (:meth:`Compiler.strided`) refuses a tensor whose offsets are not strided.

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
from . import commands as CMD
from .encoding import Fence
from . import program as P
from .layout import (ALIGN, ConstSpec, Layout, Placement, View, as_view, build_image, merge_loops,
                     pack_params, pack_weight, padded_view, view_span)
from .tiling import align, ceil_div, packed_panel_bytes, plan_gemm


@dataclass
class LayerEntry:
    """What the host needs to run one layer: write ``cmd_base = cmd_addr``, ``cmd_count``."""
    index: int
    name: str
    op: str
    cmd_addr: int
    cmd_count: int
    macs: int                        # the model's MACs (Node.macs; :func:`model_macs`)
    array_macs: int                  # the array's for the same outputs, channel padding included
    tiles: int
    exec_cycles: int
    bytes_read: int
    bytes_written: int

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["padding_waste"] = padding_waste(self.macs, self.array_macs)
        return d


def padding_waste(model: int, array: int) -> float:
    """The share of the array's MACs that multiply padding (channel padding of K, the other
    channels of a depthwise slice): ``1 - model / array`` (0 without array MACs)."""
    return round(1 - model / array, 6) if array > 0 and model <= array else 0.0


def model_macs(graph, layers: list[dict], array: list[int]) -> list[int]:
    """The model's MACs per program layer (``Node.macs`` of the node each layer comes from;
    a node lowered to several layers shares its MACs out in proportion to their array MACs
    ``array``); layers of nodes without MACs get 0."""
    by_node: dict[str, list[int]] = {}
    for i, entry in enumerate(layers):
        by_node.setdefault(entry.get("name"), []).append(i)
    out = [0] * len(layers)
    for node in graph.nodes:
        idx = by_node.get(node.name)
        macs = node.macs(graph)
        if not idx or not macs:
            continue
        weights = [array[i] for i in idx]
        total = sum(weights) or len(idx)
        left = macs
        for k, i in enumerate(idx):
            share = left if k == len(idx) - 1 else macs * (weights[k] or 1) // total
            out[i], left = share, left - share
    return out


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

    def run_groups(self, per_layer: bool = False) -> list[dict]:
        """The accelerator runs (one ``start`` each) that execute every layer in order:
        ``{"cmd_addr", "cmd_count", "layers": [layer index...]}``. The layers' command lists
        lie back to back with one FENCE between consecutive layers, so a run of consecutive
        layers is one contiguous range. Default: as few runs as the stamp memory allows (one
        for a model of up to ``STAMP_DEPTH + 1`` layers; the FENCE after a run's last layer is
        not in it: the run's ``done`` drains). ``per_layer``: one run per layer, without
        fences (the layer's own commands)."""
        size = 1 if per_layer else contract.STAMP_DEPTH + 1
        out = []
        for g in range(0, len(self.layers), size):
            ls = self.layers[g:g + size]
            first, last = ls[0], ls[-1]
            end = last["cmd_addr"] + CMD.CMD_BYTES * last["cmd_count"]
            out.append({"cmd_addr": first["cmd_addr"],
                        "cmd_count": (end - first["cmd_addr"]) // CMD.CMD_BYTES,
                        "layers": list(range(g, g + len(ls)))})
        return out

    def run_commands(self, group: dict) -> list:
        """The commands of one run of :meth:`run_groups` (FENCEs between its layers)."""
        out = []
        for k, i in enumerate(group["layers"]):
            if k:
                out.append(Fence())
            out.extend(self.commands[i])
        return out

    @property
    def uses_rowred(self) -> bool:
        """Whether a layer runs on the vector engine's row-reduction unit (VEC ROWRED): the
        accelerator for this program is then built with it (``assemble.emit_accelerator``)."""
        return any(c.OP == CMD.OP_VEC and c.flags & CMD.V_ROWRED
                   for cmds in self.commands for c in cmds)

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
        keys = ("tiles", "macs", "array_macs", "dram_bytes_read", "dram_bytes_written", "core_cycles", "commands",
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
            "runs": self.run_groups(),
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


class Compiler:
    """The back end's context for the ops' ``lower`` hooks: the quantized model (``qm``), the
    config (``cfg``; ``R``, ``C`` the array, ``axi`` the beat bytes), the DRAM ``layout``, the
    tensors so far (:meth:`tensor`, :meth:`set_tensor`, :meth:`put`) and the layers emitted
    (:meth:`emit`, :meth:`gemm`)."""

    def __init__(self, qm, config: AccelConfig, host_im2col: bool = True, depthwise: bool = True):
        self.qm = qm
        self.cfg = config
        self.R, self.C = config.rows, config.cols
        self.axi = config.axi_data_width // 8
        self.layout = Layout(self.axi)
        self.tensors: dict[str, _T] = {}
        self.layers: list[tuple] = []     # (builder(layout, index) -> Descriptor, stats)
        #: model inputs the host writes im2col'd for the conv that reads them (conv2d.host_im2col;
        #: ``pack_host_inputs`` False keeps every input channels-last, the DMA doing the im2col)
        self.host_im2col: dict[str, dict] = {}
        self.pack_host_inputs = host_im2col
        #: depthwise convs on the core's depthwise mode (EXEC DW) where cols == AXI bytes;
        #: False keeps them on the slice WGEMM (K = taps * cols, 1 - 1/cols of it padding)
        self.depthwise_mode = depthwise

    # ---- helpers ---------------------------------------------------------------------------
    def where(self, node) -> str:
        return _where(node)

    def refuse(self, node, why: str) -> UserError:
        """The error for a layer the hardware cannot run, naming the layer."""
        return UserError(f"{_where(node)}: {why}")

    def tensor(self, name: str) -> "_T":
        return self.tensors[name]

    def set_tensor(self, name: str, buffer: str, offs: np.ndarray) -> None:
        """Tensor ``name`` is ``buffer`` at the element offsets ``offs`` (shaped like it)."""
        self.tensors[name] = _T(buffer, offs)

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
            v = self.relayout(name, node)
        if v is None:
            raise UserError(f"{_where(node)}: {what} is a reshape of {name} that is not a strided "
                            f"view of its buffer; it would need a COPY, which the accelerator's "
                            f"commands cannot express")
        return v

    def relayout(self, name: str, node, force: bool = False) -> View | None:
        """Copy tensor ``name``, which is no strided view (a flatten in NCHW order of a
        channels-last map, a channel shuffle, any permutation inside rows), into a padded
        row-major buffer of its own with one GATHER layer ``<name>.copy`` on the systolic array,
        and make that the tensor (later consumers reuse it). The tensor's elements must split
        into rows (its leading dims) at a constant beat-aligned stride that all hold the same
        arrangement of their elements: each row is one source pixel and B the permutation.
        None when they do not. (``force``: also a strided view, made dense and padded.)"""
        t = self.tensors[name]
        if not force and t.view() is not None:
            return t.view()
        rank = len(t.shape)
        perms = ([(0, 2, 3, 1)] if rank == 4 else []) + [tuple(range(rank))]   # NCHW: pixels first
        for perm in perms:
            v = self._relayout(name, node, t, perm)
            if v is not None:
                return v
        return None

    def _relayout(self, name, node, t, perm) -> View | None:
        po = t.offs.transpose(perm)
        shape = po.shape
        for j in range(len(shape) - 1, -1, -1):
            outer, inner = int(np.prod(shape[:j], dtype=np.int64)), int(np.prod(shape[j:], dtype=np.int64))
            offs = po.reshape(outer, inner)
            base = offs.min(axis=1)
            rel = offs - base[:, None]
            if not np.array_equal(rel, np.broadcast_to(rel[0], rel.shape)):
                continue
            pitch = align(int(rel.max()) + 1, self.axi)
            stride = int(base[1] - base[0]) if outer > 1 else pitch
            if (outer > 1 and not np.array_equal(base, base[0] + stride * np.arange(outer))) \
                    or stride % self.axi or stride < pitch or base[0] % self.axi:
                continue
            k = stride if outer > 1 else pitch
            if k > min(self.cfg.max_k, self.cfg.spad_a_depth, self.cfg.spad_b_depth):
                return None
            return self._emit_copy(name, node, t, outer, inner, int(base[0]), k, rel[0], shape, perm)
        return None

    def _emit_copy(self, name, node, t, outer, inner, start, k, rel, pshape, perm) -> View:
        cname = f"{name}.copy"
        out = padded_view(cname, (outer, inner), self.C)
        self.layout.request("activation", cname, view_span(out), "activation", node.name)
        n_tiles = ceil_div(inner, self.C)
        B = np.zeros((inner, k), np.int64)
        B[np.arange(inner), rel] = 1
        wdata = pack_weight(B.T.astype(np.int8), self.C, self.axi)
        pdata = pack_params(None, np.full(inner, (1 << 31) - 1), np.zeros(inner), n_tiles * self.C)
        for sym, data, kind in ((f"{cname}.gather", wdata, "weight"), (f"{cname}.params", pdata, "params")):
            self.layout.request("const", sym, len(data), kind, node.name)
            self.layout.consts.append(ConstSpec(sym, node.name, "data", data=data))
        z = (0,) * (P.NSRC - 1)

        def build(Lo, i):
            return P.Gather(i, 0, b_base=Lo.addr(f"{cname}.gather"), c_base=Lo.addr(cname),
                            p_base=Lo.addr(f"{cname}.params"), n=outer, N=inner, K=k,
                            c_stride_n=out.strides[0], c_stride_h=out.strides[0],
                            c_pitch=out.strides[0], n_srcs=1,
                            src_base=(Lo.addr(t.buffer) + start,) + z, src_pitch=(k,) + z,
                            src_channels=(k,) + z, name=cname, module=node.module)
        self.emit(build, {"kind": "copy"})
        v = out.reshape(pshape).transpose(tuple(int(i) for i in np.argsort(perm)))
        self.tensors[name] = _T(cname, v.offsets())
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

    # ---- element-wise layers (the vector engine) ------------------------------------------
    def eltwise(self, node, inputs: list) -> tuple:
        """The layout of an element-wise layer over the tensors ``inputs``: the output takes
        their common padded layout. ``(input views, output view, dims, strides)``, strides one
        tuple per input and then the output's (``P.ND`` merged loops)."""
        if any(self.tensors[i].view() is None for i in inputs):
            return self._eltwise_span(node, inputs)
        ins = [self.strided(i, node, "an operand") for i in inputs]
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
        return ins, out, dims, strides

    def _eltwise_span(self, node, inputs: list) -> tuple:
        """An element-wise layer over operands that are not strided views (a flatten or a
        permutation of a channels-last map) but share one arrangement of their elements: the
        layer runs over the byte span they cover (padding included, as any element-wise layer
        does), and the output has the same arrangement in a buffer of its own."""
        ts = [self.tensors[i] for i in inputs]
        starts = [int(t.offs.min()) if t.offs.size else 0 for t in ts]
        rel = ts[0].offs - starts[0]
        if any(not np.array_equal(t.offs - s, rel) for t, s in zip(ts, starts)) \
                or any(s % self.axi for s in starts):
            raise UserError(f"{_where(node)}: the operands are reshapes that are not strided views "
                            f"and are arranged differently; re-laying one out needs a COPY")
        span = int(rel.max()) + 1 if rel.size else 1
        ins = [View(t.buffer, (span,), (1,), s) for t, s in zip(ts, starts)]
        buf = self.layout.request("activation", node.name, span, "activation", node.name)
        out = View(buf, (span,), (1,), 0)
        self.tensors[node.name] = _T(buf, rel.copy())
        return ins, out, (1, 1, 1, span), [(0, 0, 0, 1)] * (len(inputs) + 1)

    # ---- driver ----------------------------------------------------------------------------
    def run(self) -> CompiledProgram:
        graph = self.qm.graph
        for node in graph.nodes:
            node.lower(self)
        n_layers = len(self.layers)
        self.layout.request("program", "program", 4 * (P.HEADER_WORDS + P.DESC_WORDS * n_layers), "program")
        self.layout.finalize()
        descs = tuple(b(self.layout, i) for i, (b, _) in enumerate(self.layers))
        prog = P.Program(rows=self.cfg.rows, cols=self.cfg.cols, axi_bytes=self.axi, layers=descs)
        lcs = [CMD.compile_layer(d, self.cfg) for d in descs]
        # one contiguous command list: the layers in order, a FENCE between consecutive
        # layers (every boundary: a layer reads what an earlier one wrote to DRAM, and the
        # fence's stamp gives the layer's cycles; see run_groups)
        total_cmds = sum(len(lc.commands) for lc in lcs) + max(0, len(lcs) - 1)
        cbase = self.layout.place_commands(CMD.CMD_BYTES * total_cmds)
        if self.layout.total > 1 << self.cfg.axi_addr_width:
            raise UserError(f"the DRAM image needs {self.layout.total} bytes, more than config "
                            f"axi_addr_width={self.cfg.axi_addr_width} bits address")
        addr, entries = cbase, []
        model = model_macs(graph, [{"name": d.name} for d in descs], [lc.macs for lc in lcs])
        for d, lc, mm in zip(descs, lcs, model):
            lc.cmd_addr = addr
            addr += CMD.CMD_BYTES * (len(lc.commands) + 1)      # + the FENCE after it
            entries.append(LayerEntry(d.index, d.name, d.KIND, lc.cmd_addr, len(lc.commands), mm,
                                      lc.macs, lc.tiles, lc.exec_cycles, lc.bytes_read,
                                      lc.bytes_written).to_json())
        fence = Fence().encode()
        cmd_bytes = fence.join(CMD.encode_list(lc.commands) for lc in lcs)
        in_pl = [self.placement(name, "input") for name in graph.inputs]
        out_pl = [self.placement(o, "output") for o in graph.outputs]
        image, symbols = build_image(prog, self.qm, self.layout, cmd_bytes)
        stats = []
        for d, (_, s), lc, mm in zip(descs, self.layers, lcs, model):
            stats.append({"index": d.index, "name": d.name, "module": d.module, "op": d.KIND, **s,
                          "macs": mm, "array_macs": lc.macs,
                          "padding_waste": padding_waste(mm, lc.macs), "tiles": lc.tiles, "commands": len(lc.commands),
                          "cmd_addr": lc.cmd_addr, "exec_cycles": lc.exec_cycles,
                          "dram_bytes_read": lc.bytes_read, "dram_bytes_written": lc.bytes_written})
        return CompiledProgram(prog, image, symbols, self.layout, stats, list(graph.inputs),
                               [p.name for p in out_pl], self.cfg, in_pl, out_pl, entries,
                               [lc.commands for lc in lcs])

    def placement(self, name: str, kind: str) -> Placement:
        hc = self.host_im2col.get(name) if kind == "input" else None
        if hc is not None:
            sym = self.layout.symbols[name]
            g = hc["gather"]
            shape = tuple(self.qm.graph.node(name).shape)
            first = np.full(int(np.prod(shape, dtype=np.int64)), -1, np.int64)
            at = np.nonzero(g >= 0)[0][::-1]
            first[g[at]] = at                         # the last write is the first byte
            lay = {k: hc[k] for k in ("rows", "row_bytes", "K", "kernel", "stride", "pad",
                                      "dilation", "k_order")}
            return Placement(name, name, sym.addr, sym.size, shape, first.reshape(shape),
                             hc["row_bytes"], None, gather=g, layout={"kind": "im2col", **lay})
        t = self.tensors[name]
        sym = self.layout.symbols[t.buffer]
        v = t.view()
        self.layout.set_view(t.buffer, kind if sym.kind in ("activation", kind) else sym.kind, v)
        phys = self.layout.symbols[t.buffer]
        inner = [s for s in (v.strides if v else ()) if s > 1]
        pitch = min(inner) if inner else align(max(t.shape[-1] if t.shape else 1, 1), self.C)
        return Placement(t.buffer, name, phys.addr, phys.size, t.shape, t.offs.copy(), int(pitch),
                         tuple(v.strides) if v else None)


def compile_program(frontend_result, config: AccelConfig, *, host_im2col: bool = True,
                    depthwise: bool = True) -> CompiledProgram:
    """Compile a :class:`~pycde_accel.frontend.FrontendResult` (or a QuantizedModel).
    ``host_im2col`` False: no model input is written im2col'd by the host (a thin first conv
    then pays channel padding, as before the host packed it; ``bench/thin.py`` compares)."""
    qm = getattr(frontend_result, "quantized", frontend_result)
    config.validate()
    check_config(config)
    return Compiler(qm, config, host_im2col, depthwise).run()


def check_config(config: AccelConfig) -> None:
    contract.check_beat_alignment(config, "config")
