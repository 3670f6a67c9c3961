"""Run a compiled model on the whole accelerator in Verilator and check it.

``simulate(fe, config, work)`` compiles the model (``backend.compile_program``), emits the
accelerator (``assemble.emit_accelerator``), builds it with Verilator (cached by a hash of
the SV), writes the model's example input into the DRAM image and runs it on one of the
:data:`ENGINES`: by default the Verilator-native harness (``sim/native``, RTL memory and RTL
stream watchdog, :mod:`pycde_accel.sim.fast`); ``engine="cocotb"`` the same RTL under cocotb;
``engine="axiram"`` (forced by AXI pauses or waves) ``sim/tb_accel.py``: the host driver
(:mod:`pycde_accel.host`) runs every layer through the CSRs against cocotbext-axi's ``AxiRam``. The output read back
from the simulated DRAM is compared bit for bit with the frontend's integer reference, and (dequantized) with float PyTorch.
The fast engines' memory charges the board memory's bandwidth at the config's clock
(``config.memory``, :func:`memory_rate`); the axiram engine's AxiRam does not (its random
pauses are the back-pressure it tests), and its prediction is the ideal memory's.

Result: :class:`SimResult` (per-layer cycles, PE utilization and DMA bytes; totals; the
comparison). Nothing is printed here; ``report_lines`` formats it for the CLI.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .backend.compile import model_macs, padding_waste  # noqa: F401 (model_macs: re-exported)
from .config import AccelConfig
from .errors import UserError

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


@dataclass
class SimResult:
    """What a simulation measured and whether it matched."""

    model: str
    config: dict
    bit_exact: bool
    mismatches: list[str]
    layers: list[dict]
    total_cycles: int
    macs: int
    pe_utilization: float
    dma_bytes_read: int
    dma_bytes_written: int
    float_max_abs_error: float
    float_top1_match: bool | None
    outputs: list = field(default_factory=list, repr=False)
    #: pycde_accel.perfmodel's prediction of total_cycles (None if the model failed)
    predicted_cycles: int | None = None
    #: MACs the array performs (padded channels included); ``macs`` are the model's
    array_macs: int = 0
    #: accelerator starts (1: the whole model per start; one per layer with per_layer_starts)
    starts: int = 1
    #: cycles from the first ``ctrl.start`` write to the last ``irq``, the host's CSR writes,
    #: irq waits and counter/stamp reads between starts included (None: not measured)
    host_cycles: int | None = None

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "outputs"}
        return d


def build_accelerator(config: AccelConfig, work: Path, *, cache_root: Path | None = None,
                      waves: bool = False, progress: Progress = _quiet, defer: bool = False,
                      rowred: bool = False):
    """Emit the accelerator for ``config`` into ``work/sv`` (kernel IR in ``work/kernels``) and
    build it with Verilator (cached under ``cache_root``, default
    ``sim.runner.default_cache_root()``, by a hash of the SV); return the
    :class:`~pycde_accel.sim.runner.SimBuild`. ``defer``: do not compile it yet (the fast
    engines build their own wrapper of it; the AxiRam engine compiles it on first use).
    ``rowred``: with the vector engine's row-reduction unit (a program whose
    ``uses_rowred`` is true needs it; it is idle for any other)."""
    from .assemble import emit_accelerator
    from .sim import runner

    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    sv_dir = work / "sv"
    progress(f"emitting the accelerator ({config.array} array, {config.axi_data_width}-bit AXI)")
    if sv_dir.exists():
        shutil.rmtree(sv_dir)
    emitted = emit_accelerator(config, sv_dir, kernel_dir=work / "kernels", rowred=rowred)
    progress("building the Verilator model (cached after the first build)")
    return runner.build(emitted.sim_filelist, emitted.top,
                        cache_root=cache_root or runner.default_cache_root(), waves=waves,
                        defer=defer)


#: Simulation engines (``engine=`` of run_layers/run_image/simulate):
#: ``axiram``: sim/tb_accel.py, cocotbext-axi AxiRam + the per-cycle Python watchdog (the only
#: one with AXI pauses); ``cocotb``: sim/tb_accel_fast.py, RTL memory + RTL watchdog under
#: cocotb; ``native``: the Verilator-native harness (sim/native, same RTL memory and watchdog);
#: ``auto``: axiram when AXI pauses or waves are asked for (or the image does not fit the RTL
#: memory), else native. Every engine ends a stalled run with the stalled stream's name.
ENGINES = ("auto", "axiram", "cocotb", "native")
#: a layer that has not raised its interrupt after this many cycles fails the run (simulate
#: raises it to 4x the perf model's prediction of the longest layer)
LAYER_TIMEOUT_CYCLES = 10_000_000


def pick_engine(engine: str, *, axi_pause: float = 0.0, waves: bool = False,
                image_len: int = 0) -> str:
    from .sim import fast

    if engine not in ENGINES:
        raise UserError(f"unknown simulation engine {engine!r} (one of {', '.join(ENGINES)})")
    if engine == "auto":
        return "axiram" if axi_pause > 0 or waves or not fast.fits(image_len) else "native"
    if engine != "axiram" and axi_pause > 0:
        raise UserError(f"the {engine} engine has no AXI pauses: use engine 'axiram'")
    if engine != "axiram" and not fast.fits(image_len):
        raise UserError(f"the DRAM image ({image_len} bytes) does not fit the {engine} engine's "
                        f"memory (at most {1 << fast.MAX_MEM_LOG2} bytes): use engine 'axiram'")
    if engine == "native" and waves:
        raise UserError("the native engine writes no waveforms: use engine 'cocotb' or 'axiram'")
    return engine


def memory_rate(config: AccelConfig, engine: str) -> tuple[int, int] | None:
    """The board memory's bytes per cycle ``(num, den)`` the engine's AXI memory charges
    (:func:`pycde_accel.perfmodel.memory.rate`; None: no limit). The fast engines' RTL memory
    (``sim/axi_mem.sv``) charges it; the ``axiram`` engine (cocotbext-axi's AxiRam, random
    pauses) does not: its prediction is the ideal memory's (:func:`prediction_config`)."""
    from .perfmodel import memory
    return None if engine == "axiram" else memory.rate(config)


