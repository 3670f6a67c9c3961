"""Backend fixtures. Built-in models and examples go through the frontend once per test process."""

import functools
from pathlib import Path

from pycde_accel.config import AccelConfig

#: (rows, cols, axi bits): cols must be a multiple of the AXI beat (axi/8 bytes)
ARRAYS = [(8, 8, 64), (4, 4, 32), (4, 8, 64), (1, 4, 32), (3, 8, 64)]
EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))


def cfg(rows, cols, axi=64, **kw) -> AccelConfig:
    return AccelConfig(rows=rows, cols=cols, axi_data_width=axi, **kw)


@functools.lru_cache(maxsize=None)
def frontend_result(spec: str):
    from pycde_accel import frontend
    return frontend.run(spec, eval_batches=1)


def example_inputs_q(fe):
    from pycde_accel.frontend import reference
    x = [t.detach().double().numpy() for t in fe.model.example_inputs]
    return reference.quantize_inputs(fe.quantized, x)
