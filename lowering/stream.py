"""A lowered kernel as a streaming PyCDE module: element streams in, element stream out.

``stream_module(system, kernel, lowered)`` imports the kernel's hw stage into ``system``
(``System.import_mlir``) and returns a PyCDE module class ``<name>_stream`` that rtl_lib can
instantiate next to the systolic core. Ports (all valid/ready, a beat moves when both are high):

* ``clk``, ``rst``;
* per tensor input ``X``: ``X`` (its element width), ``X_valid`` in, ``X_ready`` out - the
  elements in order; the kernel's load addresses are in order 0..n-1, so the stream answers
  them (the address channel is always taken, the data channel is the stream);
* per scalar input ``S`` (requantize's ``m0``/``shift``, residual_add's ``ma``/``mb``/``s``):
  ``S``, ``S_valid`` in, ``S_ready`` out - one beat per run;
* ``start_valid`` in / ``start_ready`` out: one beat starts a run of ``n`` elements;
* ``y`` (8 bits), ``y_valid`` out, ``y_ready`` in: the results in order;
* ``done`` out: high for the cycle the ``n``-th result moves. This counter is what replaces the
  memory completion the optimized route dropped (pycde-accel-drop-mem-completion-join): the
  kernel's store-done tokens are answered here, one per store taken.

The same contract is kept for a kernel lowered by the **static** route (``lowered.route`` in
:data:`STATIC_ROUTES`: a ``pipeline.scheduled`` with fixed latency L, element ports ``in<K>`` +
``in_valid``/``in_ready``, ``out0``/``out0_valid``/``out0_ready``), so that an engine does not
care which route its kernel took. The wrapper then:

* takes a run's start token together with its scalar beats (all of them valid) into a
  slice (``start_q``, ``regs.held_slice``: the ``start_ready``/scalar readies are its flop)
  that also holds the taken run's scalars as the pipeline's ``in<K>`` for its ``n`` elements;
  the next run's start may be taken from the slice on the edge where the current run's last
  element goes in (the pipeline captures scalars with each element), so runs follow each
  other with no bubble;
* joins the tensor inputs: an element goes in when every ``X_valid`` is high, the run is open
  and a credit is free (``X_ready`` of each is that join: ``in_open``, a flop equal to "run
  open and a credit free", AND the other inputs' valids; the wrapper's own take reads the
  run and credit flops, so no LUT is shared between the engine's take and the kernel's);
* never stalls the pipeline (``out0_ready`` is 1: no stage register and no multiplier has an
  enable, so no stall net fans out across the pipeline): the results go into an output FIFO
  (LUT RAM, :func:`out_fifo_depth` entries: the latency plus the credit's round trip) and an
  element goes in only with a credit, a free FIFO slot not yet claimed (``out_has_credit``, a
  register); ``y`` is the FIFO's head, from a register of its own (``Queue(head=True)``);
  full rate is kept (1 element/cycle).

A result therefore leaves L + 1 cycles after its element went in at the earliest.
The static wrapper's class has ``lockstep_join = True``: its inputs are taken in one cycle and
no control depends on the data, so instances given the same control inputs run in step.

And for a kernel lowered by the **calyx** route (``lowered.route`` in :data:`CALYX_ROUTES`: a
component with ``go``/``done``, scalars as ``in<K>`` inputs, and each memory ``arg_mem_<M>`` as
seq_mem ports, pycde-accel-calyx-mem-ports; tensor inputs are memories 0.., the output the
last), :func:`calyx_stream_module` keeps the same contract:

* the start beat is taken with all scalar beats when no run is open; the scalars are latched
  and drive ``in<K>``; ``go`` is held until the kernel's ``done``;
* a read of input memory M (``content_en`` high, ``write_en`` low) is answered by a beat of its
  stream: ``M_done`` is high in the cycle the beat moves, and ``M_read_data`` is that beat in
  that cycle and then holds it (a register) until the next read (seq_mem timing: the data is
  valid with ``done``; pycde-accel-calyx-fold-mult starts a multiply in that cycle). Reads that are requested in the same
  cycle are answered together or not at all (so a group that reads several memories at once
  takes its beats in one cycle). The addresses are 0..n-1 in order, so they are not looked at;
* a write of the output memory is the ``y`` beat: ``y_valid`` is the write request,
  ``M_done = y_ready``;
* after ``done`` the kernel is held in reset for one cycle: the FSM lower-calyx-to-fsm builds
  stays in its exit state (it has no transition back to the entry), so every run starts from
  reset.
"""

