"""The project's own passes, by the name used in a stage's pipeline string.

Each module holds one pass: ``NAME`` and ``run(module, **options)``; its docstring shows the IR
before and after. Options come from the pipeline string as ``name{key=value}``.
"""

from __future__ import annotations

from types import SimpleNamespace

from . import (backedge_buffers, balance_select_chain, calyx_drop_ref_wrapper, calyx_inline_comb_groups, calyx_mem_ports,
               calyx_wire_clk_reset, calyx_merge_groups, calyx_fold_latch, calyx_fold_mult, calyx_hoist_comb,
               calyx_static_mult, ecp5_dsp_mul, free_running_regs,
               fsm_skip_empty_states, narrow_mul_to_adds, drop_reset_initial, fsm_next_state_default, drop_mem_completion_join, drop_returned_buffers,
               invariant_buffers, lowering_options, split_struct_buffers, prefix_modules, scf_to_pipeline,
               sink_constants, store_input_buffers)

_MODULES = (drop_returned_buffers, sink_constants, drop_mem_completion_join, backedge_buffers,
            store_input_buffers, invariant_buffers, split_struct_buffers, prefix_modules,
            lowering_options, scf_to_pipeline, calyx_drop_ref_wrapper, calyx_inline_comb_groups,
            calyx_mem_ports, calyx_wire_clk_reset, fsm_next_state_default, drop_reset_initial,
            calyx_merge_groups, calyx_fold_latch, calyx_static_mult, fsm_skip_empty_states,
            narrow_mul_to_adds, calyx_fold_mult, calyx_hoist_comb, balance_select_chain,
            ecp5_dsp_mul, free_running_regs)


def _parse_options(spec: str) -> dict[str, str]:
    if "{" not in spec:
        return {}
    body = spec[spec.index("{") + 1:spec.rindex("}")]
    out = {}
    for item in body.split():
        k, _, v = item.partition("=")
        out[k] = v
    return out


def _entry(mod):
    return SimpleNamespace(name=mod.NAME, doc=mod.__doc__,
                           run=lambda module, spec="": mod.run(module, **_parse_options(spec)))


#: pass name -> object with ``run(module, spec)``.
REGISTRY = {m.NAME: _entry(m) for m in _MODULES}