def prediction_config(config: AccelConfig, engine: str) -> AccelConfig:
    """The config the perf model predicts ``engine``'s run with: the axiram engine has no
    bandwidth throttle, so its memory is the ideal one."""
    return config.replace(memory="ideal") if engine == "axiram" else config


def run_layers(config: AccelConfig, sim, layers: list[dict], image: bytes, run_dir: Path, *,
               axi_pause: float = 0.0, seed: int = 0, waves: bool = False,
               stall_cycles: int = 20000, progress: Progress = _quiet,
               engine: str = "auto",
               layer_timeout_cycles: int = LAYER_TIMEOUT_CYCLES, groups: list | None = None,
               info: dict | None = None) -> tuple[list[dict], bytes]:
    """Run ``layers`` (dicts with ``name``, ``cmd_addr``, ``cmd_count``) on the Verilator build
    ``sim`` with ``image`` as the DRAM; return (per-layer LayerRun dicts, DRAM image after).
    ``groups``: the starts (``CompiledProgram.run_groups()``: several layers per start,
    FENCEs between them); None: one start per layer. ``info`` (a dict) receives
    ``host_cycles``: from the first ``ctrl.start`` write to the last ``irq``, the host's CSR
    traffic between starts included. ``engine``: see :data:`ENGINES`.
    A failed run (accelerator error, watchdog, timeout) raises UserError with its reason."""
    from .rtl_lib.axil_csr import default_csr_map
    from .sim import fast, runner

    engine = pick_engine(engine, axi_pause=axi_pause, waves=waves, image_len=len(image))

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "dram_in.bin").write_bytes(bytes(image))
    ab = config.axi_data_width // 8
    mem_size = 1 << max(16, (len(image) + 4095).bit_length())
    # Paths in the plan are relative to run_dir, the folder every engine runs in (cocotb's
    # test folder, the native harness's cwd): the plan stays valid when the output folder it
    # was written into is moved into place. What goes on a command line or into the
    # environment is absolute.
    plan = {"image": "dram_in.bin", "mem_size": mem_size,
            "csr_map": default_csr_map(config.axi_addr_width, config.axil_data_width).to_dict(),
            "hw": {"rows": config.rows, "cols": config.cols, "axi_bytes": ab},
            "layers": [{k: l[k] for k in ("name", "cmd_addr", "cmd_count")} for l in layers],
            **({"runs": [dict(g) for g in groups]} if groups is not None else {}),
            "reads": [{"name": "image", "addr": 0, "size": len(image)}],
            "axi_pause": axi_pause, "seed": seed, "stall_cycles": stall_cycles,
            "layer_timeout_cycles": int(layer_timeout_cycles),
            "result": "result.json", "dram_out": "dram_out.bin",
            "engine": engine}
    rate = memory_rate(config, engine)
    if rate:
        plan["memory_rate"] = list(rate)
    (run_dir / "plan.json").write_text(json.dumps(plan, indent=1))
    result = run_dir / "result.json"
    result.unlink(missing_ok=True)
    if engine == "native":
        progress("building the native Verilator harness (cached after the first build)")
        exe = fast.build_native(sim, mem_log2=fast.mem_log2(len(image)))
        progress(f"simulating {len(plan['layers'])} layers in Verilator (native harness)")
        res = fast.run_native(exe, run_dir / "plan.json")
        if "error" in res:
            raise UserError(f"simulation failed: {res['error']} (log: {run_dir / 'native.log'})")
        if info is not None:
            info["host_cycles"] = res.get("host_cycles")
        return res["layers"], (run_dir / res["reads"]["image"]).read_bytes()
    here = run_dir.resolve()
    try:
        if engine == "cocotb":
            progress("building the fast cocotb model (cached after the first build)")
            fsim = fast.build_cocotb(sim, waves=waves, mem_log2=fast.mem_log2(len(image)))
            progress(f"simulating {len(plan['layers'])} layers in Verilator (cocotb, RTL memory)")
            (run_dir / "dram_in.mem").write_bytes(fast.image_to_mem(bytes(image), ab))
            runner.run(fsim, "pycde_accel.sim.tb_accel_fast", run_dir, waves=waves,
                       extra_env={"TB_ACCEL_PLAN": str(here / "plan.json")},
                       plusargs=[f"+DRAM_IN={here / 'dram_in.mem'}",
                                 f"+DRAM_OUT={here / plan['dram_out']}"]
                       + fast.memory_plusargs(plan))
        else:
            sim = runner.ensure_built(sim)
            progress(f"simulating {len(plan['layers'])} layers in Verilator (cocotb, AxiRam)")
            runner.run(sim, "pycde_accel.sim.tb_accel", run_dir, waves=waves,
                       extra_env={"TB_ACCEL_PLAN": str(here / "plan.json")})
    except runner.SimFailure as e:
        why = json.loads(result.read_text()).get("error") if result.exists() else None
        raise UserError(f"simulation failed: {why or str(e).splitlines()[0]} "
                        f"(log: {run_dir / 'sim.log'})") from None
    res = json.loads(result.read_text())
    if info is not None:
        info["host_cycles"] = res.get("host_cycles")
    return res["layers"], (run_dir / res["reads"]["image"]).read_bytes()


