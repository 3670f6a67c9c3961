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
    # the scalar %s arrives after its route from the wrapper's register (SCALAR_ROUTE, 3.0
    # ns): addi (1.9 ns) -> cmpi (the sign bit) fit stage 0 after it, the select does not and
    # starts stage 1 (lowering.schedule); the result registered into stage 2
    assert "pycde_accel.latency = 2" in out
    assert out.count("pipeline.stage ^bb") == 2 and "pipeline.return" in out
    assert "stall(" in out and out.count("seq.compreg.ce") == 2  # out0_valid chain
    # a multiply (one DSP) has a stage to itself between registers: ori (wiring) in stage 0;
    # the scalar operand leaves no room for the route into the DSP column in stage 0, so
    # both operands are registered once more and the muli is in stage 2 (the DSP's input
    # registers); the add and the sign bit after the route out of the DSP in stage 3 (3.0 +
    # 1.9 ns), the select over the budget in stage 4, the result registered into stage 5
    mul = _SCF_KERNEL.replace("%y = arith.addi %x, %s : i8",
                              "%w = arith.ori %x, %z : i8\n      %p = arith.muli %w, %s : i8\n"
                              "      %y = arith.addi %p, %s : i8")
    out2 = _run(circt_ctx, "circt", mul, "pycde-accel-scf-to-pipeline")
    assert "pycde_accel.latency = 5" in out2 and out2.count("pipeline.stage ^bb") == 5, out2
    assert out2.count("seq.compreg.ce") == 5
    # an element operand in the same place needs no extra register: latency 4
    elem = mul.replace("%p = arith.muli %w, %s", "%p = arith.muli %w, %x")
    out3 = _run(circt_ctx, "circt", elem, "pycde-accel-scf-to-pipeline")
    assert "pycde_accel.latency = 4" in out3, out3
    # the constant is repeated in each stage that uses it (0, 2 and 3), never registered
    assert out2.count("arith.constant 0 : i8") == 3
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


# ---- the calyx passes (custom-form text through lowering/passes/_calyx_text.py) -------------

_CALYX = """module attributes {calyx.entrypoint = "main"} {
  calyx.component @main(%clk: i1 {clk}, %reset: i1 {reset}, %go: i1 {go}) -> (%done: i1 {done}) {
    %mem_0.addr0, %mem_0.clk, %mem_0.reset, %mem_0.content_en, %mem_0.write_en, %mem_0.write_data, %mem_0.read_data, %mem_0.done = calyx.seq_mem @mem_0 <[4] x 8> [2] {external = true} : i2, i1, i1, i1, i1, i8, i8, i1
    %k_instance.clk, %k_instance.reset, %k_instance.go, %k_instance.done = calyx.instance @k_instance of @k : i1, i1, i1, i1
    calyx.wires {
    }
    calyx.control {
      calyx.seq {
        calyx.invoke @k_instance[arg_mem_0 = mem_0]() -> ()
      }
    }
  } {toplevel}
  calyx.component @k(%clk: i1 {clk}, %reset: i1 {reset}, %go: i1 {go}) -> (%done: i1 {done}) {
    %true = hw.constant true
    %c1_i32 = hw.constant 1 : i32
    %c4_i32 = hw.constant 4 : i32
    %c0_i32 = hw.constant 0 : i32
    %std_slice_0.in, %std_slice_0.out = calyx.std_slice @std_slice_0 : i32, i2
    %std_add_0.left, %std_add_0.right, %std_add_0.out = calyx.std_add @std_add_0 : i32, i32, i32
    %std_slt_0.left, %std_slt_0.right, %std_slt_0.out = calyx.std_slt @std_slt_0 : i32, i32, i1
    %i.in, %i.write_en, %i.clk, %i.reset, %i.out, %i.done = calyx.register @i : i32, i1, i1, i1, i32, i1
    %arg_mem_0.addr0, %arg_mem_0.clk, %arg_mem_0.reset, %arg_mem_0.content_en, %arg_mem_0.write_en, %arg_mem_0.write_data, %arg_mem_0.read_data, %arg_mem_0.done = calyx.seq_mem @arg_mem_0 <[4] x 8> [2] : i2, i1, i1, i1, i1, i8, i8, i1
    calyx.wires {
      calyx.group @init {
        calyx.assign %i.in = %c0_i32 : i32
        calyx.assign %i.write_en = %true : i1
        calyx.group_done %i.done : i1
      }
      calyx.comb_group @cond {
        calyx.assign %std_slt_0.left = %i.out : i32
        calyx.assign %std_slt_0.right = %c4_i32 : i32
      }
      calyx.group @store {
        calyx.assign %std_slice_0.in = %i.out : i32
        calyx.assign %arg_mem_0.addr0 = %std_slice_0.out : i2
        calyx.assign %arg_mem_0.write_data = %std_slice_0.out : i2
        calyx.assign %arg_mem_0.write_en = %true : i1
        calyx.assign %arg_mem_0.content_en = %true : i1
        calyx.group_done %arg_mem_0.done : i1
      }
      calyx.group @incr {
        calyx.assign %i.in = %std_add_0.out : i32
        calyx.assign %i.write_en = %true : i1
        calyx.assign %std_add_0.left = %i.out : i32
        calyx.assign %std_add_0.right = %c1_i32 : i32
        calyx.group_done %i.done : i1
      }
    }
    calyx.control {
      calyx.seq {
        calyx.enable @init
        calyx.while %std_slt_0.out with @cond {
          calyx.seq {
            calyx.enable @store
            calyx.enable @incr
          }
        }
      }
    }
  }
}
""".replace("%arg_mem_0.write_data = %std_slice_0.out : i2", "%arg_mem_0.write_data = %w : i8") \
   .replace("    %true = hw.constant true\n", "    %true = hw.constant true\n    %w = hw.constant 7 : i8\n")


