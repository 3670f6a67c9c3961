"""The op interface: one graph node class per op kind, carrying every hook the compiler calls.

An op kind is one module of :mod:`pycde_accel.ops` that defines a :class:`Node` subclass and
registers it with :func:`register`. The class is at once the graph node (a dataclass: the op's
attributes, static shape, inputs) and the op's knowledge (class methods and methods, in the
spirit of FINN's ``CustomOp``): the stages of the compiler never test a node's type, they call
its hooks.

Hooks (defaults below; an op overrides those that apply to it):

* capture: ``ATEN`` (the ``torch.export`` targets it captures) and :meth:`Node.capture`
  (fx node -> graph node, through the capture context of :mod:`pycde_accel.frontend.capture`);
  ``SUPPORTED`` (its phrase in the "supported:" list) and ``ORDER`` (its place there);
  ``FUSES_RELU`` (a following ReLU folds into it as ``relu=True``),
  :meth:`Node.folds_batchnorm` (a following BatchNorm folds into its weight).
* :meth:`Node.macs`: the multiply-accumulates the model's op does (not the array's, which
  include channel padding): the figure MACs and PE utilization are quoted in.
* :meth:`Node.quantize`: the output scale and integer parameters (:class:`LayerQuant`).
* :meth:`Node.float_eval`: the float64 meaning (calibration, capture checks).
* :meth:`Node.reference`: the integer reference, bit-exact with the hardware.
* :meth:`Node.int_setup` / :meth:`Node.int_forward`: the integer model as torch ops (for
  torch-mlir, :mod:`pycde_accel.frontend.intmodule`).
* :meth:`Node.quant_json`, :meth:`Node.weight_arrays`, :meth:`Node.from_json`: design.json
  and weights.npz.
* :meth:`Node.lower`: the back end: emit the layer descriptors (engine functions of
  :mod:`pycde_accel.backend.program`) through the compiler context of
  :mod:`pycde_accel.backend.compile`, or only re-address a tensor (a view).
* :meth:`Node.postop`: the post-op kernel of the op (``01_postops``, :mod:`lowering.postops`).

The descriptors an op lowers to are shared engine functions (GEMM, ADD, RELU, MAXPOOL, COPY, LUT),
whose command scheduling (:mod:`pycde_accel.backend.commands`), golden execution
(:mod:`pycde_accel.backend.executor`) and cycle model (:mod:`pycde_accel.perfmodel`, per
command) belong to the engine, not to any one op. docs/adding-an-op.md walks through adding one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import UserError

#: kind -> node class, filled by :func:`register` as the op modules are imported
REGISTRY: dict[str, type] = {}
#: torch.export target (``str(fx_node.target)``) -> node class
ATEN: dict[str, type] = {}


def register(cls):
    """Class decorator: enter an op's node class into :data:`REGISTRY` and :data:`ATEN`."""
    if cls.kind in REGISTRY:
        raise ValueError(f"op kind {cls.kind!r} registered twice")
    REGISTRY[cls.kind] = cls
    for t in cls.ATEN:
        if t in ATEN:
            raise ValueError(f"ATen target {t} captured by {ATEN[t].kind} and {cls.kind}")
        ATEN[t] = cls
    return cls


@dataclass
class Node:
    """A node of the layer graph. ``inputs`` are earlier node names, ``shape`` the static output
    shape, ``module`` the module path it came from (``features.3``; ``""`` for the top-level
    forward), ``source`` the model file line (``model.py:12``; ``""`` when unknown)."""
    name: str
    inputs: tuple[str, ...]
    shape: tuple[int, ...]
    module: str = ""
    source: str = ""
    kind: ClassVar[str] = "?"
    ATEN: ClassVar[tuple[str, ...]] = ()
    SUPPORTED: ClassVar[str] = ""
    ORDER: ClassVar[int] = 100
    FUSES_RELU: ClassVar[bool] = False

    # ---- graph / capture -------------------------------------------------------------------
    def attrs(self) -> dict:
        """Op attributes for design.json (no weights)."""
        return {}

    @classmethod
    def capture(cls, cx, n) -> None:
        """Translate the fx node ``n`` (one of ``ATEN``) through the capture context ``cx``."""
        raise cx.fail(n, str(n.target))

    def folds_batchnorm(self) -> bool:
        """Whether a BatchNorm right after this node folds into its ``weight``/``bias``."""
        return False

    def macs(self, graph) -> int:
        """Multiply-accumulates of the op as the model states it (``graph``: the layer graph,
        for input shapes); 0 for ops that do none."""
        return 0

    # ---- quantization and semantics --------------------------------------------------------
    def quantize(self, scales: dict, maxabs: dict):
        """``(output scale, LayerQuant or None)``; default: the scale of the first input passes
        through and there are no integer parameters."""
        return scales[self.inputs[0]], None

    def float_eval(self, ins: list, run):
        """float64 output from the inputs' values (``run.inputs``: the model's float inputs)."""
        raise TypeError(f"no float semantics for {self.kind}")

    def reference(self, ins: list, lq, run):
        """int8 codes (int64 array) from the inputs' codes; matmul-like ops put their int32
        accumulator into ``run.acc[self.name]`` (``run.inputs``: the model's int8 inputs)."""
        raise TypeError(f"no integer semantics for {self.kind}")

    def int_setup(self, m, lq) -> None:
        """Register the constants of :meth:`int_forward` on the IntegerModule ``m``."""

    def int_forward(self, m, ins: list, inputs: tuple):
        """The integer semantics as torch ops (int64 tensors) on the IntegerModule ``m``."""
        raise TypeError(f"no torch integer form for {self.kind}")

    # ---- design.json / weights.npz ---------------------------------------------------------
    def quant_json(self, lq) -> dict:
        return {}

    def weight_arrays(self, lq) -> dict:
        return {}

    @classmethod
    def from_json(cls, common: dict, attrs: dict, quant: dict, arrays: dict):
        """``(node, LayerQuant or None)`` from a design.json node entry (integer use only)."""
        return cls(**common), None

    # ---- back end --------------------------------------------------------------------------
    def lower(self, cx) -> None:
        """Emit this node's layers through the back end's compiler context ``cx``."""
        raise UserError(f"{cx.where(self)}: the accelerator back end cannot map node kind {self.kind!r}")

    def postop(self, lq, base: str):
        """``(kernel, kernel kind, parameters)`` of the op's post-op kernel, or None."""
        return None
