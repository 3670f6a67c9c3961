"""Design-space exploration: the fastest accelerator configs for a model within a device's budget.

``python -m pycde_accel dse [MODEL] --target NAME [--top N] [--confirm N] [--synth]``

1. *Space* (:func:`space`): array shape rows x cols (cols a multiple of the AXI beat in bytes,
   docs/accelerator-contract.md), AXI data width (32/64/128), operand scratchpad depth (A and B) and
   the C-side depth (``spad_c_depth``: parameter records, X buffer). Each point is a full
   :class:`~pycde_accel.config.AccelConfig` with ``target`` set to the device.
2. *Budget*: ``fpga.fit.check_fit`` (DSP, block RAM, LUT of the device preset); a config that
   does not fit is refused with its reason and never compiled.
3. *Predict* (:func:`evaluate`): the back end compiles the model for the config (a config the
   compiler refuses, e.g. K longer than the scratchpad, is dropped with its reason) and
   :func:`pycde_accel.perfmodel.predict` gives its cycles. Candidates run in parallel on the
   local cores (``concurrent.futures.ProcessPoolExecutor``, ``jobs`` workers).
4. *Rank* by predicted latency (cycles; ties: fewer DSP, BRAM, LUT), and the *Pareto front*
   (:func:`pareto`) of latency against resources: a candidate is on the front when no other is
   at least as good in predicted cycles, DSP, BRAM and LUT and better in one. ``util`` (the
   largest share of the device's DSP, BRAM and LUT a config takes) is reported beside.
5. *Confirm* (:func:`confirm`): the best N are simulated in Verilator (``simulate.simulate``:
   bit-exact check, measured cycles next to the prediction), in parallel (the Verilator builds
   dominate); with ``synth`` also synthesized (``fpga.project.synth_model``: measured LUT, DSP,
   BRAM and Fmax, for open-flow targets).

:func:`run_dse` does all of it and returns a :class:`DseResult`; ``DseResult.to_dict()`` is what
the CLI writes to ``DIR/dse.json`` and :func:`table_lines` what it prints.
"""

from __future__ import annotations

import itertools
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .config import AccelConfig
from .errors import UserError

Progress = Callable[[str], None]

DEFAULT_ROWS = (2, 4, 8, 16)
DEFAULT_COLS = (4, 8, 16, 32)
DEFAULT_AXI = (32, 64, 128)
DEFAULT_SPAD = (256, 512, 1024, 2048)
DEFAULT_SPAD_C = (64, 256)


def _quiet(_: str) -> None:
    pass


@dataclass
class Candidate:
    """One config of the sweep and what is known about it."""

    config: AccelConfig
    resources: dict = field(default_factory=dict)   # fit.estimate: dsp, bram, lut, ...
    util: float = 0.0                 # max fraction of the device's DSP / BRAM / LUT
    status: str = "ok"                # ok | no-fit | refused (by the compiler) | error
    reason: str = ""
    predicted_cycles: int | None = None
    predicted_layers: list = field(default_factory=list)
    simulated_cycles: int | None = None
    bit_exact: bool | None = None
    synth: dict | None = None
    seconds: float = 0.0

    @property
    def key(self) -> str:
        c = self.config
        return (f"{c.rows}x{c.cols}/axi{c.axi_data_width}/spad{c.spad_a_depth}"
                f"/c{c.spad_c_depth}")

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.predicted_cycles is not None

    def latency_us(self) -> float | None:
        if self.predicted_cycles is None:
            return None
        return self.predicted_cycles / self.config.clock_mhz

    @property
    def model_error_pct(self) -> float | None:
        if self.predicted_cycles is None or not self.simulated_cycles:
            return None
        return 100.0 * (self.predicted_cycles - self.simulated_cycles) / self.simulated_cycles

    def rank_key(self):
        r = self.resources
        return (self.predicted_cycles, r.get("dsp", 0), r.get("bram", 0), r.get("lut", 0),
                self.config.axi_data_width, self.config.spad_a_depth, self.config.spad_c_depth)

    def to_dict(self) -> dict:
        c = self.config
        d = {"key": self.key, "rows": c.rows, "cols": c.cols, "axi_data_width": c.axi_data_width,
             "spad_a_depth": c.spad_a_depth, "spad_b_depth": c.spad_b_depth,
             "spad_c_depth": c.spad_c_depth, "status": self.status, "reason": self.reason,
             "resources": dict(self.resources), "util": round(self.util, 4),
             "predicted_cycles": self.predicted_cycles,
             "predicted_us": None if self.latency_us() is None else round(self.latency_us(), 3),
             "simulated_cycles": self.simulated_cycles, "bit_exact": self.bit_exact,
             "model_error_pct": (None if self.model_error_pct is None
                                 else round(self.model_error_pct, 3)),
             "synth": self.synth, "predicted_layers": self.predicted_layers}
        return d


