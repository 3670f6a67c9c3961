"""Accuracy of the integer model against the float torch model on seeded inputs.

``n`` batches are drawn from the examples' distribution (:func:`loader.sample_inputs`) with
``numpy.random.default_rng([seed, 2])`` (calibration uses stream ``[seed, 1]``, so the evaluation
inputs are never calibration inputs). Each batch runs through the torch module (float32) and
through quantize -> integer reference -> dequantize. Over every output tensor:

* ``top1_agreement``: fraction of rows (all axes but the last) whose argmax over the last axis
  agrees;
* ``max_abs_error``: the largest ``|dequantized - float|``, rounded to 6 significant digits.
"""

from __future__ import annotations

import numpy as np

from . import reference
from .loader import LoadedModel, sample_inputs
from .quantize import QuantizedModel

EVAL_STREAM = 2
CALIB_STREAM = 1


def torch_outputs(module, inputs: list[np.ndarray]) -> list[np.ndarray]:
    import torch
    with torch.no_grad():
        out = module(*[torch.from_numpy(np.asarray(x, np.float32)) for x in inputs])
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o.detach().double().numpy() for o in outs]


def evaluate(model: LoadedModel, qm: QuantizedModel, seed: int, n: int = 100) -> dict:
    """Torch runs single-threaded here: the batches are tiny (threads only contend), and one
    thread fixes the float summation order, so the figures are the same on any machine load."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _evaluate(model, qm, seed, n)
    finally:
        torch.set_num_threads(threads)


def _evaluate(model: LoadedModel, qm: QuantizedModel, seed: int, n: int) -> dict:
    rng = np.random.default_rng([seed, EVAL_STREAM])
    agree = rows = 0
    max_err = 0.0
    for _ in range(n):
        inputs = sample_inputs(model, rng)
        ref = torch_outputs(model.module, inputs)
        got = reference.run_dequantized(qm, inputs)
        for f, q in zip(ref, got):
            max_err = max(max_err, float(np.abs(f - q).max()))
            agree += int((f.argmax(axis=-1) == q.argmax(axis=-1)).sum())
            rows += int(np.prod(f.shape[:-1]))
    return {"num_batches": n, "num_rows": rows, "seed": seed,
            "top1_agreement": round(agree / rows, 6) if rows else 1.0,
            "max_abs_error": float(f"{max_err:.6g}")}
