"""pycde-accel-lowering-options: SV that Verilator and Yosys both read, with no machine paths.

Sets ``circt.loweringOptions = "disallowLocalVariables,locationInfoStyle=none,omitVersionComment"``
on the module (docs/toolchain.md: Yosys rejects ``automatic logic`` locals in always_ff); with
``locationInfoStyle=none`` no source paths reach the SV, so the same input gives the same bytes.
"""

from __future__ import annotations

from ._util import ir_of

NAME = "pycde-accel-lowering-options"
OPTIONS = "disallowLocalVariables,locationInfoStyle=none,omitVersionComment"


def run(module) -> None:
    ir = ir_of(module)
    module.operation.attributes["circt.loweringOptions"] = ir.StringAttr.get(OPTIONS, module.context)
