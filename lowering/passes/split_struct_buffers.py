"""pycde-accel-split-struct-buffers: buffer a store's fields, not its {address, data} struct.

handshake-lower-extmem-to-hw packs each store into ``hw.struct_create(address, data)``; when
handshake-insert-buffers then buffers that struct, the registers stay ``struct packed`` in the
SV (hw-flatten-io flattens only ports), and Yosys rejects those (docs/toolchain.md). This pass moves
such a buffer in front of the struct_create, one buffer per field, so that no struct-typed
register is left. It changes no timing: the same slots, on each field.

Before:  %s = hw.struct_create (%a, %d) : !hw.struct<address: i4, data: i8>
         %b = buffer [2] seq %s : !hw.struct<address: i4, data: i8>
After:   %ba = buffer [2] seq %a : i4   %bd = buffer [2] seq %d : i8
         %b = hw.struct_create (%ba, %bd) : !hw.struct<address: i4, data: i8>
"""

from __future__ import annotations

from ._util import apply_patterns, attrs_of, defining_op, ir_of

NAME = "pycde-accel-split-struct-buffers"


def run(module) -> None:
    ir = ir_of(module)

    def split(op, rewriter):
        op = op.operation
        src = defining_op(ir, op.operands[0])
        if src is None or src.name != "hw.struct_create" or len(list(op.results[0].uses)) == 0:
            return True
        attrs = attrs_of(op)
        with rewriter.ip, op.location:
            fields = [ir.Operation.create("handshake.buffer", results=[v.type], operands=[v],
                                          attributes=attrs).result for v in src.operands]
            new = ir.Operation.create("hw.struct_create", results=[src.results[0].type],
                                      operands=fields)
        rewriter.replace_op(op, new)
        if not list(src.results[0].uses):
            rewriter.erase_op(src)
        return False

    apply_patterns(module, [("handshake.buffer", split)])
