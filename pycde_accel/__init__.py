"""pycde-accel: a PyTorch model in, an int8 systolic accelerator in SystemVerilog out.

The flow (see DESIGN.md): frontend (torch.export, int8 quantization, integer reference) ->
systolic matmul core and CIRCT-lowered post-op kernels (``pycde_accel.rtl_lib``,
``pycde_accel.lowering``) -> Verilator/cocotb simulation (``pycde_accel.sim``) -> open
synthesis (``pycde_accel.fpga``).
"""

from .config import AccelConfig
from .errors import UserError

__all__ = ["AccelConfig", "UserError"]
__version__ = "0.1.0"