def test_calyx_text_parser_round_trips_and_sees_structure():
    from pycde_accel.lowering.passes import _calyx_text as C
    top = C.parse(_CALYX)
    assert C.print_module(top) == _CALYX  # untouched ops print back byte for byte
    comps = [C.component(op) for op in top.walk_ops() if op.name == "calyx.component"]
    assert [c.name for c in comps] == ["main", "k"]
    k = comps[1]
    assert [p.name for p in k.inputs] == ["clk", "reset", "go"] and k.outputs[0].attrs == "{done}"
    reg = next(c for c in k.cells() if c.sym == "i")
    assert C.cell_ports(reg)["write_en"] == "%i.write_en"
    assert C.cell_types(reg) == ["i32", "i1", "i1", "i1", "i32", "i1"]
    a = C.parse_assign(k.wires.find("calyx.group")[0].regions[0].ops[0])
    assert (a.dst, a.src, a.ty, a.guard) == ("%i.in", "%c0_i32", "i32", [])
    g = C.parse_ops("      calyx.assign %a.x = %b.y ? %c : i1\n")[0]
    assert C.parse_assign(g).src == "%c" and [t.text for t in C.parse_assign(g).guard] == ["%b.y"]
    with pytest.raises(C.ParseError):
        C.parse("calyx.wires {\n  calyx.assign %a = %b : i1\n")  # unclosed region


def _calyx_chain(ctx, names):
    out = _CALYX
    for nm in names:
        out = _run(ctx, "circt", out, nm)
    return out


def test_calyx_drop_ref_wrapper(circt_ctx):
    out = _run(circt_ctx, "circt", _CALYX, "pycde-accel-calyx-drop-ref-wrapper")
    assert "@main" not in out and "calyx.invoke" not in out and "external" not in out
    assert 'calyx.entrypoint = "k"' in out
    assert re.search(r"calyx.component @k\(.*\n(.*\n)*  \} \{toplevel\}", out)
    assert "calyx.seq_mem @arg_mem_0" in out  # the kernel's own memory cell stays


def test_calyx_inline_comb_groups(circt_ctx):
    out = _calyx_chain(circt_ctx, ["pycde-accel-calyx-drop-ref-wrapper",
                                   "pycde-accel-calyx-inline-comb-groups"])
    assert "comb_group" not in out and "with @cond" not in out
    assert "calyx.while %std_slt_0.out {" in out
    wires = out[out.index("calyx.wires {"):out.index("calyx.group @init")]
    assert "calyx.assign %std_slt_0.left = %i.out : i32" in wires  # now continuous
    assert "calyx.assign %std_slt_0.right = %c4_i32 : i32" in wires
    # a comb-group destination that a group also drives would get two drivers: refused
    from pycde_accel.lowering.passes import calyx_inline_comb_groups as P
    bad = _CALYX.replace("calyx.assign %std_add_0.left = %i.out", "calyx.assign %std_slt_0.left = %i.out")
    with pytest.raises(ValueError, match="another driver"):
        P.rewrite(bad)


