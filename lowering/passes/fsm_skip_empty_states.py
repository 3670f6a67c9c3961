"""pycde-accel-fsm-skip-empty-states: the control FSM does not spend cycles in states that do nothing.

lower-calyx-to-fsm builds one FSM state per enabled group plus bookkeeping states; a
``calyx.while`` gets a header (its guarded transitions test the condition) and an *entry* state
that enables no group and moves on unconditionally. Each state costs a cycle, so the entry state
is one cycle of every loop iteration spent doing nothing. This pass runs after
lower-calyx-to-fsm (before materialize-calyx-to-fsm adds the group-done guards) and removes
every state, other than the initial one, whose output region enables no group and whose
transitions region holds one unguarded transition: the transitions into it go straight to its
successor. Calyx's go/done handshakes do not depend on how many cycles pass between two groups,
so only the cycle count changes. A chain of such states is followed to its end; a cycle of them
(no way out) is left alone.

Works on the IR through the Python bindings (the fsm and calyx ops are walked and edited with the
generic Operation API: ``nextState`` attributes rewritten, the skipped states erased).

Before:  fsm.state @header ... transitions { fsm.transition @entry guard { fsm.return %c } ... }
         fsm.state @entry output { fsm.output } transitions { fsm.transition @body_0 }
         fsm.state @body_0 output { calyx.enable @g  fsm.output } transitions { ... }
After:   fsm.state @header ... transitions { fsm.transition @body_0 guard { fsm.return %c } ... }
         fsm.state @body_0 output { calyx.enable @g  fsm.output } transitions { ... }
"""

from __future__ import annotations

from ._util import ir_of, walk_ops

NAME = "pycde-accel-fsm-skip-empty-states"


def _ops(region):
    return [o.operation for b in region.blocks for o in b.operations]


def _sym(ir, attr) -> str:
    return ir.StringAttr(attr).value


def _successor(ir, state) -> str | None:
    """The single unguarded successor of a state that enables nothing, else None."""
    outputs, transitions = state.regions[0], state.regions[1]
    if any(o.name != "fsm.output" or len(o.operands) for o in _ops(outputs)):
        return None
    trans = _ops(transitions)
    if len(trans) != 1 or trans[0].name != "fsm.transition":
        return None
    t = trans[0]
    if len(t.regions) and len(t.regions[0].blocks) and _ops(t.regions[0]):
        return None  # guarded
    if len(t.regions) > 1 and len(t.regions[1].blocks) and _ops(t.regions[1]):
        return None  # has an action
    return ir.FlatSymbolRefAttr(t.attributes["nextState"]).value


def run(module) -> None:
    ir = ir_of(module)
    with module.context:
        for machine in [o for o in walk_ops(module.operation) if o.name == "fsm.machine"]:
            initial = _sym(ir, machine.attributes["initialState"])
            states = {_sym(ir, s.attributes["sym_name"]): s
                      for s in _ops(machine.regions[0]) if s.name == "fsm.state"}
            skip = {nm: nxt for nm, s in states.items()
                    if nm != initial and (nxt := _successor(ir, s)) is not None}

            def target(nm: str) -> str | None:
                seen = set()
                while nm in skip:
                    if nm in seen:
                        return None  # a loop of empty states: no state to go to
                    seen.add(nm)
                    nm = skip[nm]
                return nm

            if any(target(nm) is None for nm in skip):
                skip = {nm: nxt for nm, nxt in skip.items() if target(nm) is not None}
            if not skip:
                continue
            for s in states.values():
                for t in _ops(s.regions[1]):
                    if t.name != "fsm.transition":
                        continue
                    nxt = ir.FlatSymbolRefAttr(t.attributes["nextState"]).value
                    if nxt in skip:
                        t.attributes["nextState"] = ir.FlatSymbolRefAttr.get(target(nxt))
            for nm in skip:
                states[nm].erase()