from __future__ import annotations

from pycde import Clock, Input, Module, Output, Reset, generator
from pycde.constructs import Mux, Wire
from pycde.signals import BitsSignal
from pycde.types import Bits

from ..queue import Queue
from ..regs import held_slice, thermometer_step


def _w(ty: str) -> int:
    return int(ty[1:])


#: Route names whose kernels have the calyx port contract (:func:`calyx_stream_module`).
CALYX_ROUTES = ("calyx", "static-calyx")


#: the routes whose kernel is a fixed-latency pipeline (``pycde-accel-scf-to-pipeline``); on
#: ``static-ecp5`` its multiplies are registered MULT18X18D blocks, the same ports and latency
STATIC_ROUTES = ("static", "static-ecp5", "static-stream", "static-ecp5-stream")


def stream_module(system, kernel, lowered):
    if getattr(lowered, "route", None) in STATIC_ROUTES:
        return static_stream_module(system, kernel, lowered)
    if getattr(lowered, "route", None) in CALYX_ROUTES:
        return calyx_stream_module(system, kernel, lowered)
    core = system.import_mlir(file=lowered.hw)[kernel.name]
    ports = kernel.ports()
    n = kernel.n
    cw = max(1, (n - 1).bit_length())
    attrs = _ports(kernel)

    def build(p):
        one = Bits(1)(1)
        st, start = ports["store"], ports["start"]
        pending_q = Wire(Bits(cw + 1), "done_pending")
        done_valid = pending_q != Bits(cw + 1)(0)
        args = {"clock": p.clk, "reset": p.rst, f"{start}": Bits(0)(0),
                f"{start}_valid": p.start_valid, f"{st}.done": Bits(0)(0),
                f"{st}.done_valid": done_valid, f"{st}_ready": p.y_ready,
                f"{ports['done']}_ready": one}
        for nm, pre in ports["loads"].items():
            args[f"{pre}.data"] = getattr(p, nm)
            args[f"{pre}.data_valid"] = getattr(p, f"{nm}_valid")
            args[f"{pre}.addr_ready"] = one
        for nm, port in ports["scalars"].items():
            args[port] = getattr(p, nm)
            args[f"{port}_valid"] = getattr(p, f"{nm}_valid")
        inst = core(**args)
        out = {o: getattr(inst, o) for o in (f"{st}.data", f"{st}_valid", f"{st}.done_ready",
                                             f"{start}_ready")}
        for nm, pre in ports["loads"].items():
            setattr(p, f"{nm}_ready", getattr(inst, f"{pre}.data_ready"))
        for nm, port in ports["scalars"].items():
            setattr(p, f"{nm}_ready", getattr(inst, f"{port}_ready"))
        p.start_ready = out[f"{start}_ready"]
        p.y = out[f"{st}.data"]
        p.y_valid = out[f"{st}_valid"]
        fire = out[f"{st}_valid"] & p.y_ready
        ack = done_valid & out[f"{st}.done_ready"]
        # store-done tokens owed to the kernel: +1 per result taken, -1 per token answered
        plus = Mux(fire, pending_q, (pending_q.as_uint() + 1).as_bits(cw + 1))
        nxt = Mux(ack, plus, (plus.as_uint() - 1).as_bits(cw + 1))
        pending_q.assign(nxt.reg(p.clk, p.rst, rst_value=0, name="done_pending_r"))
        # results counted per run: done on the n-th
        cnt_d = Wire(Bits(cw), "beat_count_next")
        cnt = cnt_d.reg(p.clk, p.rst, rst_value=0, name="beat_count")
        last = cnt == Bits(cw)(n - 1)
        inc = Mux(last, (cnt.as_uint() + 1).as_bits(cw), Bits(cw)(0))
        cnt_d.assign(Mux(fire, cnt, inc))
        p.done = fire & last

    attrs["build"] = generator(build)
    return type(f"{kernel.name}_stream", (Module,), attrs)


