"""``rnn``: the recurrent layers ``nn.LSTM``, ``nn.GRU`` and ``nn.RNN`` (tanh and relu), one or
more layers, one direction, ``batch_first`` or not, zero or given initial state, in the FP-DNN
style on the engines that exist: the input projections of all timesteps are one GEMM on the
systolic core, the recurrent projection is one GEMM per step, the gate functions are tables on
the vector engine's LUT path and the state update is its element-wise multiply (MUL) and add
(ADD).

* capture: ``aten.lstm.input``, ``aten.gru.input``, ``aten.rnn_tanh.input``,
  ``aten.rnn_relu.input`` (what ``torch.export`` gives for the modules), and the
  ``aten.zeros.default`` of their default initial state (a constant zero). The layer is a
  multi-output op: each output taken by getitem (``y``, ``h_n``, LSTM's ``c_n``) is a node of
  its own with ``out`` = ``y``/``h``/``c`` (a model that uses two of them computes the layer
  twice). Refused, each in one line naming the option: ``bidirectional=True``, ``proj_size``,
  a non-zero constant initial state, training mode.
* attributes: ``cell`` (``lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu``), ``layers``,
  ``hidden``, ``batch_first``, ``out``, ``h_given``/``c_given`` (the initial state is a node
  input, else zero); the float weights per layer.
* quantization (one scale per tensor; ``S1 = 1/127`` is the scale of every sigmoid and tanh
  output): W_ih per output channel as a Linear's, W_hh per tensor (one post-op record for the
  recurrent GEMM, so a step's DMA reads the weights and 16 bytes of records; GRU's W_hh per
  channel, because its ``b_hn`` is per column); the input projection
  ``gx = requant(x @ W_ih^T + b)`` with ``b = b_ih + b_hh`` (GRU: ``b_hn`` stays with the
  recurrent product, which it multiplies by ``r``), the recurrent projection
  ``gh = requant(h @ W_hh^T (+ b_hn))``, both per channel to per-tensor scales calibrated on the
  float layer's own values (:func:`pycde_accel.frontend.floateval.run_float`'s ``internal``).
  Then, with ``ADD``/``MUL``/``LUT`` the vector engine's integer functions
  (:func:`~pycde_accel.frontend.quantize.residual_add`, :func:`~.mul` 's requantized product,
  :mod:`.lut` 's tables):

  - LSTM (gates reordered to i, f, o, g): ``pre = ADD(gx_t, gh)``; ``i, f, o = LUT_sigmoid``,
    ``g = LUT_tanh``; ``c = ADD(MUL(f, c), MUL(i, g))``; ``h = MUL(o, LUT_tanh(c))``.
  - GRU (r, z, n): ``rz = LUT_sigmoid(ADD(gx_t[r,z], gh[r,z]))``;
    ``n = LUT_tanh(ADD(gx_t[n], MUL(r, gh[n])))``; ``h = ADD(n, MUL(z, ADD(h, -n)))``
    (``(1 - z) * n + z * h`` as ``n + z * (h - n)``).
  - RNN: ``h = LUT_tanh(ADD(gx_t, gh))``, relu: ``h = ADD(gx_t, gh)`` with the ADD's ReLU.

  h (and LSTM's c) have one scale for all steps and layers (the state of step t is the input
  of step t + 1 and of the next layer). A given initial state is first rescaled to it by one
  ADD per layer. The cell state is int8: the accuracy of the LSTM classifiers is within the
  bounds of tests/ops/test_rnn.py (top-1 agreement >= 0.95), so it is not kept wider (that
  would need a wider element-wise path than the vector engine's int8 one).
* reference: exactly the step program above (:meth:`Rnn.step_program`), in numpy; the same
  program drives the torch integer form and the lowering, so the three cannot disagree.
* back end: per layer one GEMM for the input projections of all T steps (rows in (t, n)
  order), then per step the GEMM of the recurrent projection (M = batch rows, K = H, N = the
  gates, each padded to whole ``cols``) and the element-wise layers, one LUT / MUL / ADD
  descriptor per batch row (a gate slice of a row is one contiguous run; over several rows
  the run would cover the other gates). The states stay in DRAM: every layer of the
  accelerator runs from DRAM to DRAM (one start per layer), and a step's state is H bytes per
  row (4 beats of a 64-bit bus at H = 32), so a round trip costs a few beats against the
  GEMM's K beats per tile; keeping them on chip would need a new engine path and saves little.
* post-op kernel: none of its own (its layers are the GEMM, LUT, MUL and ADD engine functions).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..backend import layout as L
from ..backend import program as P
from ..backend.tiling import align, ceil_div
from ..frontend import quantize as q
from . import common, lut
from .base import Node, register

CELLS = {"aten.lstm.input": "lstm", "aten.gru.input": "gru", "aten.rnn_tanh.input": "rnn_tanh",
         "aten.rnn_relu.input": "rnn_relu"}
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
#: LSTM gates in torch's order are i, f, g, o; ours are i, f, o, g (the sigmoids first)
_LSTM_ORDER = (0, 1, 3, 2)
#: the scale of every sigmoid / tanh output
S1 = 1.0 / 127
_EPS = 1 + 2.0 ** -20
_ZEROS = "aten.zeros.default"


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _gate_rows(w: np.ndarray, cell: str, hidden: int) -> np.ndarray:
    """Rows (or entries) of a torch gate-stacked weight (bias) in our gate order."""
    if cell != "lstm":
        return w
    parts = [w[g * hidden:(g + 1) * hidden] for g in range(4)]
    return np.concatenate([parts[g] for g in _LSTM_ORDER], axis=0)


@dataclass
class RnnQuant:
    """Integer parameters of a recurrent layer: per layer ``wih``/``whh`` (int8 codes,
    ``[G*H, K]``, our gate order), ``bih``/``bhh`` (int32 or None), ``ih``/``hh`` (per-channel
    ``(m0, shift)`` lists), then the scalars of the element-wise steps in ``p`` (name ->
    int or list) and the tables in ``tables`` (name -> 256 codes)."""
    wih: list
    whh: list
    bih: list
    bhh: list
    ih: list
    hh: list
    p: dict
    tables: dict


# ---- the step program -----------------------------------------------------------------------
# An operand is (buffer, prefix, g0, g1): the rows ``buffer[prefix]`` (N rows), gates g0..g1-1
# of a gate buffer (gx, gh, pre, act), or the whole H of a state buffer (g0 = g1 = None).
# Ops: ("gemm_ih", l), ("gemm_hh", l, t, a), ("add", out, a, b, ma, mb, shift, relu),
# ("lut", out, a, table), ("mul", out, a, b, m0, shift).

_GATE_BUFS = ("gx", "gh", "pre", "act")


@register
@dataclass
class Rnn(Node):
    cell: str = "lstm"
    layers: int = 1
    hidden: int = 1
    batch_first: bool = False
    out: str = "y"
    h_given: bool = False
    c_given: bool = False
    weights: list = field(default_factory=list)     # per layer (w_ih, w_hh, b_ih, b_hh), float
    kind: ClassVar[str] = "rnn"
    ATEN: ClassVar[tuple[str, ...]] = tuple(CELLS) + (_ZEROS,)
    SUPPORTED: ClassVar[str] = "LSTM/GRU/RNN (one direction, no proj_size)"
    ORDER: ClassVar[int] = 90

    # ---- shapes ------------------------------------------------------------------------------
    @property
    def G(self) -> int:
        return GATES[self.cell]

    def dims(self, graph_or_shape) -> tuple[int, int, int]:
        """(T, N, input size) of the layer's input."""
        s = graph_or_shape
        return (s[1], s[0], s[2]) if self.batch_first else (s[0], s[1], s[2])

    def attrs(self) -> dict:
        return {"cell": self.cell, "layers": self.layers, "hidden": self.hidden,
                "batch_first": self.batch_first, "out": self.out, "h_given": self.h_given,
                "c_given": self.c_given}

    # ---- capture -----------------------------------------------------------------------------
    @classmethod
    def capture(cls, cx, n) -> None:
        t = str(n.target)
        if t == _ZEROS:
            shape = cx.shape(n)
            cx.consts[n.name] = np.zeros(shape or (), np.float64)
            return
        cell = CELLS[t]
        args = list(n.args)
        x = cx.act(n, args[0])
        hx = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
        params, has_bias, layers = args[2], bool(args[3]), int(args[4])
        train, bidir, batch_first = bool(args[6]), bool(args[7]), bool(args[8])
        if bidir:
            raise cx.fail(n, "bidirectional=True (one direction only)")
        if train:
            raise cx.fail(n, "training mode (eval only)")
        per = 4 if has_bias else 2
        if len(params) != layers * per:
            raise cx.fail(n, "proj_size > 0 (a projected hidden state is not built)")
        G = GATES[cell]
        weights = []
        for layer in range(layers):
            p = [cx.const(n, a) for a in params[layer * per:(layer + 1) * per]]
            w_ih, w_hh = p[0], p[1]
            b_ih, b_hh = (p[2], p[3]) if has_bias else (np.zeros(w_ih.shape[0]),) * 2
            weights.append((w_ih, w_hh, b_ih, b_hh))
        hidden = int(weights[0][1].shape[1])
        if weights[0][1].shape[0] != G * hidden:
            raise cx.fail(n, "proj_size > 0 (a projected hidden state is not built)")
        inputs, given = [x], []
        for h in hx:
            if cx.is_act(h):
                inputs.append(cx.act(n, h))
                given.append(True)
            else:
                v = cx.const(n, h)
                if np.any(v != 0):
                    raise cx.fail(n, "a non-zero constant initial state (pass it as a model "
                                     "input, or use the zero default)")
                given.append(False)
        given += [False] * (2 - len(given))
        common_ = cx.common(n)

        def getitem(cx_, g, i):
            out = ("y", "h", "c")[i]
            cx_.emit(cls(n.name if i == 0 else f"{n.name}_{out}_n", tuple(inputs), cx_.shape(g), **common_, cell=cell,
                         layers=layers, hidden=hidden, batch_first=batch_first, out=out,
                         h_given=given[0], c_given=given[1], weights=weights), g)
        cx.multi[n.name] = getitem

    def macs(self, graph) -> int:
        T, N, K = self.dims(graph.node(self.inputs[0]).shape)
        H, G = self.hidden, self.G
        per = 0
        for layer in range(self.layers):
            k = K if layer == 0 else H
            per += T * N * G * H * (k + H)
        return per

    # ---- float semantics ---------------------------------------------------------------------
    def _seq(self, x):
        x = np.asarray(x, np.float64)
        return x.transpose(1, 0, 2) if self.batch_first else x

    def _init(self, ins, k):
        """The float initial h (k = 0) or c (k = 1) of every layer, (layers, N, H)."""
        N = self._seq(ins[0]).shape[1]
        if k == 0 and self.h_given:
            return np.asarray(ins[1], np.float64)
        if k == 1 and self.c_given:
            return np.asarray(ins[1 + int(self.h_given)], np.float64)
        return np.zeros((self.layers, N, self.hidden))

    def _pick(self, hs, cs):
        if self.out == "y":
            y = hs[-1]
            return y.transpose(1, 0, 2) if self.batch_first else y
        return (hs if self.out == "h" else cs)[:, -1]

    def float_eval(self, ins, run):
        H, cell = self.hidden, self.cell
        x = self._seq(ins[0])
        T, N, _ = x.shape
        h0, c0 = self._init(ins, 0), self._init(ins, 1)
        rec = {}

        def note(key, v):
            rec[key] = max(rec.get(key, 0.0), float(np.abs(v).max()) if np.size(v) else 0.0)
        hs = np.zeros((self.layers, T, N, H))
        cs = np.zeros((self.layers, T, N, H))
        for layer, (w_ih, w_hh, b_ih, b_hh) in enumerate(self.weights):
            w_ih, w_hh = _gate_rows(w_ih, cell, H), _gate_rows(w_hh, cell, H)
            b_ih, b_hh = _gate_rows(b_ih, cell, H), _gate_rows(b_hh, cell, H)
            bx, bh = self._split_bias(b_ih, b_hh)
            gx = x @ w_ih.T + bx
            note("gx", gx)
            h, c = h0[layer], c0[layer]
            for t in range(T):
                gh = h @ w_hh.T + bh
                note("gh", gh)
                g = lambda a, k: a[..., k * H:(k + 1) * H]  # noqa: E731
                if cell == "lstm":
                    pre = gx[t] + gh
                    note("pre", pre)
                    i, f, o, gg = _sig(g(pre, 0)), _sig(g(pre, 1)), _sig(g(pre, 2)), np.tanh(g(pre, 3))
                    fc, ig = f * c, i * gg
                    c = fc + ig
                    h = o * np.tanh(c)
                    note("fc", fc), note("ig", ig), note("c", c), note("h", h)
                elif cell == "gru":
                    prz = gx[t][..., :2 * H] + gh[..., :2 * H]
                    note("pre", prz)
                    r, z = _sig(prz[..., :H]), _sig(prz[..., H:])
                    rn = r * g(gh, 2)
                    pn = g(gx[t], 2) + rn
                    nn_ = np.tanh(pn)
                    d = h - nn_
                    zd = z * d
                    h = nn_ + zd
                    note("rn", rn), note("pn", pn), note("d", d), note("zd", zd), note("h", h)
                else:
                    pre = gx[t] + gh
                    note("pre", pre)
                    h = np.tanh(pre) if cell == "rnn_tanh" else np.maximum(pre, 0.0)
                    note("h", h)
                hs[layer, t], cs[layer, t] = h, c if cell == "lstm" else 0.0
            x = hs[layer]
        internal = getattr(run, "internal", None)
        if internal is not None:
            for key, v in rec.items():
                internal[f"{self.name}:{key}"] = np.array([v])
        return self._pick(hs, cs)

    def _split_bias(self, b_ih, b_hh):
        """(bias of the input projection, of the recurrent one), our gate order."""
        if self.cell == "gru":
            H = self.hidden
            bx = b_ih + np.concatenate([b_hh[:2 * H], np.zeros(H)])
            return bx, np.concatenate([np.zeros(2 * H), b_hh[2 * H:]])
        return b_ih + b_hh, np.zeros_like(b_hh)

    # ---- quantization ------------------------------------------------------------------------
    def quantize(self, scales, maxabs):
        H, cell, name = self.hidden, self.cell, self.name
        mx = lambda key: maxabs.get(f"{name}:{key}", 0.0)  # noqa: E731
        p, tables = {}, {}
        # the shared state scales first: every step's multipliers depend on them
        s_h = S1 if cell == "rnn_tanh" else q.act_scale(mx("h"))
        s_c = q.act_scale(mx("c")) if cell == "lstm" else None
        s_h0 = scales[self.inputs[1]] if self.h_given else None
        s_c0 = scales[self.inputs[1 + int(self.h_given)]] if self.c_given else None
        if s_h0 is not None:
            s_h = max(s_h, s_h0 / 2.0 ** 14)
        if s_c0 is not None:
            s_c = max(s_c, s_c0 / 2.0 ** 14)
        s_x = scales[self.inputs[0]]
        wih, whh, bih, bhh, ih, hh = [], [], [], [], [], []
        s_gx = q.act_scale(mx("gx"))
        s_gh = q.act_scale(mx("gh"))
        qw = []
        for layer, (w_ih, w_hh, b_ih, b_hh) in enumerate(self.weights):
            w_ih, w_hh = _gate_rows(w_ih, cell, H), _gate_rows(w_hh, cell, H)
            bx, bh = self._split_bias(_gate_rows(b_ih, cell, H), _gate_rows(b_hh, cell, H))
            sx = s_x if layer == 0 else s_h
            wsi, wsh = q.weight_scales(w_ih), q.weight_scales(w_hh)
            if cell != "gru":
                # one scale for W_hh: its GEMM then needs one post-op record, not one per
                # column, and a step's read DMA (which bounds it) loads 16 bytes, not 16 per
                # gate column (GRU keeps per-channel records: b_hn is per column)
                wsh = np.full_like(wsh, wsh.max())
            s_gx = max(s_gx, float((sx * wsi).max()) * _EPS)
            s_gh = max(s_gh, float((s_h * wsh).max()) * _EPS)
            qw.append((w_ih, w_hh, bx, bh, sx, wsi, wsh))
        for w_ih, w_hh, bx, bh, sx, wsi, wsh in qw:
            wih.append(q.quantize_weights(w_ih, wsi))
            whh.append(q.quantize_weights(w_hh, wsh))
            bih.append(q.quantize_bias(bx, sx, wsi))
            bhh.append(q.quantize_bias(bh, s_h, wsh) if cell == "gru" else None)
            ih.append([q.quantize_multiplier(float(sx * w / s_gx)) for w in wsi])
            hh.append([q.quantize_multiplier(float(s_h * w / s_gh)) for w in wsh])

        def add(key, sa, sb, so, sign=1):
            ma, mb, sh = q.add_multipliers(sa / so, sign * sb / so)
            p[key] = [int(ma), int(mb), int(sh)]

        def mul(key, sa, sb, so):
            m0, sh = q.quantize_multiplier(sa * sb / so)
            p[key] = [int(m0), int(sh)]

        def ascale(key, *lower):
            return max([q.act_scale(mx(key))] + [v * _EPS for v in lower])

        if s_h0 is not None:
            add("h0", s_h0, s_h0, s_h)
            p["h0"][1] = 0
        if s_c0 is not None:
            add("c0", s_c0, s_c0, s_c)
            p["c0"][1] = 0
        if cell == "lstm":
            s_pre = ascale("pre", max(s_gx, s_gh) / 2.0 ** 14)
            add("pre", s_gx, s_gh, s_pre)
            s_fc, s_ig = ascale("fc", S1 * s_c), ascale("ig", S1 * S1)
            s_c = max(s_c, max(s_fc, s_ig) / 2.0 ** 14)
            mul("fc", S1, s_c, s_fc)
            mul("ig", S1, S1, s_ig)
            add("c", s_fc, s_ig, s_c)
            mul("h", S1, S1, s_h)
            if s_h < S1 * S1 * _EPS:
                raise AssertionError("h scale below the product's")
            tables["sig"] = lut.make_table("sigmoid", (), s_pre, S1)
            tables["tanh"] = lut.make_table("tanh", (), s_pre, S1)
            tables["tanh_c"] = lut.make_table("tanh", (), s_c, S1)
        elif cell == "gru":
            s_pre = ascale("pre", max(s_gx, s_gh) / 2.0 ** 14)
            add("pre", s_gx, s_gh, s_pre)
            s_rn = ascale("rn", S1 * s_gh)
            mul("rn", S1, s_gh, s_rn)
            s_pn = ascale("pn", max(s_gx, s_rn) / 2.0 ** 14)
            add("pn", s_gx, s_rn, s_pn)
            s_d = ascale("d", max(s_h, S1) / 2.0 ** 14)
            add("d", s_h, S1, s_d, sign=-1)
            s_zd = ascale("zd", S1 * s_d)
            mul("zd", S1, s_d, s_zd)
            if s_h < max(S1, s_zd) / 2.0 ** 14:
                raise AssertionError("h scale too small for the update's add")
            add("h", S1, s_zd, s_h)
            tables["sig"] = lut.make_table("sigmoid", (), s_pre, S1)
            tables["tanh"] = lut.make_table("tanh", (), s_pn, S1)
        elif cell == "rnn_tanh":
            s_pre = ascale("pre", max(s_gx, s_gh) / 2.0 ** 14)
            add("pre", s_gx, s_gh, s_pre)
            tables["tanh"] = lut.make_table("tanh", (), s_pre, S1)
        else:
            if s_h < max(s_gx, s_gh) / 2.0 ** 14:
                s_h = max(s_gx, s_gh) / 2.0 ** 14
            add("h", s_gx, s_gh, s_h)
        p["s_h"], p["s_c"] = float(s_h), float(s_c) if s_c is not None else None
        lq = RnnQuant(wih, whh, bih, bhh, ih, hh, p, {k: [int(v) for v in t] for k, t in tables.items()})
        return (s_c if self.out == "c" else s_h), lq

    # ---- the step program --------------------------------------------------------------------
    def step_program(self, lq: RnnQuant, T: int) -> list:
        """The layer's integer operations in order (see the comment above the class)."""
        cell, G, p = self.cell, self.G, lq.p
        prog = []
        if self.h_given:
            for layer in range(self.layers):
                prog.append(("add", ("h0r", (layer,), None, None), ("h0", (layer,), None, None),
                             ("h0", (layer,), None, None), *p["h0"], False))
        if self.c_given:
            for layer in range(self.layers):
                prog.append(("add", ("c0r", (layer,), None, None), ("c0", (layer,), None, None),
                             ("c0", (layer,), None, None), *p["c0"], False))
        for layer in range(self.layers):
            prog.append(("gemm_ih", layer))
            for t in range(T):
                if t:
                    hp = ("hs", (layer, t - 1), None, None)
                else:
                    hp = ("h0r", (layer,), None, None) if self.h_given else ("zero", (), None, None)
                if cell == "lstm":
                    cp = ("cs", (layer, t - 1), None, None) if t else \
                        (("c0r", (layer,), None, None) if self.c_given else ("zero", (), None, None))
                hn = ("hs", (layer, t), None, None)
                gx = lambda a, b: ("gx", (t,), a, b)  # noqa: E731
                gh = lambda a, b: ("gh", (), a, b)  # noqa: E731
                pre = lambda a, b: ("pre", (), a, b)  # noqa: E731
                act = lambda a, b: ("act", (), a, b)  # noqa: E731
                t1, t2, t3 = (("t1", (), None, None), ("t2", (), None, None), ("t3", (), None, None))
                prog.append(("gemm_hh", layer, t, hp))
                if cell == "lstm":
                    cn = ("cs", (layer, t), None, None)
                    prog += [("add", pre(0, G), gx(0, G), gh(0, G), *p["pre"], False),
                             ("lut", act(0, 3), pre(0, 3), "sig"),
                             ("lut", act(3, 4), pre(3, 4), "tanh"),
                             ("mul", t1, act(1, 2), cp, *p["fc"]),
                             ("mul", t2, act(0, 1), act(3, 4), *p["ig"]),
                             ("add", cn, t1, t2, *p["c"], False),
                             ("lut", t3, cn, "tanh_c"),
                             ("mul", hn, act(2, 3), t3, *p["h"])]
                elif cell == "gru":
                    prog += [("add", pre(0, 2), gx(0, 2), gh(0, 2), *p["pre"], False),
                             ("lut", act(0, 2), pre(0, 2), "sig"),
                             ("mul", t1, act(0, 1), gh(2, 3), *p["rn"]),
                             ("add", pre(2, 3), gx(2, 3), t1, *p["pn"], False),
                             ("lut", act(2, 3), pre(2, 3), "tanh"),
                             ("add", t2, hp, act(2, 3), *p["d"], False),
                             ("mul", t3, act(1, 2), t2, *p["zd"]),
                             ("add", hn, act(2, 3), t3, *p["h"], False)]
                elif cell == "rnn_tanh":
                    prog += [("add", pre(0, 1), gx(0, 1), gh(0, 1), *p["pre"], False),
                             ("lut", hn, pre(0, 1), "tanh")]
                else:
                    prog += [("add", hn, gx(0, 1), gh(0, 1), *p["h"], True)]
        return prog

    # ---- integer reference -------------------------------------------------------------------
    def _run_int(self, ins, lq, xp):
        """The step program on int codes with the array functions ``xp`` (numpy or torch).
        Values are kept as (N, H) blocks, one per (buffer, prefix, gate), so that the torch
        form is a plain data flow (no in-place updates) for torch-mlir."""
        H, G = self.hidden, self.G
        x = xp.seq(ins[0])
        T, N = x.shape[0], x.shape[1]
        env = {("zero", (), None): xp.zeros((N, H))}
        k = 1
        for flag, buf in ((self.h_given, "h0"), (self.c_given, "c0")):
            if flag:
                for layer in range(self.layers):
                    env[(buf, (layer,), None)] = ins[k][layer]
                k += 1

        def get(o):
            buf, pre_, g0, g1 = o
            if g0 is None:
                return env[(buf, pre_, None)]
            return xp.cat([env[(buf, pre_, g)] for g in range(g0, g1)])

        def put(o, v):
            buf, pre_, g0, g1 = o
            if g0 is None:
                env[(buf, pre_, None)] = v
                return
            for g in range(g0, g1):
                env[(buf, pre_, g)] = v[:, (g - g0) * H:(g - g0 + 1) * H]

        for i, op in enumerate(self.step_program(lq, T)):
            if op[0] == "gemm_ih":
                layer = op[1]
                xin = x.reshape(T * N, -1) if layer == 0 else \
                    xp.cat([env[("hs", (layer - 1, t), None)] for t in range(T)], axis=0)
                acc = xp.gemm(xin, ("wih", layer), ("bih", layer), i)
                gx = xp.requant(acc, ("ih", layer), i)
                for t in range(T):
                    put(("gx", (t,), 0, G), gx[t * N:(t + 1) * N])
            elif op[0] == "gemm_hh":
                layer, a = op[1], op[3]
                acc = xp.gemm(get(a), ("whh", layer), ("bhh", layer), i)
                put(("gh", (), 0, G), xp.requant(acc, ("hh", layer), i))
            elif op[0] == "add":
                _, o, a, b, ma, mb, sh, relu = op
                put(o, xp.add(get(a), get(b), ma, mb, sh, relu, i))
            elif op[0] == "mul":
                _, o, a, b, m0, sh = op
                put(o, xp.mul(get(a), get(b), m0, sh, i))
            else:
                _, o, a, tab = op
                put(o, xp.lut(get(a), tab, i))
        if self.out == "y":
            y = xp.stack([env[("hs", (self.layers - 1, t), None)] for t in range(T)])
            return xp.seq(y)
        buf = "hs" if self.out == "h" else "cs"
        return xp.stack([env[(buf, (layer, T - 1), None)] for layer in range(self.layers)])

    def reference(self, ins, lq, run):
        return self._run_int(ins, lq, _NumpyInt(self, lq))

    def int_setup(self, m, lq) -> None:
        _TorchInt.setup(self, m, lq)

    def int_forward(self, m, ins, inputs):
        return self._run_int(ins, m.qm.layers[self.name], _TorchInt(self, m))

    # ---- design.json -------------------------------------------------------------------------
    def quant_json(self, lq) -> dict:
        return {"ih": [[list(map(int, v)) for v in layer] for layer in lq.ih],
                "hh": [[list(map(int, v)) for v in layer] for layer in lq.hh],
                "p": lq.p, "tables": lq.tables,
                "weights": [f"{self.name}.l{i}" for i in range(self.layers)]}

    def weight_arrays(self, lq) -> dict:
        out = {}
        for i in range(self.layers):
            out[f"{self.name}.l{i}.wih"] = lq.wih[i].astype(np.int8)
            out[f"{self.name}.l{i}.whh"] = lq.whh[i].astype(np.int8)
            out[f"{self.name}.l{i}.bih"] = lq.bih[i].astype(np.int32)
            if lq.bhh[i] is not None:
                out[f"{self.name}.l{i}.bhh"] = lq.bhh[i].astype(np.int32)
        return out

    @classmethod
    def from_json(cls, common_, attrs, quant, arrays):
        n = attrs["layers"]
        get = lambda k: arrays[k].astype(np.int64) if k in arrays else None  # noqa: E731
        pre = [f"{common_['name']}.l{i}" for i in range(n)]
        lq = RnnQuant([get(f"{p}.wih") for p in pre], [get(f"{p}.whh") for p in pre],
                      [get(f"{p}.bih") for p in pre], [get(f"{p}.bhh") for p in pre],
                      [[tuple(v) for v in layer] for layer in quant["ih"]],
                      [[tuple(v) for v in layer] for layer in quant["hh"]],
                      dict(quant["p"]), {k: list(v) for k, v in quant["tables"].items()})
        w = [(lq.wih[i].astype(np.float64), lq.whh[i].astype(np.float64), None, None) for i in range(n)]
        return cls(**common_, **attrs, weights=w), lq

    # ---- back end ----------------------------------------------------------------------------
    def lower(self, cx) -> None:
        _lower(self, cx)


