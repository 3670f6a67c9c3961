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
location information (so no machine paths). The files ``gen`` writes elide every blob larger
than :data:`ELIDE_BYTES` (``elide_over``; MLIR's ``large_resource_limit``): the op keeps its
``dense_resource<name>`` handle and the file still parses, but the values are not repeated
there: the integer weights are in ``weights.npz`` (and the DRAM image), the float ones are the
model's. A ResNet-18's float weights as hex text were 90 MB of its output folder. A header line
says what was left out.
"""

from __future__ import annotations

STAGE = "00_linalg"
FLOAT_STAGE = "00_linalg_float"
#: blobs larger than this (bytes, with the blob's 4-byte alignment header) are elided from the
#: files ``gen`` writes
ELIDE_BYTES = 4096


def _import(module, example_inputs, elide_over: int | None = None) -> str:
    import warnings
    from torch_mlir import fx
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = fx.export_and_import(module.eval(), *example_inputs, output_type="linalg-on-tensors",
                                   func_name="forward")
    if elide_over is None:
        text = str(mod)
    else:
        # MLIR's limit counts the printed string: quotes, "0x", two hex digits per byte
        full = mod.operation.get_asm(large_resource_limit=2 * elide_over + 4)
        text = (f"// dense_resource constants over {elide_over} bytes are elided (handles kept, "
                f"no values): the integer weights are in weights.npz\n" + full)
    return text if text.endswith("\n") else text + "\n"


def import_linalg(module, example_inputs, *, elide_over: int | None = None) -> str:
    """The float torch model as linalg-on-tensors text (``elide_over``: see the module
    docstring; None keeps every value)."""
    return _import(module, example_inputs, elide_over)


def import_integer_linalg(qm, *, elide_over: int | None = None) -> str:
    """The quantized model (integer ops only) as linalg-on-tensors text."""
    from .intmodule import IntegerModule, example_int_inputs
    return _import(IntegerModule(qm), example_int_inputs(qm), elide_over)
