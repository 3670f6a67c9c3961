"""sim (see docs/architecture.md, "Layout"): Verilator + cocotb from Python.

* :mod:`.runner`: ``build(filelist, top, build_dir=|cache_root=)`` -> :class:`SimBuild`,
  ``run(build, test_module, test_dir, extra_env=, plusargs=, waves=)``, :class:`SimFailure`,
  ``pytest_cache_root(tmp_path_factory)``.
* :mod:`.stream`: cocotb valid/ready stream drivers and sinks with seeded random back-pressure
  (import it only inside a cocotb simulation).
* :mod:`.tb`: clock-and-reset start-up and the CSR transport shared by the testbenches;
  :mod:`.watchdog`: ends a stalled simulation naming the stream that stopped.
* :mod:`.tb_accel`, :mod:`.tb_accel_fast`, :mod:`.fast`: the whole-accelerator harnesses that
  ``python -m pycde_accel sim`` runs.

The block testbenches (one per rtl_lib module, the lowered kernels', the watchdog's) live with
their tests in ``tests/rtl_lib``, ``tests/lowering`` and ``tests/sim``: only the tests use them.
"""

from .runner import SimBuild, SimFailure, build, pytest_cache_root, read_filelist, run

__all__ = ["SimBuild", "SimFailure", "build", "pytest_cache_root", "read_filelist", "run"]