def test_calyx_mem_ports(circt_ctx):
    out = _calyx_chain(circt_ctx, ["pycde-accel-calyx-drop-ref-wrapper",
                                   "pycde-accel-calyx-inline-comb-groups",
                                   "pycde-accel-calyx-mem-ports"])
    assert "seq_mem" not in out and "%arg_mem_0." not in out
    head = next(ln for ln in out.splitlines() if "calyx.component @k(" in ln)
    ins, outs = head.split("->")
    assert "%arg_mem_0_done: i1" in ins
    assert "read_data" not in head  # written only: no read port
    for p in ("%arg_mem_0_addr0: i2", "%arg_mem_0_content_en: i1", "%arg_mem_0_write_en: i1",
              "%arg_mem_0_write_data: i8"):
        assert p in outs, p
    assert "calyx.assign %arg_mem_0_addr0 = %std_slice_0.out : i2" in out
    assert "calyx.group_done %arg_mem_0_done : i1" in out


def test_calyx_wire_clk_reset(circt_ctx):
    out = _calyx_chain(circt_ctx, ["pycde-accel-calyx-drop-ref-wrapper",
                                   "pycde-accel-calyx-inline-comb-groups",
                                   "pycde-accel-calyx-mem-ports",
                                   "pycde-accel-calyx-wire-clk-reset"])
    assert "calyx.assign %i.clk = %clk : i1" in out
    assert "calyx.assign %i.reset = %reset : i1" in out
    assert out.count(".clk = %clk") == 1  # the register only: combinational cells have no clk
    again = _run(circt_ctx, "circt", out, "pycde-accel-calyx-wire-clk-reset")
    assert again.count(".clk = %clk") == 1  # already driven: not added twice


_FSM = """
  fsm.machine @ctl(%go: i1) -> (i1) attributes {initialState = "idle"} {
    %true = hw.constant true
    %false = hw.constant false
    fsm.state @idle output {
      fsm.output %false : i1
    } transitions {
      fsm.transition @busy guard {
        fsm.return %go
      }
    }
    fsm.state @busy output {
      fsm.output %true : i1
    } transitions {
      fsm.transition @idle
    }
  }
  hw.module @top(in %clk : !seq.clock, in %rst : i1, in %go : i1, out o : i1) {
    %0 = fsm.hw_instance "c" @ctl(%go), clock %clk, reset %rst : (i1) -> (i1)
    hw.output %0 : i1
  }"""


def test_fsm_next_state_default(circt_ctx):
    ir, pm, _ = bridge.bindings("circt")
    m = ir.Module.parse(_FSM, circt_ctx)
    pm.PassManager.parse("builtin.module(convert-fsm-to-sv)", circt_ctx).run(m.operation)
    with pytest.raises(Exception, match="region with 1 blocks"):
        ir.Module.parse(str(m), circt_ctx)  # the empty default block does not parse back
    REGISTRY["pycde-accel-fsm-next-state-default"].run(m, "pycde-accel-fsm-next-state-default")
    m.operation.verify()
    out = str(m)
    default = out[out.index("default:"):]
    default = default[:default.index("}")]
    assert re.search(r"sv.bpassign %state_next, %state_reg", default), default
    assert "sv.bpassign" in default and default.count("sv.bpassign") == 2  # next state + output
    ir.Module.parse(out, circt_ctx)  # the printed form parses back (an empty default did not)


def test_drop_reset_initial(circt_ctx):
    out = _run(circt_ctx, "circt", """
      hw.module @m(in %clk : !seq.clock, in %rst : i1, in %d : i3, out q : i3) {
        %c0 = hw.constant 0 : i3
        %0 = seq.initial() {
          %c = hw.constant 0 : i3
          seq.yield %c : i3
        } : () -> !seq.immutable<i3>
        %r = seq.compreg %d, %clk reset %rst, %c0 initial %0 : i3
        %k = seq.compreg %d, %clk : i3
        hw.output %r : i3
      }""", "pycde-accel-drop-reset-initial")
    assert "initial" not in out
    assert re.search(r"seq.compreg %d, %clk reset %rst, %c0(_i3)? : i3", out), out


