"""The model imported into MLIR by torch-mlir: the head of the IR chain.

Two stage-00 files, both linalg-on-tensors from ``torch_mlir.fx.export_and_import(...,
output_type="linalg-on-tensors")`` (which runs torch.export itself), function ``@forward``:

* ``ir/00_linalg.mlir`` (:data:`STAGE`): the *quantized integer* model
  (:class:`~pycde_accel.frontend.intmodule.IntegerModule`): int8 tensors in and out, integer
  arithmetic only (no floating-point type anywhere; tested), bit-exact with the reference (tested
  by compiling it to LLVM and running it, :mod:`~pycde_accel.frontend.mlir_exec`). This
  is the file the lowering continues from.
* ``ir/00_linalg_float.mlir`` (:data:`FLOAT_STAGE`): the float torch model as the user wrote it,
  for inspection.

The text is MLIR's pretty form with constants as ``dense_resource`` blobs at the end and no
location information (so no machine paths).
"""

from __future__ import annotations

STAGE = "00_linalg"
FLOAT_STAGE = "00_linalg_float"


def _import(module, example_inputs) -> str:
    import warnings
    from torch_mlir import fx
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = fx.export_and_import(module.eval(), *example_inputs, output_type="linalg-on-tensors",
                                   func_name="forward")
    text = str(mod)
    return text if text.endswith("\n") else text + "\n"


def import_linalg(module, example_inputs) -> str:
    """The float torch model as linalg-on-tensors text."""
    return _import(module, example_inputs)


def import_integer_linalg(qm) -> str:
    """The quantized model (integer ops only) as linalg-on-tensors text."""
    from .intmodule import IntegerModule, example_int_inputs
    return _import(IntegerModule(qm), example_int_inputs(qm))