def _ports(kernel) -> dict:
    attrs: dict = {"module_name": f"{kernel.name}_stream", "clk": Clock(), "rst": Reset()}
    for nm, ty in list(kernel.inputs) + list(kernel.scalars):
        attrs[nm] = Input(Bits(_w(ty)))
        attrs[f"{nm}_valid"] = Input(Bits(1))
        attrs[f"{nm}_ready"] = Output(Bits(1))
    attrs["start_valid"] = Input(Bits(1))
    attrs["start_ready"] = Output(Bits(1))
    attrs["y"] = Output(Bits(_w(kernel.out_ty)))
    attrs["y_valid"] = Output(Bits(1))
    attrs["y_ready"] = Input(Bits(1))
    attrs["done"] = Output(Bits(1))
    return attrs


def out_fifo_depth(kernel) -> int:
    """Results the static wrapper's output FIFO holds: the pipeline's latency (as the static
    route schedules ``kernel``, with or without its wide multiplies split) plus the credit's
    round trip (the push, the pop and the credit's register), so a consumer that takes one
    result per cycle never runs the credits out."""
    from .schedule import kernel_latency
    from .split_mul import split_wide_muls

    return max(kernel_latency(kernel), kernel_latency(split_wide_muls(kernel))) + 4


def static_stream_module(system, kernel, lowered):
    """``<name>_stream`` around a static-route kernel (see the module docstring)."""
    core = system.import_mlir(file=lowered.hw)[kernel.name]
    tensors, scalars = kernel.arg_ports()
    n = kernel.n
    cw = max(1, n.bit_length())
    yw = _w(kernel.out_ty)
    attrs = _ports(kernel)

    def build(p):
        clk, rst = p.clk, p.rst
        one, zero = Bits(1)(1), Bits(1)(0)
        # -- run control: start + scalars taken together, element count per run
        active = Wire(Bits(1), "run_active")
        in_cnt = Wire(Bits(cw), "in_count")
        k_in_ready = Wire(Bits(1), "k_in_ready")
        all_x = one
        for nm, _ in kernel.inputs:
            all_x = all_x & getattr(p, f"{nm}_valid")
        # "the count is at the run's last element" is a register of its own (the compare
        # ahead of it, on the count's next value), not a compare after in_fire: in_last
        # gates start_ready, which the engine's start bookkeeping waits on
        at_last = Wire(Bits(1), "in_count_at_last")
        in_fire = active & all_x & k_in_ready
        in_last = in_fire & at_last
        all_s = one
        for nm, _ in kernel.scalars:
            all_s = all_s & getattr(p, f"{nm}_valid")
        # a run's start and its scalars enter together through a slice (``start_q``): the
        # readies the engine sees are its flop, so the run control (in_last, the credits,
        # the input join) does not reach the engine's token logic in the same cycle; the
        # next run's start waits in the slice, so runs still follow each other with no
        # bubble. The slice also holds the taken run's scalars (``held_slice``): the late
        # take (the engine's valids -> the join -> in_last) moves pointers only, never
        # the scalar registers' enables (b_in_v -> in_last -> start_q_d's CE, two routes
        # across the die, was the placed 8x8's critical path on seed 3 at 1d7174d)
        # (== ~active | in_last: an element is taken only in a run) with in_fire as the
        # last select, here and in the run flag and in_open below: the engine's valids ->
        # the join -> in_last -> the start slice's take -> in_open_r ran five LUTs, and the
        # MAX lanes' were the placed 8x8's worst paths on two seeds at 2cef53c and 74c8211
        # (9.4-10.3 ns, three clusters 3.5 ns of route apart; fpga.sta)
        can_take = Mux(in_fire, ~active, at_last)
        s_fields = [getattr(p, nm) for nm, _ in kernel.scalars] or [zero]
        t_v, t_in_ready, t_d = held_slice(clk, rst, p.start_valid & all_s,
                                          BitsSignal.concat(s_fields), can_take, "start_q")
        p.start_ready = t_in_ready & all_s
        for nm, _ in kernel.scalars:
            others = p.start_valid
            for o, _ in kernel.scalars:
                if o != nm:
                    others = others & getattr(p, f"{o}_valid")
            setattr(p, f"{nm}_ready", t_in_ready & others)
        s_lo, s_val = t_d.type.width, {}
        for nm, _ in kernel.scalars:
            w = getattr(p, nm).type.width
            s_val[nm] = t_d[s_lo - w:s_lo]
            s_lo -= w
        # == Mux(take, active & ~in_last, one): without an element the run goes on or a
        # waiting start opens one; with one (active) it ends at the last unless a start waits
        act_next = Mux(in_fire, active | t_v, ~at_last | t_v)
        active.assign(act_next.reg(clk, rst, rst_value=0, name="run_active_r"))
        cnt_next = Mux(in_fire, in_cnt, Mux(in_last, (in_cnt.as_uint() + 1).as_bits(cw),
                                            Bits(cw)(0)))
        in_cnt.assign(cnt_next.reg(clk, rst, rst_value=0, name="in_count_r"))
        # at_last' = (cnt_next == n - 1), each case from flops: no element, it holds; the
        # run's last, the count restarts (at its last only if n == 1); another, the count
        # was at n - 2. in_fire (the engine's valids -> the join) only selects: it ran
        # through the count's adder and its compare (vector.max_in_v -> in_count_at_last,
        # 7 levels, was the longest path of pycde_accel.fpga.paths at 3e65e81)
        before_last = (in_cnt == Bits(cw)(n - 2)) if n >= 2 else zero
        at_next = Mux(in_fire, at_last, Mux(at_last, before_last, Bits(1)(int(n == 1))))
        at_last.assign(at_next.reg(clk, rst, rst_value=int(n == 1), name="in_count_at_last_r"))
        # the readies the engine sees start at a flop of their own, ``in_open``: run_active
        # AND a credit free, registered from their next values (below). The element take
        # inside (in_fire: the engine's valids AND run_active AND the credit) and the
        # engine's take (its valid AND this ready) are then functions of different flops, so
        # synthesis cannot share one LUT between them: a shared LUT sits by the engine's
        # slice and the kernel's credits waited on it across the die (the store's
        # requantize k_in_ready -> s3_1_v's LUT -> out_credits, seed 2 at 614cbf2; the
        # vector ADD kernel's the same way, 9.62 ns with 8.15 of routing, seed 1 at 1af1302)
        in_open = Wire(Bits(1), "in_open")
        for nm, _ in kernel.inputs:
            others = in_open
            for o, _ in kernel.inputs:
                if o != nm:
                    others = others & getattr(p, f"{o}_valid")
            setattr(p, f"{nm}_ready", others)
        # -- output FIFO with credits: the pipeline never stalls (out0_ready is 1, so no
        # stage register, and no DSP's CE, has an enable: the stall net that fanned out to
        # every stage of the pipeline and to its multipliers, wherever they are placed, is
        # gone). An element goes in only with a credit (a free FIFO slot not yet claimed):
        # -1 per element taken, +1 per result that leaves; the FIFO holds the latency's
        # results plus the round trip, so the credits never run out at full rate
        has_credit = Wire(Bits(1), "out_has_credit")
        args = {"clock": clk, "reset": rst, "in_valid": active & all_x & has_credit,
                "out0_ready": one}
        for nm, port in tensors.items():
            args[port] = getattr(p, nm)
        for nm, port in scalars.items():
            w = _w(dict(kernel.scalars)[nm])
            args[port] = s_val[nm]                # the run's scalars: held by start_q
            assert args[port].type.width == w
        inst = core(**args)
        depth = out_fifo_depth(kernel)
        k_in_ready.assign(has_credit & inst.in_ready)
        # y leaves from the queue's head register, not its LUT-RAM read (same cycles): the
        # ADD kernel's out_fifo read -> the engine's byte select and ReLU -> out_lane was a
        # placed 8x8 path of five LUTs on seed 1 at 3ea0699 (7.18 ns; fpga.sta)
        out = Queue(Bits(yw), depth, clk, rst, "out_fifo", head=True)
        out.push(inst.out0, inst.out0_valid)
        has = ~out.empty
        pop = has & p.y_ready
        p.y = out.pop(pop)
        p.y_valid = has
        # the credits in thermometer code (bit i: more than i credits), so that "a credit
        # left after this edge" is a shift of neighbouring flops, not a subtract, an add
        # and a zero compare behind the input join (the join, from the engine's valids,
        # then ran 8 levels into out_has_credit); has_credit is bit 0, a flop
        therm = Wire(Bits(depth), "out_credits")
        t_bits = [therm[i] for i in range(depth)]
        down = in_fire & ~pop                    # one credit claimed, none returned
        up = pop & ~in_fire                      # one returned, none claimed
        t_next = thermometer_step(t_bits, up, down)
        therm.assign(BitsSignal.concat(list(reversed(t_next))).reg(
            clk, rst, rst_value=(1 << depth) - 1, name="out_credits_r"))
        has_credit.assign(t_bits[0])
        # == act_next & t_next[0], in_fire selecting last: without an element the credit
        # count only rises (on a pop); with one it falls unless a result leaves
        open_none = (active | t_v) & (t_bits[0] | pop)
        open_fire = (~at_last | t_v) & Mux(pop, t_bits[1] if depth > 1 else zero, t_bits[0])
        open_q = Mux(in_fire, open_none, open_fire).reg(clk, rst, rst_value=0,
                                                          name="in_open_r")
        in_open.assign(open_q & inst.in_ready)   # == active & k_in_ready, every cycle
        # -- done: the n-th result of a run leaves
        oc = Wire(Bits(cw), "out_count")
        o_last = oc == Bits(cw)(n - 1)
        oc_next = Mux(pop, oc, Mux(o_last, (oc.as_uint() + 1).as_bits(cw), Bits(cw)(0)))
        oc.assign(oc_next.reg(clk, rst, rst_value=0, name="out_count_r"))
        p.done = pop & o_last
        _ = zero

    attrs["build"] = generator(build)
    # the tensor inputs are taken in one cycle (the join above) and no control depends on
    # the data: instances fed the same control inputs run in step (engines may rely on it)
    attrs["lockstep_join"] = True
    return type(f"{kernel.name}_stream", (Module,), attrs)


