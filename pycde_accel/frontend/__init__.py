"""The PyTorch frontend: model -> torch.export -> layer graph -> int8 quantization -> integer
reference model, plus the torch-mlir import that heads the IR chain.

Public API::

    result = run("mlp", seed=0)          # FrontendResult: model, graph, quantized model, accuracy
    write(result, out_dir)               # design.json fragment (returned), weights.npz, ir/00_linalg*.mlir
    reference.run(result.quantized, reference.quantize_inputs(result.quantized, inputs))  # bit-exact
    quantize.requantize / quantize.residual_add   # the scalar integer primitives

Modules: loader (model specs), models (built-ins), capture (torch.export -> graph), graph (the
graph, ReLU fusion; the node classes and each op's rules are in :mod:`pycde_accel.ops`), floateval (float64 graph semantics), quantize (scheme, primitives,
calibration), reference (integer model), intmodule (the integer model as torch ops, for
torch-mlir), evaluate (accuracy), design (design.json/weights.npz), mlir_import (torch-mlir),
mlir_exec (JIT-run linalg text to check it against the reference).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import capture as capture_mod
from . import design, evaluate, graph, intmodule, loader, mlir_import, quantize, reference, sanity
from ..errors import UserError
from .loader import LoadedModel, load_model

#: seeded calibration batches drawn in addition to the example inputs
CALIBRATION_BATCHES = 32
EVAL_BATCHES = 100


@dataclass
class FrontendResult:
    model: LoadedModel
    graph: graph.Graph            # float graph, ReLU fused, BatchNorm folded
    quantized: quantize.QuantizedModel
    accuracy: dict


def calibration_inputs(model: LoadedModel, seed: int, batches: int = CALIBRATION_BATCHES) -> list[list[np.ndarray]]:
    rng = np.random.default_rng([seed, evaluate.CALIB_STREAM])
    data = [[t.detach().double().numpy() for t in model.example_inputs]]
    data += [loader.sample_inputs(model, rng) for _ in range(batches)]
    return data


def run(spec: str | None, seed: int = 0, *, eval_batches: int = EVAL_BATCHES) -> FrontendResult:
    model = load_model(spec)
    sanity.check(model)
    g = graph.fuse_relu(capture_mod.capture(model.module, model.example_inputs,
                                            fallback_source=model.fallback_source))
    qm = quantize.quantize_graph(g, calibration_inputs(model, seed))
    try:
        acc = evaluate.evaluate(model, qm, seed, eval_batches)
    except reference.AccumulatorOverflow as e:
        raise UserError(f"the int8 model needs wider than int32 accumulators: {e}") from e
    return FrontendResult(model, g, qm, acc)


def write(result: FrontendResult, out: Path) -> dict:
    """Write weights.npz, ir/00_linalg.mlir (integer model) and ir/00_linalg_float.mlir (float
    model; both without the values of large constants, mlir_import.ELIDE_BYTES) into ``out``;
    return the design.json entries."""
    out = Path(out)
    design.write_npz(out / "weights.npz", design.weight_arrays(result.quantized))
    ir = out / "ir"
    ir.mkdir(parents=True, exist_ok=True)
    limit = mlir_import.ELIDE_BYTES         # large weights: weights.npz holds them, not the IR text
    (ir / f"{mlir_import.STAGE}.mlir").write_text(
        mlir_import.import_integer_linalg(result.quantized, elide_over=limit))
    (ir / f"{mlir_import.FLOAT_STAGE}.mlir").write_text(
        mlir_import.import_linalg(result.model.module, result.model.example_inputs, elide_over=limit))
    d = design.design_dict(result.quantized, result.model.name, result.model.spec)
    d["accuracy"] = result.accuracy
    d["ir"] = {"int8": f"ir/{mlir_import.STAGE}.mlir", "float": f"ir/{mlir_import.FLOAT_STAGE}.mlir"}
    return d


__all__ = ["FrontendResult", "LoadedModel", "load_model", "run", "write", "capture_mod", "design",
           "evaluate", "graph", "intmodule", "loader", "mlir_import", "quantize", "reference"]
