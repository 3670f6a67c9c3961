"""Run linalg-on-tensors text on the CPU with MLIR's ExecutionEngine (the one in torch-mlir's
wheel), to check that the imported integer IR (``ir/00_linalg.mlir``) computes what the numpy
reference computes.

The function ``@forward`` is bufferized (one-shot, function boundaries, identity layouts),
lowered through loops and cf to LLVM, and JIT-compiled. Integer tensors only (int8/16/32/64).
The wheel ships no MLIR C runner library, so the one runtime function the lowered code calls,
``memrefCopy`` (strided copies), is supplied here as a ctypes callback.
"""

from __future__ import annotations

import ctypes

import numpy as np

PIPELINE = ("builtin.module(func.func(linalg-generalize-named-ops),"
            "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},"
            "func.func(convert-linalg-to-loops),func.func(lower-affine),convert-scf-to-cf,"
            "func.func(arith-expand),expand-strided-metadata,finalize-memref-to-llvm,lower-affine,"
            "func.func(convert-arith-to-llvm),convert-func-to-llvm,convert-cf-to-llvm,"
            "reconcile-unrealized-casts)")


class _Unranked(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int64), ("desc", ctypes.c_void_p)]


def _strided_view(u: _Unranked, elem: int) -> np.ndarray | None:
    """numpy view of a ranked memref descriptor {alloc, aligned, offset, sizes[r], strides[r]}."""
    p = ctypes.cast(u.desc, ctypes.POINTER(ctypes.c_int64))
    rank = u.rank
    aligned, offset = p[1], p[2]
    sizes = [p[3 + i] for i in range(rank)]
    strides = [p[3 + rank + i] for i in range(rank)]
    if any(s == 0 for s in sizes):
        return None
    span = 1 + sum((s - 1) * st for s, st in zip(sizes, strides))
    raw = (ctypes.c_uint8 * (span * elem)).from_address(aligned + offset * elem)
    base = np.ctypeslib.as_array(raw).view(np.dtype((np.void, elem)))
    return np.lib.stride_tricks.as_strided(base, shape=sizes, strides=[st * elem for st in strides])


@ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(_Unranked), ctypes.POINTER(_Unranked))
def _memref_copy(elem, src, dst):
    s, d = _strided_view(src[0], elem), _strided_view(dst[0], elem)
    if s is not None:
        d[...] = s


_CTYPE = {8: ctypes.c_int8, 16: ctypes.c_int16, 32: ctypes.c_int32, 64: ctypes.c_int64}
_NP = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


class CompiledFunction:
    """``CompiledFunction(text)(*arrays) -> list of arrays`` for ``@forward`` in ``text``."""

    def __init__(self, text: str, func: str = "forward"):
        from torch_mlir import ir
        from torch_mlir.execution_engine import ExecutionEngine
        from torch_mlir.passmanager import PassManager
        self.func = func
        self._ctx = ir.Context()
        with self._ctx:
            module = ir.Module.parse(text)
            fn = next(op for op in module.body.operations
                      if op.operation.name == "func.func" and
                      ir.StringAttr(op.attributes["sym_name"]).value == func)
            ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
            self.inputs = [self._sig(t) for t in ftype.inputs]
            self.results = [self._sig(t) for t in ftype.results]
            fn.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
            PassManager.parse(PIPELINE).run(module.operation)
            self._engine = ExecutionEngine(module, opt_level=2)
            self._engine.raw_register_runtime("memrefCopy", ctypes.cast(_memref_copy, ctypes.c_void_p))
            self._module = module

    @staticmethod
    def _sig(t) -> tuple[tuple[int, ...], int]:
        from torch_mlir import ir
        rt = ir.RankedTensorType(t)
        return tuple(rt.shape), ir.IntegerType(rt.element_type).width

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        from torch_mlir.runtime import (get_ranked_memref_descriptor, make_nd_memref_descriptor,
                                        ranked_memref_to_numpy)
        if len(arrays) != len(self.inputs):
            raise ValueError(f"@{self.func} takes {len(self.inputs)} inputs, got {len(arrays)}")
        keep = [np.ascontiguousarray(a, dtype=_NP[w]) for a, (_, w) in zip(arrays, self.inputs)]
        for a, (shape, _) in zip(keep, self.inputs):
            if a.shape != shape:
                raise ValueError(f"input shape {a.shape}, expected {shape}")
        in_args = [ctypes.pointer(ctypes.pointer(get_ranked_memref_descriptor(a))) for a in keep]
        descs = [make_nd_memref_descriptor(len(s), _CTYPE[w])() for s, w in self.results]
        if len(descs) == 1:
            self._engine.invoke(self.func, ctypes.pointer(ctypes.pointer(descs[0])), *in_args)
        else:
            packed = type("Results", (ctypes.Structure,),
                          {"_fields_": [(f"r{i}", type(d)) for i, d in enumerate(descs)]})()
            self._engine.invoke(self.func, ctypes.pointer(ctypes.pointer(packed)), *in_args)
            descs = [getattr(packed, f"r{i}") for i in range(len(descs))]
        return [ranked_memref_to_numpy(ctypes.pointer(d)).copy() for d in descs]
