"""Each of the project's passes (lowering/passes) on small IR, before and after."""

from __future__ import annotations

import re

import pytest

from pycde_accel.lowering import bridge
from pycde_accel.lowering.passes import REGISTRY


@pytest.fixture(scope="module")
def circt_ctx():
    return bridge.context("circt")


def _run(ctx, which, text, name, spec=""):
    ir, _, _ = bridge.bindings(which)
    m = ir.Module.parse(text, ctx)
    REGISTRY[name].run(m, name + spec)
    m.operation.verify()
    return str(m)


def test_registry_has_docs_with_before_and_after():
    for name, entry in REGISTRY.items():
        assert name.startswith("pycde-accel-")
        assert entry.doc and "Before" in entry.doc or name == "pycde-accel-lowering-options"


def test_drop_returned_buffers():
    ctx = bridge.context("torch")
    out = _run(ctx, "torch", """
      func.func @k(%a: memref<4xi8>, %o: memref<4xi8>) -> memref<4xi8> {
        return %o : memref<4xi8>
      }
      func.func @keep() -> memref<4xi8> {
        %m = memref.alloc() : memref<4xi8>
        return %m : memref<4xi8>
      }""", "pycde-accel-drop-returned-buffers")
    assert re.search(r"func.func @k\(%arg0: memref<4xi8>, %arg1: memref<4xi8>\) \{", out)
    assert "return\n" in out
    assert "func.func @keep() -> memref<4xi8>" in out  # not an argument: left alone


def test_sink_constants(circt_ctx):
    out = _run(circt_ctx, "circt", """
      func.func @f(%x: i8, %p: i1) -> i8 {
        %c = arith.constant 5 : i8
        cf.br ^bb1
      ^bb1:
        %y = arith.addi %x, %c : i8
        %z = arith.addi %y, %c : i8
        return %z : i8
      }""", "pycde-accel-sink-constants")
    entry, bb1 = out.split("^bb1:")
    assert "arith.constant" not in entry
    assert bb1.count("arith.constant 5 : i8") == 1  # one copy per using block


_JOIN = """
  handshake.func @k(%arg0: i8, %arg1: none, %arg2: none, ...) -> (none)
      attributes {argNames = ["in0_ld0.data", "in1_st0.done", "in2"], resNames = ["out0"]} {
    %0:2 = fork [2] %arg0 : i8
    %1 = join %0#1 : i8
    sink %0#0 : i8
    %2 = join %arg2, %1, %arg1 : none, none, none
    return %2 : none
  }"""


def test_drop_mem_completion_join(circt_ctx):
    assert "join %arg2, %1, %arg1" in _run(circt_ctx, "circt", _JOIN, "pycde-accel-sink-constants")
    out = _run(circt_ctx, "circt", _JOIN, "pycde-accel-drop-mem-completion-join")
    assert "join %arg2" not in out and "%arg1 : none, none" not in out
    assert "sink %1 : none" in out and "sink %arg1 : none" in out
    assert "return %arg2 : none" in out  # the control token alone goes on


_MUX = """
  handshake.func @k(%arg0: index, %arg1: i1, %arg2: none, ...) -> (index, none)
      attributes {argNames = ["a", "b", "in2"], resNames = ["out0", "out1"]} {
    %0 = buffer [1] seq %arg1 {initValues = [0]} : i1
    %1 = mux %0 [%arg0, %2#0] : i1, index
    %2:2 = fork [2] %1 : index
    return %2#1, %arg2 : index, none
  }"""


def test_backedge_buffers(circt_ctx):
    out = _run(circt_ctx, "circt", _MUX, "pycde-accel-backedge-buffers")
    m = re.search(r"(%\d+) = buffer \[1\] seq %(\d+)#0 : index", out)
    assert m, out
    assert re.search(rf"mux %\w+ \[%arg0, {m.group(1)}\]", out)
    # idempotent: a second run adds nothing
    again = _run(circt_ctx, "circt", out, "pycde-accel-backedge-buffers")
    assert again.count("buffer [1] seq") == out.count("buffer [1] seq")


def test_store_input_buffers(circt_ctx):
    out = _run(circt_ctx, "circt", """
      handshake.func @k(%arg0: index, %arg1: i8, %arg2: none, %arg3: none, ...) -> (i8, index, none)
          attributes {argNames = ["a", "d", "c", "in3"], resNames = ["o0", "o1", "o2"]} {
        %dataResult, %addressResult = store [%arg0] %arg1, %arg2 : index, i8
        return %dataResult, %addressResult, %arg3 : i8, index, none
      }""", "pycde-accel-store-input-buffers", "{slots=3}")
    a = re.search(r"(%\d+) = buffer \[3\] seq %arg0 : index", out)
    c = re.search(r"(%\d+) = buffer \[3\] seq %arg2 : none", out)
    assert a and c, out
    assert f"store [{a.group(1)}] %arg1, {c.group(1)}" in out  # data is not buffered