_CALYX_BODY = """module attributes {calyx.entrypoint = "k"} {
  calyx.component @k(%clk: i1 {clk}, %reset: i1 {reset}, %go: i1 {go}, %arg_mem_0_read_data: i8, %arg_mem_0_done: i1, %arg_mem_1_read_data: i8, %arg_mem_1_done: i1, %arg_mem_2_done: i1) -> (%done: i1 {done}, %arg_mem_0_addr0: i2, %arg_mem_0_content_en: i1, %arg_mem_0_write_en: i1, %arg_mem_1_addr0: i2, %arg_mem_1_content_en: i1, %arg_mem_1_write_en: i1, %arg_mem_2_addr0: i2, %arg_mem_2_content_en: i1, %arg_mem_2_write_en: i1, %arg_mem_2_write_data: i8) {
    %true = hw.constant true
    %false = hw.constant false
    %c1_i32 = hw.constant 1 : i32
    %c4_i32 = hw.constant 4 : i32
    %sa.in, %sa.out = calyx.std_slice @sa : i32, i2
    %sb.in, %sb.out = calyx.std_slice @sb : i32, i2
    %so.in, %so.out = calyx.std_slice @so : i32, i2
    %mx.left, %mx.right, %mx.out = calyx.std_add @mx : i8, i8, i8
    %std_add_0.left, %std_add_0.right, %std_add_0.out = calyx.std_add @std_add_0 : i32, i32, i32
    %std_slt_0.left, %std_slt_0.right, %std_slt_0.out = calyx.std_slt @std_slt_0 : i32, i32, i1
    %i.in, %i.write_en, %i.clk, %i.reset, %i.out, %i.done = calyx.register @i : i32, i1, i1, i1, i32, i1
    calyx.wires {
      calyx.assign %i.clk = %clk : i1
      calyx.assign %i.reset = %reset : i1
      calyx.assign %std_slt_0.left = %i.out : i32
      calyx.assign %std_slt_0.right = %c4_i32 : i32
      calyx.group @ra {
        calyx.assign %sa.in = %i.out : i32
        calyx.assign %arg_mem_0_addr0 = %sa.out : i2
        calyx.assign %arg_mem_0_content_en = %true : i1
        calyx.assign %arg_mem_0_write_en = %false : i1
        calyx.group_done %arg_mem_0_done : i1
      }
      calyx.group @rb {
        calyx.assign %sb.in = %i.out : i32
        calyx.assign %arg_mem_1_addr0 = %sb.out : i2
        calyx.assign %arg_mem_1_content_en = %true : i1
        calyx.assign %arg_mem_1_write_en = %false : i1
        calyx.group_done %arg_mem_1_done : i1
      }
      calyx.group @w {
        calyx.assign %so.in = %i.out : i32
        calyx.assign %arg_mem_2_addr0 = %so.out : i2
        calyx.assign %mx.left = %arg_mem_0_read_data : i8
        calyx.assign %mx.right = %arg_mem_1_read_data : i8
        calyx.assign %arg_mem_2_write_data = %mx.out : i8
        calyx.assign %arg_mem_2_write_en = %true : i1
        calyx.assign %arg_mem_2_content_en = %true : i1
        calyx.group_done %arg_mem_2_done : i1
      }
      calyx.group @latch {
        calyx.assign %i.in = %std_add_0.out : i32
        calyx.assign %i.write_en = %true : i1
        calyx.assign %std_add_0.left = %i.out : i32
        calyx.assign %std_add_0.right = %c1_i32 : i32
        calyx.group_done %i.done : i1
      }
    }
    calyx.control {
      calyx.seq {
        calyx.while %std_slt_0.out {
          calyx.seq {
            calyx.enable @ra
            calyx.enable @rb
            calyx.enable @w
            calyx.enable @latch
          }
        }
      }
    }
  } {toplevel}
}
"""


def _enables(text):
    return re.findall(r"calyx.enable @(\w+)", text)


def test_calyx_merge_groups(circt_ctx):
    out = _run(circt_ctx, "circt", _CALYX_BODY, "pycde-accel-calyx-merge-groups")
    assert _enables(out) == ["ra", "w", "latch"]  # the two reads run as one group
    ra = out[out.index("calyx.group @ra"):out.index("calyx.group @w")]
    assert "%arg_mem_1_content_en = %true" in ra and "%arg_mem_0_content_en = %true" in ra
    assert "calyx.assign %merge_and_0.left = %arg_mem_0_done : i1" in ra
    assert "calyx.assign %merge_and_0.right = %arg_mem_1_done : i1" in ra
    assert "calyx.group_done %merge_and_0.out : i1" in ra
    assert "calyx.std_and @merge_and_0" in out and "calyx.group @rb" not in out
    # w reads what the reads produce (read_data): it is not merged with them
    assert "%arg_mem_2_content_en = %true" not in ra
    # a read whose address comes through a cell the other read drives: not independent
    dep = _CALYX_BODY.replace("calyx.assign %arg_mem_1_addr0 = %sb.out",
                              "calyx.assign %arg_mem_1_addr0 = %sa.out")
    assert _enables(_run(circt_ctx, "circt", dep, "pycde-accel-calyx-merge-groups")) == \
        ["ra", "rb", "w", "latch"]