@dataclass
class DseResult:
    model: str
    target: str
    device: dict
    candidates: list                  # every candidate, ranked ones first (by rank_key)
    seconds: float = 0.0

    @property
    def ranked(self) -> list:
        return [c for c in self.candidates if c.ok]

    @property
    def pareto(self) -> list:
        return pareto(self.ranked)

    def to_dict(self) -> dict:
        counts = {}
        for c in self.candidates:
            counts[c.status] = counts.get(c.status, 0) + 1
        return {"model": self.model, "target": self.target, "device": self.device,
                "seconds": round(self.seconds, 2), "counts": counts,
                "best": self.ranked[0].key if self.ranked else None,
                "pareto": [c.key for c in self.pareto],
                "candidates": [c.to_dict() for c in self.candidates]}


# ---- the space ------------------------------------------------------------------------------
def space(base: AccelConfig | None = None, *, rows: Iterable[int] = DEFAULT_ROWS,
          cols: Iterable[int] = DEFAULT_COLS, axi: Iterable[int] = DEFAULT_AXI,
          spad: Iterable[int] = DEFAULT_SPAD, spad_c: Iterable[int] = DEFAULT_SPAD_C,
          target: str | None = None) -> list[AccelConfig]:
    """Every buildable config of the cross product (cols a multiple of the AXI beat in bytes;
    ``spad`` sets spad_a_depth and spad_b_depth alike)."""
    from .contract import check_config
    from .errors import ConfigError

    base = base or AccelConfig()
    out = []
    for r, c, w, s, sc in itertools.product(rows, cols, axi, spad, spad_c):
        cfg = base.replace(rows=r, cols=c, axi_data_width=w, spad_a_depth=s, spad_b_depth=s,
                           spad_c_depth=sc, **({"target": target} if target else {}))
        try:
            cfg.validate()
            check_config(cfg)
        except ConfigError:
            continue
        out.append(cfg)
    return out


# ---- evaluation (runs in the worker processes) ---------------------------------------------
_FE: dict = {}


def _frontend(model: str | None, seed: int):
    key = (model, seed)
    if key not in _FE:
        from . import frontend
        _FE[key] = frontend.run(model, seed=seed, eval_batches=1)
    return _FE[key]


def _utilization(res: dict, device) -> float:
    fr = [res.get("dsp", 0) / device.dsp if device.dsp else 0.0,
          res.get("bram", 0) / device.bram if device.bram else 0.0,
          res.get("lut", 0) / device.lut if device.lut else 0.0]
    return max(fr)


def evaluate(model: str | None, config: AccelConfig, *, seed: int = 0, fe=None) -> Candidate:
    """Fit check, compile and predict one config (never raises for a bad candidate)."""
    from . import perfmodel
    from .backend import compile_program
    from .fpga import fit
    from .fpga.devices import get_device

    t0 = time.time()
    cand = Candidate(config=config)
    device = get_device(config.target)
    cand.resources = fit.estimate(config, device).to_dict()
    cand.util = _utilization(cand.resources, device)
    try:
        fit.check_fit(config, device)
    except UserError as e:
        cand.status, cand.reason = "no-fit", str(e)
        return cand
    try:
        fe = fe if fe is not None else _frontend(model, seed)
        compiled = compile_program(fe, config)
        pred = perfmodel.predict(compiled, config)
    except UserError as e:
        cand.status, cand.reason = "refused", str(e)
        return cand
    except Exception as e:  # a bug for this config: keep sweeping, say what it was
        cand.status, cand.reason = "error", f"{type(e).__name__}: {e}"
        return cand
    cand.predicted_cycles = pred.total_cycles
    cand.predicted_layers = [l.cycles for l in pred.layers]
    cand.seconds = time.time() - t0
    return cand


def _evaluate_job(args) -> Candidate:
    model, cfg, seed = args
    return evaluate(model, cfg, seed=seed)