class _NumpyInt:
    """The integer functions of the step program in numpy (the reference)."""

    def __init__(self, node, lq):
        self.node, self.lq = node, lq

    def seq(self, x):
        x = np.asarray(x, np.int64)
        return x.transpose(1, 0, 2) if self.node.batch_first else x

    def zeros(self, shape):
        return np.zeros(shape, np.int64)

    def cat(self, parts, axis=-1):
        return np.concatenate(parts, axis=axis)

    def stack(self, parts):
        return np.stack(parts)

    def gemm(self, a, wkey, bkey, i):
        w = getattr(self.lq, wkey[0])[wkey[1]]
        b = getattr(self.lq, bkey[0])[bkey[1]]
        return common.matmul_acc(a, w.T, b, f"{self.node.name} op {i}")

    def requant(self, acc, key, i):
        mult = getattr(self.lq, key[0])[key[1]]
        m0 = np.array([m for m, _ in mult], np.int64)
        sh = np.array([s for _, s in mult], np.int64)
        return q.requantize(acc, m0, sh)

    def add(self, a, b, ma, mb, sh, relu, i):
        return q.residual_add(a, b, ma, mb, sh, relu)

    def mul(self, a, b, m0, sh, i):
        return q.requantize(a * b, m0, sh)

    def lut(self, a, tab, i):
        return lut.lut_int8(a, self.lq.tables[tab])



