"""Compiler back end: layer graph -> tiled layer program + DRAM image, and its golden executor.

Public API::

    cp = compile_program(frontend_result, config)   # CompiledProgram: program, image, symbols, stats
    outputs, ex = executor.run(cp, inputs_q)        # bit-exact with frontend.reference.run

Modules: program (descriptors, binary/JSON encodings), tiling (GEMM tiling, loop order, traffic),
layout (DRAM image, weight packing, views), compile (the driver), executor (golden model).
"""

from __future__ import annotations

from .compile import CompiledProgram, compile_program

__all__ = ["CompiledProgram", "compile_program"]