def test_invariant_buffers(circt_ctx):
    out = _run(circt_ctx, "circt", """
      handshake.func @k(%arg0: i32, %arg1: i1, %arg2: i1, %arg3: none, ...) -> (i32, i32, none)
          attributes {argNames = ["m", "c", "s", "in3"], resNames = ["o0", "o1", "o2"]} {
        %0 = buffer [1] seq %arg2 {initValues = [0]} : i1
        %1 = mux %0 [%arg0, %3] : i1, i32
        %trueResult, %falseResult = cond_br %arg1, %1 : i32
        %2:2 = fork [2] %trueResult : i32
        %3 = buffer [1] seq %2#0 : i32
        return %2#1, %falseResult, %arg3 : i32, i32, none
      }""", "pycde-accel-invariant-buffers", "{slots=4}")
    b = re.search(r"(%\d+) = buffer \[4\] seq %\d+#1 : i32", out)
    assert b, out
    assert re.search(rf"return {b.group(1)}, %falseResult", out)
    assert out.count("buffer [4]") == 1  # the back edge output is left alone


def test_prefix_modules(circt_ctx):
    out = _run(circt_ctx, "circt", """
      hw.module @unit(in %a : i8, out b : i8) { hw.output %a : i8 }
      hw.module @top(in %a : i8, out b : i8) {
        %0 = hw.instance "u" @unit(a: %a: i8) -> (b: i8)
        hw.output %0 : i8
      }""", "pycde-accel-prefix-modules")
    assert "hw.module @top_unit(" in out and "hw.module @top(" in out
    assert 'hw.instance "u" @top_unit(' in out


def test_lowering_options(circt_ctx):
    out = _run(circt_ctx, "circt", "module {}", "pycde-accel-lowering-options")
    assert 'circt.loweringOptions = "disallowLocalVariables,locationInfoStyle=none,omitVersionComment"' in out


def test_split_struct_buffers(circt_ctx):
    out = _run(circt_ctx, "circt", """
      handshake.func @k(%arg0: i4, %arg1: i8, %arg2: none, ...) -> (!hw.struct<address: i4, data: i8>, none)
          attributes {argNames = ["a", "d", "in2"], resNames = ["o0", "o1"]} {
        %0 = hw.struct_create (%arg0, %arg1) : !hw.struct<address: i4, data: i8>
        %1 = buffer [2] seq %0 : !hw.struct<address: i4, data: i8>
        return %1, %arg2 : !hw.struct<address: i4, data: i8>, none
      }""", "pycde-accel-split-struct-buffers")
    a = re.search(r"(%\d+) = buffer \[2\] seq %arg0 : i4", out)
    d = re.search(r"(%\d+) = buffer \[2\] seq %arg1 : i8", out)
    assert a and d, out
    assert f"hw.struct_create ({a.group(1)}, {d.group(1)})" in out
    assert "buffer [2] seq %0" not in out and out.count("hw.struct_create") == 1


_SCF_KERNEL = """
  func.func @k(%a: memref<8xi8>, %s: i8, %o: memref<8xi8>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %z = arith.constant 0 : i8
    scf.for %i = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i] : memref<8xi8>
      %y = arith.addi %x, %s : i8
      %n = arith.cmpi slt, %y, %z : i8
      %r = arith.select %n, %z, %y : i8
      memref.store %r, %o[%i] : memref<8xi8>
    }
    return
  }
"""


def test_scf_to_pipeline(circt_ctx):
    out = _run(circt_ctx, "circt", _SCF_KERNEL, "pycde-accel-scf-to-pipeline")
    assert "func.func" not in out and "scf.for" not in out
    assert re.search(r"hw\.module @k\(in %clock : !seq\.clock, in %reset : i1, in %in0 : i8, "
                     r"in %in1 : i8, in %in_valid : i1, in %out0_ready : i1, out in_ready : i1, "
                     r"out out0 : i8, out out0_valid : i1\)", out), out
    # addi (stage 0) -> cmpi (stage 1) -> select (stage 2) -> result (stage 3)
    assert "pycde_accel.latency = 3" in out
    assert out.count("pipeline.stage ^bb") == 3 and "pipeline.return" in out
    assert "stall(" in out and out.count("seq.compreg.ce") == 3  # out0_valid chain
    # the constant is repeated in each stage that uses it, never registered
    assert out.count("arith.constant 0 : i8") == 2
    # and the pipeline lowers to hw with CIRCT's passes
    from pycde.circt import ir, passmanager
    m = ir.Module.parse(out, circt_ctx)
    for p in ("map-arith-to-comb", "pipeline-explicit-regs", "lower-pipeline-to-hw"):
        passmanager.PassManager.parse(f"builtin.module({p})", circt_ctx).run(m.operation)
    assert "pipeline." not in str(m) and "arith." not in str(m)


def test_scf_to_pipeline_refuses_what_it_cannot_schedule(circt_ctx):
    two_loops = _SCF_KERNEL.replace("    return\n", "    scf.for %j = %c0 to %c8 step %c1 {\n"
                                    "    }\n    return\n")
    with pytest.raises(ValueError, match="must be one scf.for"):
        _run(circt_ctx, "circt", two_loops, "pycde-accel-scf-to-pipeline")
    shifted = _SCF_KERNEL.replace("%x = memref.load %a[%i]", "%x = memref.load %a[%c0]")
    with pytest.raises(ValueError, match="not arg\\[i\\]"):
        _run(circt_ctx, "circt", shifted, "pycde-accel-scf-to-pipeline")