class _TorchInt:
    """The same functions as torch integer ops on the IntegerModule (for torch-mlir)."""

    def __init__(self, node, m):
        self.node, self.m = node, m

    @staticmethod
    def setup(node, m, lq) -> None:
        n = node.name
        for layer in range(node.layers):
            for key in ("wih", "whh"):
                m.buf(n, f"{key}{layer}", getattr(lq, key)[layer].T, np.int8)
            for key in ("bih", "bhh"):
                b = getattr(lq, key)[layer]
                m.buf(n, f"{key}{layer}", b if b is not None else
                      np.zeros(lq.whh[layer].shape[0]), np.int32)
            for key in ("ih", "hh"):
                mult = getattr(lq, key)[layer]
                sh = np.array([s for _, s in mult], np.int64)
                m.buf(n, f"{key}{layer}.m0", np.array([v for v, _ in mult]), np.int32)
                m.buf(n, f"{key}{layer}.shift", sh)
                m.buf(n, f"{key}{layer}.mask", (np.int64(1) << sh) - 1)
                m.buf(n, f"{key}{layer}.half", ((np.int64(1) << sh) - 1) >> 1)
        for k, t in lq.tables.items():
            m.buf(n, f"table.{k}", np.asarray(t, np.int64))
        shifts = sorted({int(v[-1]) for v in lq.p.values() if isinstance(v, list)})
        for s in shifts:
            m.buf(n, f"sh{s}", np.int64(s))
            m.buf(n, f"mask{s}", np.int64((1 << s) - 1))
            m.buf(n, f"half{s}", np.int64(((1 << s) - 1) >> 1))
        m.buf(n, "zero", np.int64(0))

    def c(self, key):
        return self.m.const(self.node.name, key)

    def seq(self, x):
        return x.transpose(0, 1) if self.node.batch_first else x

    def zeros(self, shape):
        import torch
        return torch.zeros(shape, dtype=torch.int64)

    def cat(self, parts, axis=-1):
        import torch
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=axis)

    def stack(self, parts):
        import torch
        return torch.stack(parts)

    def gemm(self, a, wkey, bkey, i):
        import torch
        return torch.matmul(a, self.c(f"{wkey[0]}{wkey[1]}")) + self.c(f"{bkey[0]}{bkey[1]}")

    def requant(self, acc, key, i):
        from ..frontend import intmodule as im
        k = f"{key[0]}{key[1]}"
        return im.clamp(im.rdbpot(im.srdhm(acc, self.c(f"{k}.m0"), self.m.shift31),
                                  self.c(f"{k}.shift"), self.c(f"{k}.mask"), self.c(f"{k}.half")),
                        False)

    def _rd(self, x, sh):
        from ..frontend import intmodule as im
        return im.rdbpot(x, self.c(f"sh{sh}"), self.c(f"mask{sh}"), self.c(f"half{sh}"))

    def add(self, a, b, ma, mb, sh, relu, i):
        from ..frontend import intmodule as im
        return im.clamp(self._rd(a * ma + b * mb, sh), relu)

    def mul(self, a, b, m0, sh, i):
        import torch
        from ..frontend import intmodule as im
        p = im.srdhm(a * b, torch.tensor(m0, dtype=torch.int64), self.m.shift31)
        return im.clamp(self._rd(p, sh), False)

    def lut(self, a, tab, i):
        import torch
        return torch.take(self.c(f"table.{tab}"), a + 128)


