"""rtl_lib (see DESIGN.md, Layout): PyCDE modules of the accelerator.

* :mod:`.systolic`: the output-stationary systolic matmul core (protocol, latency formula);
  ``make_systolic_core(config)``.
* :mod:`.pe`, :mod:`.skew`: its processing element and its skew/deskew buffers.
* :mod:`.emit`: ``emit_core(config, sv_dir)`` and ``emit_module(top, sv_dir)`` -> ``EmittedSV``.
"""
