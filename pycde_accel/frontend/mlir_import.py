"""The model imported into MLIR by torch-mlir: the head of the IR chain (``ir/00_linalg.mlir``).

torch-mlir imports the *float* torch model (``torch_mlir.fx.export_and_import(...,
output_type="linalg-on-tensors")``, which runs torch.export itself): it has no path from our
int8 scheme. The text is MLIR's pretty form with the weights as ``dense_resource`` blobs at the
end and no location information (so no machine paths). The function is named ``forward``.
"""

from __future__ import annotations

STAGE = "00_linalg"


def import_linalg(module, example_inputs) -> str:
    import warnings
    from torch_mlir import fx
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = fx.export_and_import(module.eval(), *example_inputs, output_type="linalg-on-tensors",
                                   func_name="forward")
    text = str(mod)
    return text if text.endswith("\n") else text + "\n"