def test_calyx_fold_latch(circt_ctx):
    out = _run(circt_ctx, "circt", _CALYX_BODY, "pycde-accel-calyx-fold-latch")
    assert _enables(out) == ["ra", "rb", "w"] and "calyx.group @latch" not in out
    w = out[out.index("calyx.group @w"):out.index("calyx.control")]
    assert "calyx.assign %i.write_en = %arg_mem_2_done ? %true : i1" in w  # on the write's last edge
    assert "calyx.assign %i.in = %std_add_0.out : i32" in w
    assert "calyx.group_done %arg_mem_2_done : i1" in w
    # a body whose last group drives the latch's adder: left alone
    clash = _CALYX_BODY.replace(
        "        calyx.group_done %arg_mem_2_done : i1\n",
        "        calyx.assign %std_add_0.left = %i.out : i32\n"
        "        calyx.assign %std_add_0.right = %c1_i32 : i32\n"
        "        calyx.group_done %arg_mem_2_done : i1\n")
    assert "calyx.group @latch" in _run(circt_ctx, "circt", clash, "pycde-accel-calyx-fold-latch")


_CALYX_MULT = _CALYX_BODY.replace(
    "    %i.in, %i.write_en,",
    "    %m.clk, %m.reset, %m.go, %m.left, %m.right, %m.out, %m.done = calyx.std_mult_pipe @m : i1, i1, i1, i8, i8, i8, i1\n"
    "    %p.in, %p.write_en, %p.clk, %p.reset, %p.out, %p.done = calyx.register @p : i8, i1, i1, i1, i8, i1\n"
    "    %i.in, %i.write_en,").replace(
    "      calyx.group @w {",
    "      calyx.group @mul {\n"
    "        calyx.assign %m.left = %arg_mem_0_read_data : i8\n"
    "        calyx.assign %m.right = %arg_mem_1_read_data : i8\n"
    "        calyx.assign %p.in = %m.out : i8\n"
    "        calyx.assign %p.write_en = %m.done : i1\n"
    "        %0 = comb.xor %m.done, %true : i1\n"
    "        calyx.assign %m.go = %0 ? %true : i1\n"
    "        calyx.group_done %p.done : i1\n"
    "      }\n"
    "      calyx.group @w {").replace(
    "calyx.assign %mx.right = %arg_mem_1_read_data : i8",
    "calyx.assign %mx.right = %p.out : i8").replace(
    "      calyx.assign %i.clk = %clk : i1\n",
    "      calyx.assign %i.clk = %clk : i1\n      calyx.assign %p.clk = %clk : i1\n"
    "      calyx.assign %p.reset = %reset : i1\n      calyx.assign %m.clk = %clk : i1\n").replace(
    "            calyx.enable @w\n", "            calyx.enable @mul\n            calyx.enable @w\n")


def test_calyx_static_mult(circt_ctx):
    out = _run(circt_ctx, "circt", _CALYX_MULT, "pycde-accel-calyx-static-mult")
    mul = out[out.index("calyx.group @mul"):out.index("calyx.group @w")]
    # one cycle: done while the multiplier is not yet done (the cycle its go is high)
    assert "calyx.assign %mul_first.in = %m.done : i1" in mul
    assert "calyx.group_done %mul_first.out : i1" in mul
    assert "calyx.std_not @mul_first" in out
    assert "%p." not in out and "calyx.register @p" not in out  # the result register went
    w = out[out.index("calyx.group @w"):out.index("calyx.group @latch")]
    assert "calyx.assign %mx.right = %m.out : i8" in w  # the product read from the multiplier
    assert "calyx.assign %m.go = %0 ? %true : i1" in mul and "%m.left" in mul
    # then two reads merge, and two static multiplies would merge as one-cycle groups
    merged = _run(circt_ctx, "circt", out, "pycde-accel-calyx-merge-groups")
    assert _enables(merged) == ["ra", "mul", "w", "latch"]
    # the register also read by the multiply group itself (an accumulation): left alone
    acc = _CALYX_MULT.replace("calyx.assign %m.right = %arg_mem_1_read_data : i8",
                              "calyx.assign %m.right = %p.out : i8")
    assert "calyx.register @p" in _run(circt_ctx, "circt", acc, "pycde-accel-calyx-static-mult")
    # the group enabled twice: left alone (its multiplier's done could be high on entry)
    twice = _CALYX_MULT.replace("            calyx.enable @mul\n",
                                "            calyx.enable @mul\n            calyx.enable @mul\n")
    assert "calyx.register @p" in _run(circt_ctx, "circt", twice, "pycde-accel-calyx-static-mult")