def _pool(jobs: int) -> ProcessPoolExecutor:
    import multiprocessing as mp
    # fork: the workers inherit the parent's frontend result (_FE), no re-export per worker
    return ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("fork"))


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else (os.cpu_count() or 1))


def sweep(model: str | None, configs: list[AccelConfig], *, seed: int = 0, jobs: int | None = None,
          progress: Progress = _quiet) -> list[Candidate]:
    """Evaluate ``configs`` (in parallel when ``jobs`` > 1); return them ranked: fitting,
    compiled candidates by predicted latency first, then the refused ones."""
    jobs = jobs or default_jobs()
    _frontend(model, seed)          # once here; forked workers inherit it
    progress(f"predicting {len(configs)} configs on {jobs} worker(s)")
    args = [(model, c, seed) for c in configs]
    if jobs == 1 or len(configs) <= 1:
        cands = [_evaluate_job(a) for a in args]
    else:
        with _pool(jobs) as ex:
            cands = list(ex.map(_evaluate_job, args, chunksize=max(1, len(args) // (4 * jobs))))
    return rank(cands)


def rank(cands: list[Candidate]) -> list[Candidate]:
    ok = sorted((c for c in cands if c.ok), key=Candidate.rank_key)
    rest = [c for c in cands if not c.ok]
    return ok + rest


def objectives(c: Candidate) -> tuple:
    """What the Pareto front minimizes: predicted cycles, DSP, BRAM, LUT."""
    r = c.resources
    return (c.predicted_cycles, r.get("dsp", 0), r.get("bram", 0), r.get("lut", 0))


def dominates(a: Candidate, b: Candidate) -> bool:
    """a is at least as good as b in every objective and better in one."""
    oa, ob = objectives(a), objectives(b)
    return all(x <= y for x, y in zip(oa, ob)) and oa != ob


def pareto(cands: list[Candidate]) -> list[Candidate]:
    """The candidates no other one dominates in (predicted cycles, DSP, BRAM, LUT), by cycles;
    of candidates with equal objectives only the first in rank order is kept."""
    ok = sorted((c for c in cands if c.ok), key=Candidate.rank_key)
    front, seen = [], set()
    for c in ok:
        o = objectives(c)
        if o in seen or any(dominates(d, c) for d in ok):
            continue
        seen.add(o)
        front.append(c)
    return front


# ---- confirmation -----------------------------------------------------------------------------
def _confirm_job(args) -> dict:
    model, cfg, seed, work, synth, cache_root = args
    from .simulate import simulate
    out = {"simulated_cycles": None, "bit_exact": None, "synth": None, "error": None}
    try:
        r = simulate(_frontend(model, seed), cfg, Path(work) / "sim", cache_root=cache_root)
        out["simulated_cycles"], out["bit_exact"] = r.total_cycles, r.bit_exact
    except Exception as e:
        out["error"] = f"simulation: {e}"
        return out
    if synth:
        try:
            from .fpga import project
            s = project.synth_model(model, Path(work) / "synth_out", cfg, seed=seed)
            if s.report is not None:
                rep = s.report
                out["synth"] = {"lut": rep.lut, "ff": rep.ff, "dsp": rep.dsp, "bram": rep.bram,
                                "fmax_mhz": rep.fmax_mhz}
            else:
                out["synth"] = {"written": [str(p) for p in s.written]}
        except Exception as e:
            out["synth"] = {"error": str(e)}
    return out


def confirm(model: str | None, cands: list[Candidate], out: Path, *, seed: int = 0,
            synth: bool = False, jobs: int | None = None, cache_root: Path | None = None,
            progress: Progress = _quiet) -> list[Candidate]:
    """Simulate (and with ``synth`` synthesize) ``cands`` in parallel; fill their measured
    fields in place and return them. ``cache_root``: the Verilator build cache
    (default ``sim.runner.default_cache_root()``)."""
    if not cands:
        return cands
    jobs = min(jobs or default_jobs(), len(cands))
    _frontend(model, seed)
    out = Path(out)
    args = [(model, c.config, seed, str(out / c.key.replace("/", "_")), synth, cache_root)
            for c in cands]
    progress(f"confirming {len(cands)} candidate(s) in Verilator"
             f"{' and synthesis' if synth else ''} on {jobs} worker(s)")
    if jobs == 1:
        results = [_confirm_job(a) for a in args]
    else:
        with _pool(jobs) as ex:
            results = list(ex.map(_confirm_job, args))
    for c, r in zip(cands, results):
        c.simulated_cycles, c.bit_exact, c.synth = r["simulated_cycles"], r["bit_exact"], r["synth"]
        if r["error"]:
            c.reason = r["error"]
    return cands


def run_dse(model: str | None, target: str, out: Path, *, base: AccelConfig | None = None,
            configs: list[AccelConfig] | None = None, confirm_n: int = 2, synth: bool = False,
            seed: int = 0, jobs: int | None = None, progress: Progress = _quiet) -> DseResult:
    """Sweep, rank, confirm the best ``confirm_n``; return the :class:`DseResult`."""
    from .fpga.devices import get_device

    device = get_device(target)
    t0 = time.time()
    configs = configs if configs is not None else space(base, target=device.name)
    configs = [c.replace(target=device.name) for c in configs]
    if not configs:
        raise UserError("dse: the sweep has no buildable config (cols must be a multiple of "
                        "the AXI width in bytes)")
    cands = sweep(model, configs, seed=seed, jobs=jobs, progress=progress)
    ranked = [c for c in cands if c.ok]
    if not ranked:
        reasons = sorted({c.status for c in cands})
        raise UserError(f"dse: no config of the sweep fits {device.name} and compiles "
                        f"({len(cands)} tried: {', '.join(reasons)}; first reason: "
                        f"{cands[0].reason})")
    if confirm_n > 0:
        confirm(model, ranked[:confirm_n], Path(out) / "confirm", seed=seed, synth=synth,
                jobs=jobs, progress=progress)
    return DseResult(model=model or "default", target=device.name, device=device.to_dict(),
                     candidates=cands, seconds=time.time() - t0)


# ---- report ---------------------------------------------------------------------------------
def _row(i, c: Candidate, mark: str = "") -> str:
    r = c.resources
    sim = "" if c.simulated_cycles is None else str(c.simulated_cycles)
    err = "" if c.model_error_pct is None else f"{c.model_error_pct:+.1f}%"
    exact = "" if c.bit_exact is None else ("yes" if c.bit_exact else "NO")
    fmax = ""
    if c.synth and c.synth.get("fmax_mhz"):
        fmax = f"{c.synth['fmax_mhz']:.1f}"
    return (f"  {i:>3} {c.config.array:>6} {c.config.axi_data_width:>4} {c.config.spad_a_depth:>5} "
            f"{c.config.spad_c_depth:>5} {c.predicted_cycles:>10} {c.latency_us():>9.1f} "
            f"{r.get('dsp', 0):>5} {r.get('bram', 0):>5} {r.get('lut', 0):>7} {c.util:>6.1%} "
            f"{sim:>10} {err:>7} {exact:>5} {fmax:>6}{mark}")


HEADER = (f"  {'#':>3} {'array':>6} {'axi':>4} {'spad':>5} {'spadC':>5} {'pred cyc':>10} "
          f"{'pred us':>9} {'DSP':>5} {'BRAM':>5} {'LUT':>7} {'util':>6} {'sim cyc':>10} "
          f"{'err':>7} {'exact':>5} {'Fmax':>6}")


def table_lines(res: DseResult, top: int = 10) -> list[str]:
    """The CLI's report: the best ``top`` by predicted latency, then the Pareto front."""
    ranked = res.ranked
    counts = res.to_dict()["counts"]
    dev = res.device
    lines = [f"DSE of {res.model} for {res.target} ({dev.get('part', '')}: {dev.get('dsp')} DSP, "
             f"{dev.get('bram')} BRAM, {dev.get('lut')} LUT): {len(res.candidates)} configs, "
             + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
             + f" ({res.seconds:.1f} s)",
             f"latency = predicted cycles (pycde_accel.perfmodel) at "
             f"{ranked[0].config.clock_mhz:g} MHz; util = max share of the device's DSP/BRAM/LUT"
             if ranked else "no candidate fits and compiles"]
    front = {id(c) for c in res.pareto}
    lines.append(f"best {min(top, len(ranked))} by predicted latency (* = on the Pareto front):")
    lines.append(HEADER)
    for i, c in enumerate(ranked[:top]):
        lines.append(_row(i + 1, c, " *" if id(c) in front else ""))
    lines.append("Pareto front (no other config has fewer or equal cycles, DSP, BRAM and LUT):")
    lines.append(HEADER)
    index = {id(c): i + 1 for i, c in enumerate(ranked)}
    for c in res.pareto:
        lines.append(_row(index[id(c)], c))
    return lines
