"""pycde-accel: a PyTorch model in, an int8 systolic accelerator in SystemVerilog out.

The flow (see docs/architecture.md): frontend (torch.export, int8 quantization, integer reference) ->
systolic matmul core and CIRCT-lowered post-op kernels (``pycde_accel.rtl_lib``,
``pycde_accel.lowering``) -> Verilator/cocotb simulation (``pycde_accel.sim``) -> open
synthesis (``pycde_accel.fpga``).

Python API (:mod:`pycde_accel.api`)::

    design = pycde_accel.compile(module, example_inputs, config=pycde_accel.AccelConfig())
    design.emit("out")            # EmitResult
    design.simulate()             # SimResult (bit_exact, cycles per layer)
    design.synthesize("ecp5-85f") # SynthOutput
    design.report("out")          # report.md / report.html / report.json
    plan = pycde_accel.plan_partition(module, example_inputs, host="cpu")   # accelerator + host
    pycde_accel.run_partition(module, plan, example_inputs)            # the plan, in Verilator
"""

from .api import Design, EmitResult, compile, plan_partition, run_partition  # noqa: A004
from .config import AccelConfig
from .errors import UserError

__all__ = ["AccelConfig", "Design", "EmitResult", "UserError", "compile", "plan_partition",
           "run_partition"]
__version__ = "0.1.0"
