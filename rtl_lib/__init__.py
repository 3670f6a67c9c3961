"""rtl_lib (see docs/architecture.md, "Layout"): PyCDE modules of the accelerator.

* :mod:`.systolic`: the output-stationary systolic matmul core (protocol, latency formula);
  ``make_systolic_core(config)``.
* :mod:`.pe`, :mod:`.skew`: its processing element and its skew/deskew buffers.
* :mod:`.ecp5`: the ECP5 MULT18X18D the PE instantiates on ECP5 targets (and its
  simulation-only model ``MULT18X18D_sim.sv``); :mod:`.lutram`: the output FIFO's RAM.
* :mod:`.emit`: ``emit_core(config, sv_dir)`` and ``emit_module(top, sv_dir)`` -> ``EmittedSV``.
* :mod:`.axil_csr`: AXI4-Lite CSR block generated from a register map that is data
  (``default_csr_map()``, ``make_axil_csr(map)``, C header from the same map).
* :mod:`.axi_dma`: AXI4 master DMA (2-D beat-aligned commands, INCR bursts within 4 KiB).
* :mod:`.scratchpad`: double-buffered scratchpad (bank handoff) and width adapters.
* :mod:`.accel`: the accelerator top ``pycde_accel_top`` (``make_accelerator``;
  ``pycde_accel.assemble.emit_accelerator(config, sv_dir)``, above rtl_lib, lowers the post-op
  kernels and emits it with them), composed
  of :mod:`.fetch` (command fetch), :mod:`.dispatch` (in-order dispatch), :mod:`.load_engine`,
  :mod:`.read_router` (the read-data router), :mod:`.write_arbiter` and :mod:`.counters`
  (status and performance counters).
* :mod:`.stream`: valid/ready streams as one type (``Stream``: port groups of a signature) and
  ``module(name, ports, build)``; :mod:`.bits`: widths and fixed-width arithmetic;
  :mod:`.common`: named registers, register slices, the dual-port memory.
* :mod:`.matmul_unit` + :mod:`.operand_spad`: EXEC engine, lane-addressed double-buffered
  operand scratchpads and the systolic core.
* :mod:`.store_engine`: STORE: C tiles -> bias -> the lowered requantize kernel -> int8 rows by DMA.
* :mod:`.vector_engine`: VEC: residual ADD / MAX of an X buffer with a stream (lowered kernels).

The lowered kernels reach the engines as parameters (PyCDE module classes): rtl_lib imports
nothing from lowering, sim or fpga (``tests/test_imports.py``).
"""