def run_image(config: AccelConfig, compiled, image: bytes, work: Path, *, axi_pause: float = 0.0,
              seed: int = 0, waves: bool = False, stall_cycles: int = 20000,
              cache_root: Path | None = None, sim=None, progress: Progress = _quiet,
              engine: str = "auto",
              layer_timeout_cycles: int = LAYER_TIMEOUT_CYCLES, per_layer_starts: bool = False,
              info: dict | None = None) -> tuple[list[dict], bytes]:
    """Build the accelerator for ``config`` (unless ``sim`` is a build of it) and run
    ``compiled``'s layers on ``image`` in ``work/run`` (``engine``: see :data:`ENGINES`): the
    whole model per start (``compiled.run_groups()``), or one start per layer
    (``per_layer_starts``)."""
    work = Path(work)
    if sim is None:
        eng = pick_engine(engine, axi_pause=axi_pause, waves=waves, image_len=len(image))
        sim = build_accelerator(config, work, cache_root=cache_root, waves=waves,
                                progress=progress, defer=eng != "axiram",
                                rowred=getattr(compiled, "uses_rowred", False))
    groups = (compiled.run_groups() if hasattr(compiled, "run_groups") and not per_layer_starts
              else None)
    return run_layers(config, sim, compiled.layers, image, work / "run", axi_pause=axi_pause,
                      seed=seed, waves=waves, stall_cycles=stall_cycles, progress=progress,
                      engine=engine, layer_timeout_cycles=layer_timeout_cycles, groups=groups,
                      info=info)


