"""Cycle model of the accelerator: predicted cycles per layer and per model, without Verilator.

``predict(compiled, config) -> ModelPrediction`` (``compiled``: ``backend.compile_program``'s
:class:`~pycde_accel.backend.compile.CompiledProgram`). ``predict_layer(commands, config)``
predicts one layer's command list. ``ModelPrediction.to_dict()`` is ready for ``report.json``.

Why an event model and not a closed formula
-------------------------------------------
Stream-HLS's ``T = T_fill + (N-1) * max(II) + T_drain`` holds for one pipeline of identical
iterations. The accelerator is four decoupled engines fed in program order from one command
stream that itself comes through the same in-order AXI read channel as the operand data, so the
bottleneck moves inside a layer (an im2col conv with hundreds of short A loads is bound by the
command fetch round trip, a Linear layer by its weight bytes, a maxpool by the vector engine's
beat rate, a 1-row Linear by the STORE rate). The model therefore runs the command list through
an abstract, cycle-stepped copy of the engines and queues of ``rtl_lib.accel``
(docs/accelerator-contract.md "Execution model"): the same FIFO depths, dispatch rules and
one-beat-per-cycle channels, with each engine's latency/rate taken from its docstring, and skips
stretches of cycles in which nothing can change. The per-layer report also gives the closed-form
view (:func:`bounds`): the compute bound (core beats), the read/write bandwidth bounds, the store
and vector engine bounds and the command-fetch bound; ``predicted_cycles`` >= the largest of
them, and the difference is the fill/drain/latency overhead (``overlap`` = sum of the bounds /
predicted: how much the engines overlapped).

One module per part of the accelerator, each stating what it models:

* :mod:`.fetch`: command fetch (credits, chunks) and dispatch (slice, engine FIFOs, hazards);
* :mod:`.load`: the read command port (fetch first, then the load engine) and the router;
* :mod:`.dma`: the burst splitter, the read and the write DMA;
* :mod:`.memory`: the board memory's bandwidth at the config's clock (the budget both DMA
  directions draw on, as ``sim/axi_mem.sv`` charges it) and what the layers need of it;
* :mod:`.exec`: the operand scratchpads, EXEC and the core's admission and results;
* :mod:`.store`: the store engine; :mod:`.vec`: the vector engine;
* :mod:`.layer`: the cycle loop over them; :mod:`.bounds`: the closed-form bounds;
  :mod:`.timing`: the fitted latencies; :mod:`.results`: the prediction objects.

The structural parameters (FIFO depths, credits, burst rules) are the contract's
(:mod:`pycde_accel.contract`), so the model follows the RTL. The latencies (:data:`MEMORIES`,
:data:`SCHEDULE_TIMING`) were fitted against Verilator runs of the built-in models and GEMM
layers (``bench/model.py`` reports the error; ``tests/test_perfmodel.py`` and
``tests/sim/test_board_memory.py``, under the board's throttle, bound it at 5%). The DRAM's
bandwidth is the config's (``config.memory``: the target board's at ``clock_mhz``, or
``ideal``; :mod:`.memory`). Not modelled: random AXI back-pressure (``--axi-pause``, the
axiram engine, whose memory is not throttled), which only adds cycles.
"""

from __future__ import annotations

from ..config import AccelConfig
from .bounds import bounds
from .dma import bursts as _bursts
from .layer import LayerSim
from .results import LayerPrediction, ModelPrediction
from .timing import MEMORIES, READ_LATENCY, SCHEDULE_TIMING, WRITE_LATENCY  # noqa: F401

__all__ = ["LayerPrediction", "MEMORIES", "ModelPrediction", "SCHEDULE_TIMING", "bounds",
           "predict", "predict_layer", "predict_run"]


def predict_layer(commands, config: AccelConfig, *, memory: str = "rtl",
                  read_latency: int | None = None, write_latency: int | None = None) -> int:
    """Predicted cycles (as the accelerator's cycle counter counts them) of one layer.
    ``memory``: the memory model (:data:`MEMORIES`: ``rtl`` for the native/cocotb simulation
    engines, ``axiram``), or explicit ``read_latency``/``write_latency`` in cycles."""
    rl, wl = MEMORIES[memory]
    return LayerSim(commands, config,
                    rl if read_latency is None else read_latency,
                    wl if write_latency is None else write_latency).run()


def predict_run(commands, config: AccelConfig, *, memory: str = "rtl") -> tuple[int, list[int]]:
    """One start's command list with FENCEs between layers: (predicted cycles of the run,
    the cycle of each FENCE's dispatch, as the stamp memory records them)."""
    rl, wl = MEMORIES[memory]
    sim = LayerSim(commands, config, rl, wl)
    total = sim.run()
    return total, sim.stamps


def predict(compiled, config: AccelConfig | None = None, *, memory: str = "rtl",
            one_start: bool = True) -> ModelPrediction:
    """Predict every layer of ``compiled`` (a CompiledProgram) on ``config`` (default: the
    program's own); ``memory``: see :func:`predict_layer`. ``one_start``: the layers run as
    the host runs them by default, the runs of ``compiled.run_groups()`` (the whole model per
    start, FENCEs between layers), each layer's cycles the difference of its stamps; else
    one start per layer."""
    config = config or compiled.config
    pred = ModelPrediction(config=config.to_dict())
    if one_start and hasattr(compiled, "run_groups"):
        for g in compiled.run_groups():
            total, stamps = predict_run(compiled.run_commands(g), config, memory=memory)
            marks = [0] + stamps + [total]
            for k, i in enumerate(g["layers"]):
                entry, cmds = compiled.layers[i], compiled.commands[i]
                pred.layers.append(LayerPrediction(
                    index=i, name=str(entry.get("name", i)), op=str(entry.get("op", "")),
                    cycles=marks[k + 1] - marks[k], bounds=bounds(cmds, config),
                    commands=len(cmds)))
        return pred
    for i, (entry, cmds) in enumerate(zip(compiled.layers, compiled.commands)):
        pred.layers.append(LayerPrediction(
            index=i, name=str(entry.get("name", i)), op=str(entry.get("op", "")),
            cycles=predict_layer(cmds, config, memory=memory), bounds=bounds(cmds, config),
            commands=len(cmds)))
    return pred