def test_calyx_fold_mult(circt_ctx):
    static = _run(circt_ctx, "circt", _CALYX_MULT, "pycde-accel-calyx-static-mult")
    merged = _run(circt_ctx, "circt", static, "pycde-accel-calyx-merge-groups")
    out = _run(circt_ctx, "circt", merged, "pycde-accel-calyx-fold-mult")
    # the one-cycle multiply starts in the done cycle of the reads before it: one state less
    assert _enables(out) == ["ra", "w", "latch"]
    ra = out[out.index("calyx.group @ra"):out.index("calyx.group @w")]
    assert "calyx.assign %m.go = %merge_and_0.out ? %true : i1" in ra
    assert "calyx.assign %m.left = %arg_mem_0_read_data : i8" in ra
    assert "calyx.assign %m.right = %arg_mem_1_read_data : i8" in ra
    assert "calyx.group_done %merge_and_0.out : i1" in ra  # the reads' done is the group's
    assert "calyx.group @mul" not in out and "mul_first" not in out and "comb.xor" not in out
    w = out[out.index("calyx.group @w"):out.index("calyx.group @latch")]
    assert "calyx.assign %mx.right = %m.out : i8" in w
    # without the merge it folds into the read of memory 1, whose done ends that group
    # (memory 0's read_data was read a group earlier and is held)
    single = _run(circt_ctx, "circt", static, "pycde-accel-calyx-fold-mult")
    assert _enables(single) == ["ra", "rb", "w", "latch"]
    assert "calyx.assign %m.go = %arg_mem_1_done ? %true : i1" in single
    # an operand from a register the previous group writes (it changes on that very edge): kept
    reg = static.replace(
        "    %i.in, %i.write_en,",
        "    %q.in, %q.write_en, %q.clk, %q.reset, %q.out, %q.done = calyx.register @q : i8, i1, i1, i1, i8, i1\n"
        "    %i.in, %i.write_en,", 1).replace(
        "        calyx.group_done %arg_mem_1_done : i1\n",
        "        calyx.assign %q.in = %arg_mem_1_read_data : i8\n"
        "        calyx.assign %q.write_en = %true : i1\n"
        "        calyx.group_done %arg_mem_1_done : i1\n").replace(
        "calyx.assign %m.right = %arg_mem_1_read_data : i8", "calyx.assign %m.right = %q.out : i8")
    assert _enables(_run(circt_ctx, "circt", reg, "pycde-accel-calyx-fold-mult")) == \
        ["ra", "rb", "mul", "w", "latch"]
    # the previous group reads memory 1 but ends on memory 0's done: its read_data is not
    # known valid in that cycle, kept
    late = static.replace("calyx.group_done %arg_mem_1_done : i1",
                          "calyx.group_done %arg_mem_0_done : i1")
    assert "calyx.group @mul" in _run(circt_ctx, "circt", late, "pycde-accel-calyx-fold-mult")
    # the multiply enabled twice: kept
    twice = merged.replace("            calyx.enable @mul\n",
                           "            calyx.enable @mul\n            calyx.enable @mul\n")
    assert "calyx.group @mul" in _run(circt_ctx, "circt", twice, "pycde-accel-calyx-fold-mult")