def simulate(fe, config: AccelConfig, work: Path, *, axi_pause: float = 0.0, seed: int = 0,
             waves: bool = False, stall_cycles: int = 20000, cache_root: Path | None = None,
             sim=None, progress: Progress = _quiet, engine: str = "auto",
             compiled=None, per_layer_starts: bool = False) -> SimResult:
    """Simulate frontend result ``fe`` (``frontend.run``) on the accelerator for ``config``
    (``compiled``: ``backend.compile_program(fe, config)`` when the caller has it already):
    the whole model per start (FENCEs between layers, per-layer cycles from their stamps), or
    one start per layer (``per_layer_starts``)."""
    from .backend import compile_program
    from .frontend import evaluate, reference

    config.validate()
    if compiled is None:
        progress(f"back end: commands for the {config.array} array")
        compiled = compile_program(fe, config)
    qm = fe.quantized
    xs = [t.detach().double().numpy() for t in fe.model.example_inputs]
    xq = reference.quantize_inputs(qm, xs)
    image = compiled.load_inputs(xq)
    picked = pick_engine(engine, axi_pause=axi_pause, waves=waves, image_len=len(image))
    prediction = _predict(compiled, prediction_config(config, picked),
                          "axiram" if picked == "axiram" else "rtl", not per_layer_starts)
    # a layer that runs long by design (vgg11's 25088 x 4096 classifier reads 100 MB) is not
    # a hang: its time limit follows its prediction (the watchdog still ends a stalled stream)
    timeout = max([LAYER_TIMEOUT_CYCLES] + [4 * l.cycles for l in prediction.layers]
                  if prediction else [LAYER_TIMEOUT_CYCLES])
    info: dict = {}
    runs, after = run_image(config, compiled, image, work, axi_pause=axi_pause, seed=seed,
                            waves=waves, stall_cycles=stall_cycles, cache_root=cache_root,
                            sim=sim, progress=progress, engine=engine,
                            layer_timeout_cycles=timeout, per_layer_starts=per_layer_starts,
                            info=info)
    outs = compiled.read_outputs(bytearray(after))
    want = reference.run(qm, xq).outputs
    mismatches = []
    for name, o, w in zip(qm.graph.outputs, outs, want):
        o, w = np.asarray(o), np.asarray(w)
        if o.shape != w.shape or not np.array_equal(o, w):
            bad = int(np.sum(o != w)) if o.shape == w.shape else -1
            mismatches.append(f"output {name}: {bad} of {w.size} values differ"
                              if bad >= 0 else f"output {name}: shape {o.shape} != {w.shape}")
    floats = evaluate.torch_outputs(fe.model.module, xs)
    errs, top1 = [], None
    for name, o, f in zip(qm.graph.outputs, outs, floats):
        deq = np.asarray(o, np.float64) * qm.scales[name]
        errs.append(float(np.max(np.abs(deq - f))) if f.size else 0.0)
        if classifier_shaped(f.shape):
            top1 = bool(np.array_equal(np.argmax(deq.reshape(-1, f.shape[-1]), -1),
                                       np.argmax(f.reshape(-1, f.shape[-1]), -1)))
    stats = {s["index"]: s for s in compiled.stats} if hasattr(compiled, "stats") else {}
    layers = []
    pe = config.rows * config.cols
    array = [int(entry.get("array_macs", stats.get(i, {}).get("array_macs", 0)))
             for i, entry in enumerate(compiled.layers)]
    model = model_macs(qm.graph, compiled.layers, array)
    for i, (entry, r) in enumerate(zip(compiled.layers, runs)):
        pred = prediction.layers[i].cycles if prediction else None
        layers.append({**{k: entry[k] for k in entry if k not in ("cmd_addr",)}, **r,
                       "predicted_cycles": pred,
                       "macs": model[i], "array_macs": array[i],
                       "padding_waste": padding_waste(model[i], array[i]),
                       "pe_utilization": model[i] / (r["cycles"] * pe) if r["cycles"] else 0.0})
    total = sum(r["cycles"] for r in runs)
    macs = sum(l["macs"] for l in layers)
    return SimResult(model=fe.model.spec, config=config.to_dict(), bit_exact=not mismatches,
                     mismatches=mismatches, layers=layers, total_cycles=total, macs=macs,
                     pe_utilization=macs / (total * pe) if total else 0.0,
                     dma_bytes_read=sum(r["dma_rd_bytes"] for r in runs),
                     dma_bytes_written=sum(r["dma_wr_bytes"] for r in runs),
                     float_max_abs_error=max(errs) if errs else 0.0, float_top1_match=top1,
                     predicted_cycles=prediction.total_cycles if prediction else None,
                     outputs=outs, array_macs=sum(array[:len(layers)]),
                     starts=len(compiled.run_groups(per_layer_starts)),
                     host_cycles=info.get("host_cycles"))


