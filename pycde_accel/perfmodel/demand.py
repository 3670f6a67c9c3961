"""What a configuration needs of the board memory against what it gives (:func:`summary`:
the ``memory`` section of design.json and report.json; the throttle itself is :mod:`.memory`).

Per layer: the DRAM bytes its command list moves (reads including the commands themselves,
writes) and the cycles of its busiest compute engine alone (core, store, vector:
:func:`~.bounds.bounds`); demand = bytes / those cycles is what the memory must give per cycle
for the layer to run compute-bound; ``memory_cycles`` the memory alone (the bytes at what is
charged, and one AXI beat per cycle each way). A layer's ``bottleneck`` is what takes longest
alone: ``board_memory`` (the board's bytes per cycle), ``axi_read`` / ``axi_write`` (the bus:
one beat per cycle each way) or its compute engine; the model's is the one that bounds the
most cycles summed over layers, and ``memory_bound_share`` the share of those bound cycles in
layers the memory or the bus limits. ``need_bytes_per_cycle`` / ``need_gb_s``: the largest layer demand,
what the memory must give for every layer with MACs or post-ops to run compute-bound.
"""

from __future__ import annotations

from ..config import AccelConfig
from .bounds import bounds
from .memory import board_memory, bytes_per_cycle, charged_bytes_per_cycle, rate

#: the compute engines of :func:`~.bounds.bounds` (the others are the DMA channels)
COMPUTE = ("core", "store", "vector")


def summary(compiled, config: AccelConfig | None = None) -> dict:
    """What ``compiled``'s layers demand of the memory against what the board gives: the
    ``memory`` section of design.json and report.json (see the module docstring)."""
    config = config or compiled.config
    ab = config.axi_data_width // 8
    mem = board_memory(config)
    bpc = bytes_per_cycle(config)
    gives = float(charged_bytes_per_cycle(config))
    layers, need_max, tot_bytes, tot_compute, t_all, t_mem_bound = [], 0.0, 0, 0, 0.0, 0.0
    by_limit: dict[str, float] = {}
    board_on = config.memory == "board" and bpc is not None
    for i, (entry, cmds) in enumerate(zip(compiled.layers, compiled.commands)):
        b = bounds(cmds, config)
        nbytes = (b["read"] + b["write"]) * ab
        engine = max(COMPUTE, key=lambda k: b[k])
        compute = b[engine]
        demand = nbytes / compute if compute else None
        # what limits the layer: its busiest compute engine, or the memory: the board's bytes
        # per cycle, or the AXI bus (one beat per cycle each way)
        limits = {engine: compute, "axi_read": b["read"], "axi_write": b["write"]}
        if board_on:
            limits["board_memory"] = b["memory"]
        limit = max(limits, key=lambda k: (limits[k], k in COMPUTE))
        t_mem = max(v for k, v in limits.items() if k not in COMPUTE)
        tot_bytes += nbytes
        tot_compute += compute
        if demand is not None:
            need_max = max(need_max, demand)
        bound = limits[limit]
        t_all += bound
        by_limit[limit] = by_limit.get(limit, 0) + bound
        if limit not in COMPUTE:
            t_mem_bound += bound
        layers.append({"index": i, "name": str(entry.get("name", i)), "bytes": nbytes,
                       "compute_cycles": compute, "compute_engine": engine,
                       "memory_cycles": t_mem,
                       "demand_bytes_per_cycle": None if demand is None else round(demand, 4),
                       "bottleneck": limit})
    clock = float(config.clock_mhz)
    share = t_mem_bound / t_all if t_all else 0.0
    return {
        "model": config.memory,
        "board": mem.to_dict() if mem is not None else None,
        "clock_mhz": clock,
        "axi_bytes_per_beat": ab,
        "board_bytes_per_cycle": None if bpc is None else round(float(bpc), 4),
        "charged_bytes_per_cycle": round(gives, 4),
        "throttled": rate(config) is not None,
        "need_bytes_per_cycle": round(need_max, 4),
        "need_gb_s": round(need_max * clock * 1e6 / 1e9, 4),
        "average_need_bytes_per_cycle": round(tot_bytes / tot_compute, 4) if tot_compute else None,
        "memory_bound_layers": sum(1 for l in layers if l["bottleneck"] not in COMPUTE),
        "memory_bound_share": round(share, 4),
        "bottleneck": max(by_limit, key=by_limit.get) if by_limit else None,
        "layers": layers,
    }
