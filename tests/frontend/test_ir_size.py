"""The stage-00 files gen writes leave out the values of large constants (the weights are in
weights.npz): the files stay small for large models and still parse."""

import re

from pycde_accel import frontend
from pycde_accel.frontend import mlir_import


def _blobs(text: str) -> dict[str, int]:
    """resource name -> blob bytes, from the dialect_resources section."""
    sec = text.split("dialect_resources", 1)[1] if "dialect_resources" in text else ""
    return {k: (len(v) - 2) // 2 for k, v in re.findall(r'(\w[\w.]*): "(0x[0-9A-F]*)"', sec)}


def test_large_constants_are_elided_and_the_files_parse(tmp_path):
    from torch_mlir import ir
    fe = frontend.run("lenet5", seed=0, eval_batches=1)
    frontend.write(fe, tmp_path)
    limit = mlir_import.ELIDE_BYTES
    full = {"00_linalg": mlir_import.import_integer_linalg(fe.quantized),
            "00_linalg_float": mlir_import.import_linalg(fe.model.module, fe.model.example_inputs)}
    for stage, whole in full.items():
        text = (tmp_path / "ir" / f"{stage}.mlir").read_text()
        assert text.startswith(f"// dense_resource constants over {limit} bytes are elided")
        kept, every = _blobs(text), _blobs(whole)
        assert any(n > limit for n in every.values())          # lenet5 has weights to elide
        assert kept == {k: n for k, n in every.items() if n <= limit}
        for name in every:                                      # every handle is still used
            assert f"dense_resource<{name}>" in text
        assert len(text) < len(whole)
        with ir.Context():
            ir.Module.parse(text)