def classifier_shaped(shape) -> bool:
    """An output whose argmax is a class: 2-d (N, classes) with more than one class."""
    return len(shape) == 2 and shape[1] > 1


def _predict(compiled, config: AccelConfig, memory: str = "rtl", one_start: bool = True):
    """perfmodel's prediction for ``compiled`` (``memory``: the engine's memory model, see
    ``perfmodel.MEMORIES``; ``one_start``: the runs of ``run_groups()``, else one start per
    layer), or None: a model failure must not fail a run."""
    from . import perfmodel
    try:
        return perfmodel.predict(compiled, config, memory=memory, one_start=one_start)
    except Exception:  # pragma: no cover - reported as a missing prediction
        return None


def _pred(v) -> str:
    return "-" if v is None else str(v)


def report_lines(r: SimResult) -> list[str]:
    """The CLI's table: one line per layer, then totals and the verdict."""
    lines = [f"  {'#':>2} {'layer':16} {'op':8} {'cycles':>9} {'predicted':>9} {'MACs':>9} "
             f"{'array MACs':>10} {'waste':>6} "
             f"{'PE util':>8} {'DMA rd B':>9} {'DMA wr B':>9} {'cmds':>6}"]
    for i, l in enumerate(r.layers):
        am = int(l.get("array_macs", l["macs"]))
        waste = f"{padding_waste(l['macs'], am):.1%}" if am else "-"
        lines.append(f"  {i:>2} {str(l.get('name', ''))[:16]:16} {str(l.get('op', ''))[:8]:8} "
                     f"{l['cycles']:>9} {_pred(l.get('predicted_cycles')):>9} {l['macs']:>9} "
                     f"{am:>10} {waste:>6} {l['pe_utilization']:>8.3f} "
                     f"{l['dma_rd_bytes']:>9} {l['dma_wr_bytes']:>9} {l['cmds']:>6}")
    if r.host_cycles is not None:
        lines.append(f"  host: {r.starts} start{'s' if r.starts != 1 else ''}, {r.host_cycles} "
                     f"cycles from the first start to the last done (the host's CSR writes and "
                     f"counter reads between starts included)")
    lines.append(f"  total: {r.total_cycles} cycles (predicted {_pred(r.predicted_cycles)}), "
                 f"{r.macs} MACs, PE utilization "
                 f"{r.pe_utilization:.3f}, DMA {r.dma_bytes_read} B read, "
                 f"{r.dma_bytes_written} B written")
    if r.array_macs:
        waste = 1 - r.macs / r.array_macs if r.array_macs else 0.0
        lines.append(f"  array: {r.array_macs} MACs with channel padding (padding waste "
                     f"{waste:.1%} of the array's MACs)")
    top1 = ("" if r.float_top1_match is None else
            ", same top-1" if r.float_top1_match else ", different top-1")
    lines.append(f"  float PyTorch: max abs error {r.float_max_abs_error:.4g} (dequantized){top1}")
    lines.append("  bit-exact with the integer reference: " +
                 ("yes" if r.bit_exact else "NO - " + "; ".join(r.mismatches)))
    return lines