def test_calyx_hoist_comb(circt_ctx):
    out = _run(circt_ctx, "circt", _CALYX_BODY, "pycde-accel-calyx-hoist-comb")
    wires = out[out.index("calyx.wires"):out.index("calyx.group @ra")]
    w = out[out.index("calyx.group @w"):out.index("calyx.group @latch")]
    # the adder only @w drives and reads: its inputs are continuous, unguarded
    assert "calyx.assign %mx.left = %arg_mem_0_read_data : i8" in wires
    assert "calyx.assign %mx.right = %arg_mem_1_read_data : i8" in wires
    assert "%mx.left" not in w and "calyx.assign %arg_mem_2_write_data = %mx.out : i8" in w
    # so are the address slices and the latch's increment; memory ports and registers stay
    assert "calyx.assign %sa.in = %i.out : i32" in wires
    assert "calyx.assign %std_add_0.left = %i.out : i32" in wires
    assert "%arg_mem_2_write_en" in w and "%i.write_en" not in wires
    assert _enables(out) == _enables(_CALYX_BODY)
    # a cell that another group reads too (its value outside @w would change): kept in @w
    shared = _CALYX_BODY.replace(
        "        calyx.group_done %i.done : i1\n",
        "        calyx.assign %arg_mem_2_write_data = %mx.out : i8\n"
        "        calyx.group_done %i.done : i1\n")
    kept = _run(circt_ctx, "circt", shared, "pycde-accel-calyx-hoist-comb")
    w = kept[kept.index("calyx.group @w"):kept.index("calyx.group @latch")]
    assert "calyx.assign %mx.left = %arg_mem_0_read_data : i8" in w
    # a guarded input: kept
    guarded = _CALYX_BODY.replace("calyx.assign %mx.right = %arg_mem_1_read_data : i8",
                                  "calyx.assign %mx.right = %arg_mem_0_done ? %arg_mem_1_read_data : i8")
    kept = _run(circt_ctx, "circt", guarded, "pycde-accel-calyx-hoist-comb")
    w = kept[kept.index("calyx.group @w"):kept.index("calyx.group @latch")]
    assert "%mx.left" in w and "%mx.right" in w


def _states(text):
    return re.findall(r"fsm.state @(\w+)", text)


def test_fsm_skip_empty_states(circt_ctx):
    ir, pm, _ = bridge.bindings("circt")
    m = ir.Module.parse(_CALYX_BODY, circt_ctx)
    pm.PassManager.parse("builtin.module(calyx.component(lower-calyx-to-fsm))",
                         circt_ctx).run(m.operation)
    before = str(m)
    assert "seq_0_while_entry" in _states(before)
    entry_next = re.search(r"fsm.state @seq_0_while_entry output \{\n.*\n.*\} transitions \{\n"
                           r"\s*fsm.transition @(\w+)", before).group(1)
    REGISTRY["pycde-accel-fsm-skip-empty-states"].run(m, "pycde-accel-fsm-skip-empty-states")
    m.operation.verify()
    out = str(m)
    assert "seq_0_while_entry" not in out
    assert set(_states(before)) - set(_states(out)) == {"seq_0_while_entry"}
    header = out[out.index("fsm.state @seq_0_while_header"):]
    header = header[:header.index("fsm.state", 10)]
    assert f"fsm.transition @{entry_next} guard" in header  # straight into the body
    assert "fsm_entry" in _states(out)  # the initial state stays (go is added to it later)
    pm.PassManager.parse("builtin.module(calyx.component(materialize-calyx-to-fsm))",
                         circt_ctx).run(m.operation)  # what follows still accepts it


def test_narrow_mul_to_adds():
    ctx = bridge.context("torch")
    src = """
      func.func @f(%a: i8, %b: i4, %c: i32) -> (i32, i32) {
        %x = arith.extsi %a : i8 to i32
        %y = arith.extsi %b : i4 to i32
        %p = arith.muli %x, %y : i32
        %q = arith.muli %x, %c : i32
        return %p, %q : i32, i32
      }"""
    out = _run(ctx, "torch", src, "pycde-accel-narrow-mul-to-adds")
    assert out.count("arith.muli") == 1 and "arith.muli %0, %arg2" in out  # %c is 32 bits: kept
    assert out.count("arith.select") == 4  # one per bit of the narrower operand (i4)
    assert out.count("arith.subi") == 1 and out.count("arith.addi") == 2  # its sign bit subtracts
    assert "arith.shli" in out
    # a wider limit is an option; below it nothing changes
    assert _run(ctx, "torch", src, "pycde-accel-narrow-mul-to-adds", "{max-bits=3}").count(
        "arith.muli") == 2


