"""Compiler back end: layer graph -> layer program + per-layer command lists + DRAM image, and
golden models of both.

Public API::

    cp = compile_program(frontend_result, config)  # CompiledProgram: image, placements, layers
    cp.layers[i]            # {"index", "name", "op", "cmd_addr", "cmd_count", "macs", "tiles", ...}
    cp.input_placements[i].pack_input(x_int8) -> bytes      # write at .addr
    cp.output_placements[i].unpack_output(bytes) -> int8    # read .size bytes at .addr
    outputs, ex = cmdexec.run(cp, inputs_q)        # the commands, bit-exact with frontend.reference
    outputs, ex = executor.run(cp, inputs_q)       # the descriptors, likewise

Modules: program (layer descriptors, binary/JSON), commands (command encoding, descriptor ->
commands), tiling (GEMM tiling, loop order, traffic), layout (DRAM image, packing, placements),
compile (the driver and the ops' context; each op's lowering is in pycde_accel.ops), executor (descriptor golden model), cmdexec (command golden model).
"""

from __future__ import annotations

from .compile import CompiledProgram, compile_program

__all__ = ["CompiledProgram", "compile_program"]