def calyx_stream_module(system, kernel, lowered):
    """``<name>_stream`` around a calyx-route kernel (see the module docstring)."""
    core = system.import_mlir(file=lowered.hw)[kernel.name]
    tensors, scalars = kernel.arg_ports()
    n = kernel.n
    cw = max(1, n.bit_length())
    attrs = _ports(kernel)
    have = {p.name for p in core._builder.inputs} | {p.name for p in core._builder.outputs}
    mems = {nm: f"arg_mem_{i}" for i, (nm, _) in enumerate(kernel.inputs)}
    out_mem = f"arg_mem_{len(kernel.inputs)}"

    def build(p):
        clk, rst = p.clk, p.rst
        one, zero = Bits(1)(1), Bits(1)(0)
        # -- run control: idle -> running (go) -> one cycle of kernel reset -> idle
        running = Wire(Bits(1), "run_active")
        k_done = Wire(Bits(1), "kernel_done")
        all_s = one
        for nm, _ in kernel.scalars:
            all_s = all_s & getattr(p, f"{nm}_valid")
        take = ~running & p.start_valid & all_s
        p.start_ready = ~running & all_s
        for nm, _ in kernel.scalars:
            others = ~running & p.start_valid
            for o, _ in kernel.scalars:
                if o != nm:
                    others = others & getattr(p, f"{o}_valid")
            setattr(p, f"{nm}_ready", others)
        finish = running & k_done
        running.assign(Mux(take, Mux(finish, running, zero), one).reg(
            clk, rst, rst_value=0, name="run_active_r"))
        k_reset = rst | finish.reg(clk, rst, rst_value=0, name="kernel_reset_r")
        args = {"clk": clk.to_bit(), "reset": k_reset, "go": running & ~k_done}
        for nm, port in scalars.items():
            args[port] = getattr(p, nm).reg(clk, ce=take, name=f"scalar_{nm}")
        # -- reads: every requesting input memory is answered in the same cycle, or none is
        req = {}
        for nm, mem in mems.items():
            if f"{mem}_content_en" not in have:
                continue
            we = Wire(Bits(1), f"{mem}_we")
            en = Wire(Bits(1), f"{mem}_en")
            req[nm] = (en, we)
        ok = one
        for nm, (en, we) in req.items():
            ok = ok & (~(en & ~we) | getattr(p, f"{nm}_valid"))
        any_req = zero
        for en, we in req.values():
            any_req = any_req | (en & ~we)
        fire_r = ok & any_req
        for nm, mem in mems.items():
            if nm not in req:
                setattr(p, f"{nm}_ready", zero)
                continue
            en, we = req[nm]
            rd = en & ~we & fire_r
            setattr(p, f"{nm}_ready", rd)
            if f"{mem}_done" in have:
                args[f"{mem}_done"] = rd
            if f"{mem}_read_data" in have:
                # seq_mem timing: valid in the cycle ``done`` is high (the beat itself), then
                # held in a register until the next read
                beat = getattr(p, nm)
                args[f"{mem}_read_data"] = Mux(rd, beat.reg(clk, ce=rd, name=f"{mem}_rdata"), beat)
        # -- the write of the output memory is the y beat
        y_req = Wire(Bits(1), "y_request")
        args[f"{out_mem}_done"] = y_req & p.y_ready
        inst = core(**args)
        for nm, mem in mems.items():
            if nm in req:
                en, we = req[nm]
                en.assign(getattr(inst, f"{mem}_content_en"))
                we.assign(getattr(inst, f"{mem}_write_en") if f"{mem}_write_en" in have
                          else zero)
        k_done.assign(inst.done)
        y_req.assign(getattr(inst, f"{out_mem}_content_en") & getattr(inst, f"{out_mem}_write_en"))
        p.y = getattr(inst, f"{out_mem}_write_data")
        p.y_valid = y_req
        fire = y_req & p.y_ready
        oc = Wire(Bits(cw), "out_count")
        o_last = oc == Bits(cw)(n - 1)
        oc_next = Mux(fire, oc, Mux(o_last, (oc.as_uint() + 1).as_bits(cw), Bits(cw)(0)))
        oc.assign(oc_next.reg(clk, rst, rst_value=0, name="out_count_r"))
        p.done = fire & o_last

    attrs["build"] = generator(build)
    return type(f"{kernel.name}_stream", (Module,), attrs)


