"""Closed-form lower bounds of one layer: each engine alone at its full rate."""

from __future__ import annotations

from ..config import AccelConfig
from ..contract import (CMD_BITS, DST_P, EXEC_CHAIN, OP_EXEC, OP_LOAD, OP_STORE, OP_VEC, VEC_LUT,
                        VEC_LUT_SET, VEC_MAX, VEC_ROWRED, VEC_TO_X)
from .timing import timing


def bounds(commands, config: AccelConfig) -> dict:
    """Cycles of the read DMA, write DMA, core, store engine and vector engine, each alone, and
    of the memory: the bytes of both channels at what the board gives per cycle
    (:func:`~.memory.charged_bytes_per_cycle`)."""
    from .memory import charged_bytes_per_cycle
    ab = config.axi_data_width // 8
    tm = timing(config)
    cmd_beats = CMD_BITS // config.axi_data_width
    rd = cmd_beats * len(commands)
    wr = exec_ = store = vec = run = 0
    for c in commands:
        op = c.OP
        if op == OP_LOAD:
            n = c.beats * c.rows
            rd += n * (config.axi_data_width // 32 if c.dst == DST_P else 1)
        elif op == OP_EXEC:
            run += c.K                        # a CHAIN run is one tile in the core
            if not c.flags & EXEC_CHAIN:
                exec_ += max(run, config.rows)
                run = 0
        elif op == OP_STORE:
            store += config.rows * config.cols // config.lanes   # L lanes
            wr += c.valid_rows * (config.cols // ab)
        elif op == OP_VEC:
            if c.flags & (VEC_LUT | VEC_LUT_SET | VEC_ROWRED):       # one beat per cycle
                vec += c.n + 1
            else:
                vec += c.n * (1 if c.flags & VEC_MAX else ab + tm["add_bubble"]) + tm["vec_startup"]
            if not c.flags & (VEC_TO_X | VEC_LUT_SET):
                wr += c.n
    mem = -(-(rd + wr) * ab // charged_bytes_per_cycle(config))
    return {"read": rd, "write": wr, "core": exec_, "store": store, "vector": vec,
            "memory": int(mem)}
