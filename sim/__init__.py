"""sim (see DESIGN.md, Layout): Verilator + cocotb from Python.

* :mod:`.runner`: ``build(filelist, top, build_dir=|cache_root=)`` -> :class:`SimBuild`,
  ``run(build, test_module, test_dir, extra_env=, plusargs=, waves=)``, :class:`SimFailure`,
  ``pytest_cache_root(tmp_path_factory)``.
* :mod:`.stream`: cocotb valid/ready stream drivers and sinks with seeded random back-pressure
  (import it only inside a cocotb simulation).
* :mod:`.tb`: clock-and-reset start-up shared by the testbenches; :mod:`.watchdog`: ends a
  stalled simulation naming the stream that stopped.
* :mod:`.systolic` + :mod:`.tb_systolic`: build and test the systolic core; ``tb_axi_dma``,
  ``tb_axil_csr``, ``tb_scratchpad``, ``tb_watchdog``: the testbenches of the other blocks.
"""

from .runner import SimBuild, SimFailure, build, pytest_cache_root, read_filelist, run

__all__ = ["SimBuild", "SimFailure", "build", "pytest_cache_root", "read_filelist", "run"]