def emit_stream(kernel, lowered, sv_dir):
    """Generate ``<name>_stream`` (with the imported kernel) into ``sv_dir`` with a filelist.f
    (paths relative to it); returns the filelist path. SV as rtl_lib.emit writes it."""
    import shutil
    import tempfile
    from pathlib import Path

    from pycde import System
    from pycde.circt import ir

    from ..heap import frozen_heap
    from .passes.lowering_options import OPTIONS

    sv_dir = Path(sv_dir)
    sv_dir.mkdir(parents=True, exist_ok=True)
    with frozen_heap(), tempfile.TemporaryDirectory(prefix="pycde_accel_stream_") as tmp:
        system = System([], name=f"{kernel.name}_stream", output_directory=tmp)
        top = stream_module(system, kernel, lowered)
        system.top_modules.append(top)
        with system:
            top._builder.circt_mod  # noqa: B018 - registers the top with the system
        with system.mod.context:
            system.mod.operation.attributes["circt.loweringOptions"] = ir.StringAttr.get(OPTIONS)
        system.compile()
        hw = Path(tmp) / "hw"
        names = sorted(f.name for f in hw.iterdir() if f.suffix == ".sv")
        top_file = f"{kernel.name}_stream.sv"
        names = [n for n in names if n != top_file] + [top_file]
        for n in names:
            shutil.copyfile(hw / n, sv_dir / n)
    filelist = sv_dir / "filelist.f"
    filelist.write_text("".join(f"{n}\n" for n in names))
    return filelist