def _chain_src(thresholds, pred="sge", extra_use=None):
    """func @f(%x, %v0..%vm) = the priority chain x pred T_m ? v_m : (... x pred T_1 ? v_1 : v0)."""
    m = len(thresholds)
    args = ", ".join(["%x: i8"] + [f"%v{j}: i8" for j in range(m + 1)])
    lines, prev = [], "%v0"
    for j, t in enumerate(thresholds, 1):
        lines += [f"%t{j} = arith.constant {t} : i8", f"%c{j} = arith.cmpi {pred}, %x, %t{j} : i8",
                  f"%s{j} = arith.select %c{j}, %v{j}, {prev} : i8"]
        prev = f"%s{j}"
    rets, tys = [prev], ["i8"]
    if extra_use:
        rets.append(f"%s{extra_use}")
        tys.append("i8")
    body = "\n        ".join(lines)
    return (f"func.func @f({args}) -> ({', '.join(tys)}) {{\n        {body}\n"
            f"        return {', '.join(rets)} : {', '.join(tys)}\n      }}")


def _eval(text, x, vals):
    """The printed function's results for x and v0..vm (arith.constant/cmpi/select only), and
    the deepest select chain of each result."""
    env = {"%arg0": (x, 0), "%x": (x, 0)}  # printed names, or the source's
    env.update({f"%arg{j + 1}": (v, 0) for j, v in enumerate(vals)})
    env.update({f"%v{j}": (v, 0) for j, v in enumerate(vals)})
    for line in text.splitlines():
        line = line.strip()
        if m := re.match(r"(%\S+) = arith.constant (-?\d+) : i8", line):
            env[m[1]] = (int(m[2]), 0)
        elif m := re.match(r"(%\S+) = arith.cmpi (\w+), (%\S+), (%\S+) : i8", line):
            a, b = env[m[3]][0], env[m[4]][0]
            env[m[1]] = ({"sge": a >= b, "sgt": a > b}[m[2]], 0)
        elif m := re.match(r"(%\S+) = arith.select (%\S+), (%\S+), (%\S+) : i8", line):
            c, t, f = env[m[2]], env[m[3]], env[m[4]]
            env[m[1]] = ((t if c[0] else f)[0], 1 + max(t[1], f[1]))
        elif line.startswith("return"):
            return [env[r.strip()] for r in line[6:].split(":")[0].split(",")]
    raise AssertionError(text)


def test_balance_select_chain():
    import random
    ctx = bridge.context("torch")
    name = "pycde-accel-balance-select-chain"
    rnd = random.Random(3)
    for m in (4, 5, 17, 255):
        ts = sorted(rnd.sample(range(-127, 128), m))
        src = _chain_src(ts)
        out = _run(ctx, "torch", src, name)
        assert out.count("arith.select") == m and out.count("arith.cmpi") == m
        vals = [rnd.randrange(-128, 128) for _ in range(m + 1)]
        for x in list(range(-128, 128)):
            (got, depth), = _eval(out, x, vals)
            (want, _), = _eval(src, x, vals)
            assert got == want, (m, x)
        assert max(_eval(out, x, vals)[0][1] for x in range(-128, 128)) <= (m).bit_length()
        assert _eval(src, 0, vals)[0][1] == m  # the chain was m deep
    lut = _run(ctx, "torch", _chain_src(list(range(-127, 128))), name)
    assert max(_eval(lut, x, list(range(256)))[0][1] for x in range(-128, 128)) == 8
    # sgt too; a link used elsewhere ends the chain below it (both results still right)
    ts = [-100, -50, 0, 10, 20, 30, 40, 50]
    for src in (_chain_src(ts, "sgt"), _chain_src(ts, extra_use=4)):
        out = _run(ctx, "torch", src, name)
        vals = list(range(9))
        for x in range(-128, 128):
            assert [v for v, _ in _eval(out, x, vals)] == [v for v, _ in _eval(src, x, vals)]
        assert _eval(out, 127, vals)[0][1] < len(ts)
    # thresholds not increasing outward, or too short a chain: left as written; a run that
    # increases outward above a break is balanced on its own (the link below is its base)
    for ts, depth in (([20, 5, 12, 3, 9], 5), ([1, 2, 3], 3), ([5, 3, 9, 12, 20], 3)):
        src = _chain_src(ts)
        out = _run(ctx, "torch", src, name)
        vals = list(range(len(ts) + 1))
        for x in range(-128, 128):
            assert _eval(out, x, vals)[0][0] == _eval(src, x, vals)[0][0]
        assert max(_eval(out, x, vals)[0][1] for x in range(-128, 128)) == depth