# ---- back end ---------------------------------------------------------------------------------

def _lower(node: Rnn, cx) -> None:
    lq = cx.qm.layers[node.name]
    H, G, Ly, C, AB = node.hidden, node.G, node.layers, cx.C, cx.axi
    Hp = align(H, C)
    GP = G * Hp
    xt = cx.tensor(node.inputs[0])
    T, N, K0 = node.dims(xt.shape)
    name = node.name
    sizes = {"gx": T * N * GP, "gh": N * GP, "pre": N * GP, "act": N * GP, "t1": N * Hp,
             "t2": N * Hp, "t3": N * Hp, "hs": Ly * T * N * Hp, "cs": Ly * T * N * Hp,
             "h0r": Ly * N * Hp, "c0r": Ly * N * Hp}
    pitch = {"gx": GP, "gh": GP, "pre": GP, "act": GP}
    syms = {}
    for b, size in sizes.items():
        if b == "cs" and node.cell != "lstm" or b == "h0r" and not node.h_given \
                or b == "c0r" and not node.c_given:
            continue
        syms[b] = cx.layout.request("activation", f"{name}.{b}", size, "activation", name)
    zero = f"{name}.zero"
    cx.layout.request("const", zero, N * Hp, "zero", name)
    cx.layout.consts.append(L.ConstSpec(zero, name, "data", data=bytes(N * Hp)))
    syms["zero"] = zero
    for tab, codes in lq.tables.items():
        sym = f"{name}.table.{tab}"
        data = np.asarray(codes, np.int64).astype(np.int8).tobytes()
        cx.layout.request("const", sym, len(data), "table", name)
        cx.layout.consts.append(L.ConstSpec(sym, name, "data", data=data))
    given = {}
    k = 1
    for flag, b in ((node.h_given, "h0"), (node.c_given, "c0")):
        if flag:
            v = cx.strided(node.inputs[k], node, f"the initial state {b}")
            if v.strides[-1] != 1 and H > 1:
                raise cx.refuse(node, f"the initial state {b} is not contiguous along H")
            given[b] = v
            k += 1

    def row_offset(buf, prefix, n):
        """Byte offset of row n of ``buf[prefix]`` in its buffer (given states: a view)."""
        if buf in given:
            v = given[buf]
            return v.offset + prefix[0] * v.strides[0] + n * v.strides[1]
        if buf == "gx":
            return (prefix[0] * N + n) * GP
        if buf in ("hs", "cs"):
            return ((prefix[0] * T + prefix[1]) * N + n) * Hp
        if buf in ("h0r", "c0r"):
            return (prefix[0] * N + n) * Hp
        return n * (pitch.get(buf, Hp))

    def addr(Lo, o, n):
        buf, prefix, g0, _ = o
        sym = given[buf].buffer if buf in given else syms[buf]
        return Lo.addr(sym) + row_offset(buf, prefix, n) + (g0 * Hp if g0 is not None else 0)

    def width(o):
        _, _, g0, g1 = o
        return (g1 - g0) * Hp if g0 is not None else Hp

    dims = lambda w: (1, 1, 1, w)  # noqa: E731
    z4 = (0, 0, 0, 1)
    kp_of = lambda K: align(K, AB)  # noqa: E731

    def emit_weight(sym, w_codes, K):
        """The packed B^T (GP columns, each gate padded to Hp) of a [G*H, K] weight."""
        b = np.zeros((K, GP), np.int64)
        for g in range(G):
            b[:, g * Hp:g * Hp + H] = w_codes[g * H:(g + 1) * H].T
        data = L.pack_weight(b.astype(np.int8), C, AB)
        return L.ConstSpec(sym, name, "data", data=data), len(data)

    per_tensor = node.cell != "gru"

    def params_spec(sym, mult, bias):
        if per_tensor and bias is None and len({tuple(v) for v in mult}) == 1:
            data = L.pack_params(None, [mult[0][0]], [mult[0][1]], 1) * (L.ALIGN // P.PARAM_RECORD_BYTES)
            return L.ConstSpec(sym, name, "data", data=data)
        m0 = np.zeros(GP, np.int64)
        sh = np.zeros(GP, np.int64)
        bb = np.zeros(GP, np.int64)
        for g in range(G):
            for j in range(H):
                m0[g * Hp + j], sh[g * Hp + j] = mult[g * H + j]
                if bias is not None:
                    bb[g * Hp + j] = bias[g * H + j]
        data = L.pack_params(bb, m0, sh, ceil_div(GP, C) * C)
        return L.ConstSpec(sym, name, "data", data=data)

    whh_syms = []
    for layer in range(Ly):
        sym = f"{name}.l{layer}.whh"
        spec, size = emit_weight(sym, lq.whh[layer], H)
        cx.layout.request("const", sym, size, "weight", name)
        cx.layout.consts.append(spec)
        whh_syms.append(sym)

    first = len(cx.layers)
    for op in node.step_program(lq, T):
        kind = op[0]
        if kind == "gemm_ih":
            layer = op[1]
            K = K0 if layer == 0 else H
            if layer == 0:
                offs = xt.offs.transpose(1, 0, 2) if node.batch_first else xt.offs
                base = int(offs[0, 0, 0])
                st = int(offs[1, 0, 0] - base) if T > 1 else 0
                sn = int(offs[0, 1, 0] - base) if N > 1 else 0
                want = base + np.arange(T)[:, None, None] * st + np.arange(N)[None, :, None] * sn \
                    + np.arange(K)[None, None, :]
                if not np.array_equal(offs, want) or base % AB or st % AB or sn % AB or st < 0 \
                        or sn < 0:
                    raise cx.refuse(node, "the input sequence is not rows of contiguous features "
                                          "at beat-aligned strides")
                abuf, abase = xt.buffer, base
            else:
                abuf, abase, st, sn = syms["hs"], (layer - 1) * T * N * Hp, N * Hp, Hp
            if N == 1 or st == N * sn:
                batch, M, sm, sb = 1, T * N, (sn if N > 1 else st), 0
                c_sm, c_sb = GP, 0
            else:
                batch, M, sm, sb = T, N, sn, st
                c_sm, c_sb = GP, N * GP
            wsym = f"{name}.l{layer}.wih"
            wspec, _ = emit_weight(wsym, lq.wih[layer], K)
            fields = dict(a_base=lambda Lo, b=abuf, o=abase: Lo.addr(b) + o, a_stride_m=sm,
                          a_stride_k=1, a_stride_batch=sb, c_stride_m=c_sm, c_stride_batch=c_sb)
            wspec = L.ConstSpec(wsym, name, "data", data=wspec.data)
            pname = f"{name}.l{layer}.input_gemm"
            cx.gemm(node, name=pname, M=M, N=GP, K=K, batch=batch, a_pass=M * kp_of(K),
                    b_packed=True, per_tensor=False, fields=fields, flags=0,
                    out_buf=syms["gx"], relu=False, has_bias=True, weight=wspec,
                    params=params_spec(f"{pname}.params", lq.ih[layer], lq.bih[layer]))
        elif kind == "gemm_hh":
            layer, t, a = op[1], op[2], op[3]
            pname = f"{name}.l{layer}.t{t}.gemm"
            bias = lq.bhh[layer]
            fields = dict(a_base=lambda Lo, a=a: addr(Lo, a, 0),
                          a_stride_m=(row_offset(a[0], a[1], 1) - row_offset(a[0], a[1], 0)) if N > 1 else 0,
                          a_stride_k=1, a_stride_batch=0,
                          b_base=lambda Lo, s=whh_syms[layer]: Lo.addr(s), b_stride_batch=0,
                          b_stride_k=1, b_stride_n=kp_of(H), c_stride_m=GP, c_stride_batch=0)
            cx.gemm(node, name=pname, M=N, N=GP, K=H, batch=1, a_pass=N * kp_of(H),
                    b_packed=False, per_tensor=per_tensor, fields=fields, flags=0,
                    out_buf=syms["gh"], relu=False, has_bias=bias is not None,
                    params=params_spec(f"{pname}.params", lq.hh[layer], bias))
        else:
            for n in range(N):
                where = dict(name=f"{name}.{kind}", module=node.module)
                if kind == "add":
                    _, o, a, b, ma, mb, sh, relu = op
                    w = width(o)
                    cx.emit(lambda Lo, ix, o=o, a=a, b=b, ma=ma, mb=mb, sh=sh, relu=relu, n=n, w=w, wh=where:
                            P.Add(ix, P.RELU if relu else 0, addr(Lo, a, n), addr(Lo, b, n),
                                  addr(Lo, o, n), int(ma), int(mb), int(sh), dims(w), z4, z4, z4,
                                  **wh), {"kind": node.kind})
                elif kind == "mul":
                    _, o, a, b, m0, sh = op
                    w = width(o)
                    cx.emit(lambda Lo, ix, o=o, a=a, b=b, m0=m0, sh=sh, n=n, w=w, wh=where:
                            P.Mul(ix, 0, addr(Lo, a, n), addr(Lo, b, n), addr(Lo, o, n), int(m0),
                                  int(sh), dims(w), z4, z4, z4, **wh), {"kind": node.kind})
                else:
                    _, o, a, tab = op
                    w = width(o)
                    cx.emit(lambda Lo, ix, o=o, a=a, tab=tab, n=n, w=w, wh=where:
                            P.Lut(ix, 0, addr(Lo, a, n), addr(Lo, o, n),
                                  Lo.addr(f"{name}.table.{tab}"), dims(w), z4, z4, **wh),
                            {"kind": node.kind})
    # the GEMM layers carry the node's name (its MACs are shared out over them), the
    # element-wise ones ``<node>.add`` / ``.lut`` / ``.mul``; the GEMMs' parameter symbols keep
    # their step names
    for k in range(first, len(cx.layers)):
        b, st = cx.layers[k]
        if st.get("M") is not None:
            cx.layers[k] = (lambda Lo, ix, b=b: dataclasses.replace(b(Lo, ix), name=name), st)
    # the node's tensor: the states it outputs, as element offsets of the state buffers
    if node.out == "c":
        buf = syms["cs"]
    else:
        buf = syms["hs"]
    li, ti, ni, ki = np.meshgrid(np.arange(Ly), np.arange(T), np.arange(N), np.arange(H), indexing="ij")
    offs = ((li * T + ti) * N + ni) * Hp + ki
    if node.out == "y":
        offs = offs[-1]
        if node.batch_first:
            offs = offs.transpose(1, 0, 2)
    else:
        offs = offs[:, -1]
    cx.set_tensor(node.name, buf, np.ascontiguousarray(offs))
