"""Design-space exploration: the fastest accelerator configs for a model within a device's budget.

``python -m pycde_accel dse [MODEL] --target NAME [--top N] [--confirm N] [--synth]``

1. *Space* (:func:`space`): array shape rows x cols (cols a multiple of the AXI beat in bytes,
   docs/accelerator-contract.md), AXI data width (32/64/128), operand scratchpad depth (A and B,
   or B on its own), the C-side depth (``spad_c_depth``: parameter records, X buffer) and
   ``max_k`` with the narrowest accumulator that proves it (``acc_width``). Each point is a
   full :class:`~pycde_accel.config.AccelConfig` with ``target`` set to the device.
2. *Budget*: ``fpga.fit.overruns`` (DSP, block RAM, LUT of the device preset); a config that
   does not fit is never ranked.
3. *Predict* (:func:`evaluate`): the back end compiles the model for the config and
   :func:`pycde_accel.perfmodel.predict` gives its cycles; the Fmax model
   (``fpga.fit.predict_fmax``, fitted to placed accelerators) gives its clock. A refused
   config lists every reason (``Candidate.reasons``): each resource it lacks, and each limit
   the compiler refuses (:func:`refusals`: the compiler stops at the first; that limit is
   raised and the model compiled again, so a too-short ``max_k`` does not hide a too-small
   ``spad_c_depth``). Configs over the budget are compiled too, for their reasons.
   Candidates run in parallel on the local cores (``jobs`` workers of
   :mod:`pycde_accel.workers`, see *Workers* below), or with ``ray`` as Ray tasks on a cluster
   (:mod:`pycde_accel.rayjobs`; the same candidates, the same ranking).
4. *Rank* by predicted latency (cycles / modelled Fmax; ties: fewer DSP, BRAM, LUT), and the
   *Pareto front* (:func:`pareto`) of latency against resources: a candidate is on the front
   when no other is at least as good in predicted latency, DSP, BRAM and LUT and better in one.
   Beside: ``util`` (the largest share of the device's DSP, BRAM and LUT a config takes),
   GMAC/s of the model's MACs (no channel padding) and the fraction of the device's peak
   (its DSP count x the Fmax: model MACs / (cycles x DSP count)).
5. *Confirm* (:func:`confirm`): the best N are simulated in Verilator (``simulate.simulate``:
   bit-exact check, measured cycles next to the prediction), in parallel (the Verilator builds
   dominate); with ``synth`` also placed (``fpga.project.synth_model``: measured LUT, DSP,
   BRAM and Fmax, for open-flow targets; the table shows the placed Fmax and the latency at
   it beside the model's). Each candidate has a time limit
   (:func:`confirm_time_limit`: start-up, plus a Verilator build allowance that grows with the
   array, plus the predicted cycles at a slow simulation rate, plus synthesis); a candidate
   whose worker passes it or dies gets ``confirm_error`` (``"candidate KEY did not finish
   within N s"``, ``"candidate KEY: the worker process died (killed by SIGKILL)"``) and the
   others are still confirmed and reported.

*Workers* are started with ``spawn``, not ``fork``: the parent has run the frontend by then,
and torch's OpenMP/intra-op thread pools (and MLIR's) leave locks that a forked child inherits
held by threads it does not have (the child then waits forever in its first parallel region).
The parent runs the frontend once and pickles its result into a temporary folder; each worker
loads it (lenet5: 1.3 MB, milliseconds) instead of re-running the frontend; a result that
cannot be pickled or loaded (e.g. a module defined in a model file the worker has not
imported) is recomputed by the worker. See :mod:`pycde_accel.workers` for the supervision
(process groups, time limits, dead workers).

:func:`run_dse` does all of it and returns a :class:`DseResult`; with ``out`` it writes
``out/dse.json`` (``DseResult.to_dict()``) and the confirmation folders ``out/confirm/KEY``
through :func:`pycde_accel.outdir.staged_output`, so a run that fails or is interrupted leaves
no output behind. :func:`table_lines` is what the CLI prints.

``PYCDE_ACCEL_DSE_TIME_SCALE`` (a number, default 1) multiplies every time limit, for a
machine much slower or busier than the allowances assume.
"""

from __future__ import annotations

import itertools
import json
import os
import pickle
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .config import AccelConfig
from .errors import UserError

Progress = Callable[[str], None]

DEFAULT_ROWS = (2, 4, 8, 16)
DEFAULT_COLS = (4, 8, 16, 32)
#: AXI widths the default sweep tries. 128 is left out to keep the default sweep small: it
#: needs ``cols`` a multiple of 16 (a beat of 16 bytes), so most of the default arrays would be
#: refused. It builds and ranks (the 8x16/128 is a placed point of ``fpga.fit``): ``--axi 128``
#: (or ``--axi 64,128``) adds it.
DEFAULT_AXI = (32, 64)
DEFAULT_SPAD = (256, 512, 1024, 2048)
DEFAULT_SPAD_C = (64, 256)
#: max_k values the default sweep tries, each with the narrowest accumulator that proves it
#: (``config.required_acc_width``): 131071 with 32 bits (the default), 4095 with 27 (enough
#: for a 3x3 conv of 256 input channels: K = 2304). A narrower accumulator is less fabric per
#: PE, so the Fmax model (``fpga.fit.predict_fmax``) predicts it a little faster.
DEFAULT_MAX_K = (131071, 4095)


def _quiet(_: str) -> None:
    pass


@dataclass
class Candidate:
    """One config of the sweep and what is known about it."""

    config: AccelConfig
    resources: dict = field(default_factory=dict)   # fit.estimate: dsp, bram, lut, ...
    util: float = 0.0                 # max fraction of the device's DSP / BRAM / LUT
    status: str = "ok"                # ok | no-fit | refused (by the compiler) | error
    reasons: list = field(default_factory=list)   # every reason it is refused (budget, compiler)
    fmax_mhz: float | None = None     # the Fmax model's clock (fpga.fit.predict_fmax)
    fmax_source: str = ""             # "model" or "config clock" (no placed data for the family)
    model_macs: int | None = None     # the model's MACs (Node.macs; channel padding not counted)
    device_dsp: int = 0               # the device's hard multipliers (for the peak fraction)
    predicted_cycles: int | None = None
    predicted_layers: list = field(default_factory=list)
    simulated_cycles: int | None = None
    bit_exact: bool | None = None
    synth: dict | None = None
    confirm_error: str | None = None  # why confirmation gave no result (names the candidate)
    seconds: float = 0.0

    @property
    def key(self) -> str:
        c = self.config
        key = (f"{c.rows}x{c.cols}/axi{c.axi_data_width}/spad{c.spad_a_depth}"
               f"/c{c.spad_c_depth}")
        if c.spad_b_depth != c.spad_a_depth:
            key += f"/b{c.spad_b_depth}"
        if c.max_k != AccelConfig.max_k:
            key += f"/k{c.max_k}"
        if c.lanes != AccelConfig(rows=c.rows, cols=c.cols, axi_data_width=c.axi_data_width).lanes:
            key += f"/st{c.lanes}"     # fewer STORE lanes than the default: the DSPs ran out
        return key

    @property
    def reason(self) -> str:
        """Every reason in one line."""
        return "; ".join(self.reasons)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.predicted_cycles is not None

    @property
    def clock_mhz(self) -> float:
        """The clock the ranking assumes: the Fmax model's, else the config's clock."""
        return self.fmax_mhz if self.fmax_mhz else self.config.clock_mhz

    def latency_us(self) -> float | None:
        """Predicted latency: predicted cycles at the model's Fmax."""
        if self.predicted_cycles is None:
            return None
        return self.predicted_cycles / self.clock_mhz

    @property
    def placed_fmax_mhz(self) -> float | None:
        """The Fmax nextpnr reported for this config (``--synth``), else None."""
        if self.synth and self.synth.get("fmax_mhz"):
            return float(self.synth["fmax_mhz"])
        return None

    @property
    def fmax_model_error_pct(self) -> float | None:
        """(model Fmax - placed Fmax) / placed Fmax in percent, once placed."""
        if not self.placed_fmax_mhz or not self.fmax_mhz or self.fmax_source != "model":
            return None
        return 100.0 * (self.fmax_mhz - self.placed_fmax_mhz) / self.placed_fmax_mhz

    def placed_latency_us(self) -> float | None:
        """Cycles (simulated if confirmed, else predicted) at the placed Fmax."""
        cyc = self.simulated_cycles or self.predicted_cycles
        if cyc is None or not self.placed_fmax_mhz:
            return None
        return cyc / self.placed_fmax_mhz

    def gmacs(self) -> float | None:
        """The model's MACs per second at the predicted latency, in GMAC/s."""
        lat = self.latency_us()
        if not lat or not self.model_macs:
            return None
        return self.model_macs / lat / 1e3

    def peak_fraction(self) -> float | None:
        """Achieved MAC/s over the device's peak (every hard multiplier busy at the same
        clock): model MACs / (cycles x device DSP count); the clock cancels out."""
        if not self.predicted_cycles or not self.model_macs or not self.device_dsp:
            return None
        return self.model_macs / (self.predicted_cycles * self.device_dsp)

    @property
    def model_error_pct(self) -> float | None:
        if self.predicted_cycles is None or not self.simulated_cycles:
            return None
        return 100.0 * (self.predicted_cycles - self.simulated_cycles) / self.simulated_cycles

    def rank_key(self):
        r = self.resources
        return (self.latency_us(), r.get("dsp", 0), r.get("bram", 0), r.get("lut", 0),
                self.config.axi_data_width, self.config.spad_a_depth, self.config.spad_c_depth,
                self.config.spad_b_depth, -self.config.max_k)

    def to_dict(self) -> dict:
        c = self.config
        d = {"key": self.key, "rows": c.rows, "cols": c.cols, "axi_data_width": c.axi_data_width,
             "spad_a_depth": c.spad_a_depth, "spad_b_depth": c.spad_b_depth,
             "spad_c_depth": c.spad_c_depth, "max_k": c.max_k, "acc_width": c.acc_width,
             "store_lanes": c.lanes, "status": self.status, "reason": self.reason,
             "reasons": list(self.reasons),
             "resources": dict(self.resources), "util": round(self.util, 4),
             "predicted_cycles": self.predicted_cycles,
             "fmax_mhz": None if self.fmax_mhz is None else round(self.fmax_mhz, 2),
             "fmax_source": self.fmax_source,
             "predicted_us": None if self.latency_us() is None else round(self.latency_us(), 3),
             "model_macs": self.model_macs,
             "gmacs": None if self.gmacs() is None else round(self.gmacs(), 4),
             "peak_fraction": (None if self.peak_fraction() is None
                               else round(self.peak_fraction(), 4)),
             "placed_us": (None if self.placed_latency_us() is None
                           else round(self.placed_latency_us(), 3)),
             "fmax_model_error_pct": (None if self.fmax_model_error_pct is None
                                      else round(self.fmax_model_error_pct, 2)),
             "simulated_cycles": self.simulated_cycles, "bit_exact": self.bit_exact,
             "model_error_pct": (None if self.model_error_pct is None
                                 else round(self.model_error_pct, 3)),
             "synth": self.synth, "confirm_error": self.confirm_error,
             "predicted_layers": self.predicted_layers}
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
          max_k: Iterable[int] | None = None, spad_b: Iterable[int] | None = None,
          target: str | None = None) -> list[AccelConfig]:
    """Every buildable config of the cross product (cols a multiple of the AXI beat in bytes).
    ``spad`` sets spad_a_depth, and spad_b_depth alike unless ``spad_b`` lists its own values;
    ``max_k`` (default: the base config's only) comes with the narrowest accumulator that
    proves it (``config.required_acc_width``; the base's acc_width for the base's max_k)."""
    from .config import required_acc_width
    from .contract import check_config
    from .errors import ConfigError
    from .fpga import fit
    from .fpga.devices import get_device

    base = base or AccelConfig()
    ks = tuple(max_k) if max_k is not None else (base.max_k,)
    out = []
    for r, c, w, s, sc, k, sb in itertools.product(rows, cols, axi, spad, spad_c, ks,
                                                  tuple(spad_b) if spad_b else (None,)):
        acc = base.acc_width if k == base.max_k else required_acc_width(base.data_width, k)
        cfg = base.replace(rows=r, cols=c, axi_data_width=w, spad_a_depth=s,
                           spad_b_depth=s if sb is None else sb, spad_c_depth=sc, max_k=k,
                           acc_width=acc, **({"target": target} if target else {}))
        try:
            cfg.validate()
            check_config(cfg)
        except ConfigError:
            continue
        out.append(fit.fit_store_lanes(cfg, get_device(cfg.target)))
    return out


# ---- evaluation (runs in the worker processes) ---------------------------------------------
_FE: dict = {}


def _fe_key(model, seed: int) -> tuple:
    return (model if model is None or isinstance(model, str) else id(model), seed)


def _frontend(model: str | None, seed: int):
    key = _fe_key(model, seed)
    if key not in _FE:
        from . import frontend
        _FE[key] = frontend.run(model, seed=seed, eval_batches=1)
    return _FE[key]


def _hand_over(model, seed: int, folder: Path) -> str | None:
    """Run the frontend here (once) and pickle its result into ``folder`` for the workers;
    the file's path, or None when the result cannot be pickled (the workers recompute it)."""
    fe = _frontend(model, seed)
    path = Path(folder) / "frontend.pkl"
    try:
        path.write_bytes(pickle.dumps(fe, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:
        path.unlink(missing_ok=True)
        return None
    return str(path)


def _take_over(path: str | None, model, seed: int) -> None:
    """Worker set-up: the parent's frontend result from ``path``; if it cannot be loaded here,
    :func:`_frontend` recomputes it on first use."""
    if path is None:
        return
    try:
        with open(path, "rb") as fh:
            _FE[_fe_key(model, seed)] = pickle.load(fh)
    except Exception:
        pass


def _utilization(res: dict, device) -> float:
    fr = [res.get("dsp", 0) / device.dsp if device.dsp else 0.0,
          res.get("bram", 0) / device.bram if device.bram else 0.0,
          res.get("lut", 0) / device.lut if device.lut else 0.0]
    return max(fr)


#: Config limits a compiler refusal can name, and how :func:`_lift` raises each one so that
#: the compile can go on to the next limit: (words in the message, fields set).
_LIFTS = (
    (("max_k",), {"max_k": AccelConfig.max_k, "acc_width": AccelConfig.acc_width}),
    (("spad depths", "scratchpad"), {"spad_a_depth": 1 << 16, "spad_b_depth": 1 << 16}),
    (("spad_c_depth", "X buffer"), {"spad_c_depth": 1 << 16}),
    (("axi_addr_width",), {"axi_addr_width": 48}),
)


def _lift(config: AccelConfig, message: str) -> AccelConfig | None:
    """``config`` with every limit ``message`` names raised past anything a model needs, or
    None when it names no limit (or those are already raised)."""
    changes = {}
    for words, fields in _LIFTS:
        if any(w in message for w in words):
            for k, v in fields.items():
                if getattr(config, k) < v:
                    changes[k] = v
    return config.replace(**changes) if changes else None


def refusals(fe, config: AccelConfig):
    """Compile and predict ``fe`` for ``config``: ``(prediction, reasons)``. The compiler stops
    at the first limit a layer passes; each refusal's limit is raised (:func:`_lift`) and the
    model compiled again, so ``reasons`` names every limit of ``config`` the model passes (the
    prediction is None when there is one)."""
    from . import perfmodel
    from .backend import compile_program

    reasons, cfg = [], config
    for _ in range(len(_LIFTS) + 1):
        try:
            compiled = compile_program(fe, cfg)
            pred = perfmodel.predict(compiled, cfg)
        except UserError as e:
            reasons.append(str(e))
            cfg = _lift(cfg, str(e))
            if cfg is None:
                break
            continue
        return (pred if not reasons else None), reasons
    return None, reasons


def evaluate(model: str | None, config: AccelConfig, *, seed: int = 0, fe=None) -> Candidate:
    """Fit check, compile and predict one config (never raises for a bad candidate). A
    candidate over the device's budget is compiled all the same (it is not ranked) so that
    its refusal lists every reason: each resource it lacks and each limit the compiler
    refuses (:func:`refusals`)."""
    from .fpga import fit
    from .fpga.devices import get_device

    t0 = time.time()
    cand = Candidate(config=config)
    device = get_device(config.target)
    cand.resources = fit.estimate(config, device).to_dict()
    cand.util = _utilization(cand.resources, device)
    cand.device_dsp = device.dsp
    fmax = fit.predict_fmax(config, device)
    cand.fmax_mhz, cand.fmax_source = ((fmax, "model") if fmax else
                                       (config.clock_mhz, "config clock"))
    over = fit.overruns(config, device)
    cand.reasons = [f"config {config.array} does not fit {device.name} ({device.part}): "
                    f"needs {o}" for o in over]
    try:
        fe = fe if fe is not None else _frontend(model, seed)
        # the board's memory is charged at the clock the candidate is expected to run at
        pred, refused = refusals(fe, config.replace(clock_mhz=round(cand.fmax_mhz, 3)))
        cand.model_macs = sum(n.macs(fe.quantized.graph) for n in fe.quantized.graph.nodes)
    except Exception as e:  # a bug for this config: keep sweeping, say what it was
        cand.status = "error"
        cand.reasons.append(f"{type(e).__name__}: {e}")
        return cand
    cand.reasons += refused
    if over or refused:
        cand.status = "no-fit" if over else "refused"
        return cand
    cand.predicted_cycles = pred.total_cycles
    cand.predicted_layers = [l.cycles for l in pred.layers]
    cand.seconds = time.time() - t0
    return cand


def _evaluate_job(model, cfg, seed) -> Candidate:
    return evaluate(model, cfg, seed=seed)


def _failed(config: AccelConfig, reason: str) -> Candidate:
    """A candidate whose evaluation gave no result (its worker died or hung)."""
    from .fpga import fit
    from .fpga.devices import get_device

    device = get_device(config.target)
    cand = Candidate(config=config, status="error", reasons=[reason])
    cand.resources = fit.estimate(config, device).to_dict()
    cand.util = _utilization(cand.resources, device)
    return cand


#: time limit of one config's prediction (compile + perfmodel take seconds; start-up included)
PREDICT_LIMIT_S = 600.0


def time_scale() -> float:
    """``PYCDE_ACCEL_DSE_TIME_SCALE`` (default 1): a factor on every time limit."""
    text = os.environ.get("PYCDE_ACCEL_DSE_TIME_SCALE", "").strip()
    if not text:
        return 1.0
    try:
        v = float(text)
    except ValueError:
        raise UserError(f"PYCDE_ACCEL_DSE_TIME_SCALE={text!r}: expected a positive number")
    if not v > 0:
        raise UserError(f"PYCDE_ACCEL_DSE_TIME_SCALE={text!r}: expected a positive number")
    return v


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else (os.cpu_count() or 1))


def sweep(model: str | None, configs: list[AccelConfig], *, seed: int = 0, jobs: int | None = None,
          progress: Progress = _quiet, ray: str | None = None) -> list[Candidate]:
    """Evaluate ``configs`` (in parallel when ``jobs`` > 1; as Ray tasks with ``ray``, see
    :func:`_run_jobs`); return them ranked: fitting, compiled candidates by predicted latency
    first, then the refused ones."""
    jobs = jobs or default_jobs()
    progress(f"predicting {len(configs)} configs on "
             + (f"{jobs} worker(s)" if ray is None else f"Ray ({ray or 'local'})"))
    args = [(model, c, seed) for c in configs]
    if ray is None and (jobs == 1 or len(configs) <= 1):
        return rank([_evaluate_job(*a) for a in args])
    limit = PREDICT_LIMIT_S * time_scale()
    outs = _run_jobs(_evaluate_job, args, model=model, seed=seed, jobs=jobs,
                     limits=[limit] * len(args),
                     names=[f"candidate {Candidate(config=c).key}" for c in configs], ray=ray)
    cands = [o.value if o.ok else _failed(c, o.error) for c, o in zip(configs, outs)]
    return rank(cands)


def _take_over_data(data: bytes | None, model, seed: int) -> None:
    """Ray worker set-up: the parent's frontend result from its pickled bytes (else
    :func:`_frontend` recomputes it on first use)."""
    if data is None:
        return
    try:
        _FE[_fe_key(model, seed)] = pickle.loads(data)
    except Exception:
        pass


def _run_jobs(fn, args, *, model, seed: int, jobs: int, limits, names, ray: str | None,
              progress: Progress = _quiet):
    """``run_jobs`` over the local worker pool (``ray`` None), or the same tasks as Ray tasks
    (:mod:`pycde_accel.rayjobs`; ``ray``: a cluster address, ``""`` for a local instance); the
    workers get the parent's frontend result either way (a file here, the object store there)."""
    if ray is None:
        from .workers import run_jobs
        with tempfile.TemporaryDirectory(prefix="pycde-accel-dse-") as tmp:
            fe_path = _hand_over(model, seed, Path(tmp))
            return run_jobs(fn, args, jobs=jobs, limits=limits, names=names,
                            init=(_take_over, (fe_path, model, seed)), progress=progress)
    from .rayjobs import run_jobs_ray
    with tempfile.TemporaryDirectory(prefix="pycde-accel-dse-") as tmp:
        fe_path = _hand_over(model, seed, Path(tmp))
        data = Path(fe_path).read_bytes() if fe_path else None
    return run_jobs_ray(fn, args, address=ray or None, jobs=jobs, limits=limits, names=names,
                        init=(_take_over_data, (data, model, seed)), progress=progress)


def rank(cands: list[Candidate]) -> list[Candidate]:
    ok = sorted((c for c in cands if c.ok), key=Candidate.rank_key)
    rest = [c for c in cands if not c.ok]
    return ok + rest


def objectives(c: Candidate) -> tuple:
    """What the Pareto front minimizes: predicted latency (cycles / modelled Fmax), DSP, BRAM,
    LUT."""
    r = c.resources
    return (c.latency_us(), r.get("dsp", 0), r.get("bram", 0), r.get("lut", 0))


def dominates(a: Candidate, b: Candidate) -> bool:
    """a is at least as good as b in every objective and better in one."""
    oa, ob = objectives(a), objectives(b)
    return all(x <= y for x, y in zip(oa, ob)) and oa != ob


def pareto(cands: list[Candidate]) -> list[Candidate]:
    """The candidates no other one dominates in (predicted latency, DSP, BRAM, LUT), by latency;
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
#: Allowances of a candidate's confirmation (seconds, before PYCDE_ACCEL_DSE_TIME_SCALE); the
#: build figures are a cold Verilator build of the accelerator plus its native harness with
#: two of them sharing two busy cores (12x8: about 4-6 min), with room to spare.
STARTUP_S = 120.0          # a fresh interpreter: torch, pycde, the frontend result
BUILD_S = 600.0            # a Verilator build, plus ...
BUILD_S_PER_PE = 8.0       # ... per PE of the array
SIM_CYCLES_PER_S = 5000.0  # the slowest engine (cocotb + AxiRam) is about 13k cycles/s
SYNTH_S = 900.0            # Yosys + nextpnr, plus ...
SYNTH_S_PER_PE = 40.0      # ... per PE


def confirm_time_limit(cand: Candidate, synth: bool = False) -> float:
    """Seconds a candidate's confirmation may take before it is stopped and reported."""
    pes = cand.config.rows * cand.config.cols
    t = STARTUP_S + BUILD_S + BUILD_S_PER_PE * pes
    t += (cand.predicted_cycles or 1_000_000) / SIM_CYCLES_PER_S
    if synth:
        t += SYNTH_S + SYNTH_S_PER_PE * pes
    return t * time_scale()


def _confirm_job(model, cfg, seed, work, synth, cache_root) -> dict:
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
                out["synth"] = {"written": [os.path.relpath(p, work) for p in s.written]}
        except Exception as e:
            out["synth"] = {"error": str(e)}
    return out


def confirm(model: str | None, cands: list[Candidate], out: Path, *, seed: int = 0,
            synth: bool = False, jobs: int | None = None, cache_root: Path | None = None,
            time_limit: Callable[[Candidate], float] | None = None,
            progress: Progress = _quiet, ray: str | None = None) -> list[Candidate]:
    """Simulate (and with ``synth`` synthesize) ``cands`` in ``jobs`` worker processes (one
    candidate at a time each, ``out/KEY`` its work folder); fill their measured fields in
    place and return them. A candidate that fails, passes its time limit (``time_limit(cand)``
    seconds, default :func:`confirm_time_limit`) or whose worker dies gets ``confirm_error``,
    a line naming it; the others are confirmed all the same. ``cache_root``: the Verilator
    build cache (default ``sim.runner.default_cache_root()``)."""
    if not cands:
        return cands
    jobs = min(jobs or default_jobs(), len(cands))
    out = Path(out).resolve()
    limit = time_limit or (lambda c: confirm_time_limit(c, synth))
    args = [(model, c.config, seed, str(out / c.key.replace("/", "_")), synth,
             None if cache_root is None else str(Path(cache_root).resolve())) for c in cands]
    progress(f"confirming {len(cands)} candidate(s) in Verilator"
             f"{' and synthesis' if synth else ''} on {jobs} worker(s)")
    outs = _run_jobs(_confirm_job, args, model=model, seed=seed, jobs=jobs,
                     limits=[limit(c) for c in cands], names=[f"candidate {c.key}" for c in cands],
                     ray=ray, progress=progress)
    for c, o in zip(cands, outs):
        if not o.ok:
            c.confirm_error = o.error
            continue
        r = o.value
        c.simulated_cycles, c.bit_exact, c.synth = r["simulated_cycles"], r["bit_exact"], r["synth"]
        if r["error"]:
            c.confirm_error = f"candidate {c.key}: {r['error']}"
    return cands


def run_dse(model: str | None, target: str, out: Path | None, *,
            base: AccelConfig | None = None, configs: list[AccelConfig] | None = None,
            confirm_n: int = 2, synth: bool = False, seed: int = 0, jobs: int | None = None,
            progress: Progress = _quiet, ray: str | None = None) -> DseResult:
    """Sweep, rank, confirm the best ``confirm_n``; return the :class:`DseResult`. With ``out``
    write ``out/dse.json`` and ``out/confirm/`` all or nothing (module docstring); without it
    (``confirm_n`` must be 0) write nothing."""
    from .outdir import staged_output

    if out is None:
        if confirm_n > 0:
            raise ValueError("run_dse: confirming candidates needs an output folder")
        return _run_dse(model, target, None, base=base, configs=configs, confirm_n=0,
                        synth=synth, seed=seed, jobs=jobs, progress=progress, ray=ray)
    out = Path(out)
    with staged_output(out) as stage:
        res = _run_dse(model, target, stage, base=base, configs=configs, confirm_n=confirm_n,
                       synth=synth, seed=seed, jobs=jobs, progress=progress, ray=ray)
        # the confirmation ran in the staging folder: name the final one in what is kept
        staged, final = str(stage.resolve()), str(out.resolve())
        for c in res.candidates:
            if c.confirm_error:
                c.confirm_error = c.confirm_error.replace(staged, final)
        (stage / "dse.json").write_text(json.dumps(res.to_dict(), indent=1) + "\n")
    return res


def _run_dse(model, target: str, out: Path | None, *, base, configs, confirm_n: int,
             synth: bool, seed: int, jobs: int | None, progress: Progress,
             ray: str | None = None, _connected: bool = False) -> DseResult:
    from .fpga.devices import get_device
    if ray is not None and not _connected:  # one Ray session for the sweep and the confirmation
        from .rayjobs import session
        with session(ray or None, jobs):
            return _run_dse(model, target, out, base=base, configs=configs,
                            confirm_n=confirm_n, synth=synth, seed=seed, jobs=jobs,
                            progress=progress, ray=ray, _connected=True)

    device = get_device(target)
    t0 = time.time()
    configs = configs if configs is not None else space(base, target=device.name)
    configs = [c.replace(target=device.name) for c in configs]
    if not configs:
        raise UserError("dse: the sweep has no buildable config (cols must be a multiple of "
                        "the AXI width in bytes)")
    cands = sweep(model, configs, seed=seed, jobs=jobs, progress=progress, ray=ray)
    ranked = [c for c in cands if c.ok]
    if not ranked:
        reasons = sorted({c.status for c in cands})
        raise UserError(f"dse: no config of the sweep fits {device.name} and compiles "
                        f"({len(cands)} tried: {', '.join(reasons)}; {cands[0].key} is refused "
                        f"for {len(cands[0].reasons)} reason(s): {cands[0].reason})")
    if confirm_n > 0:
        confirm(model, ranked[:confirm_n], Path(out) / "confirm", seed=seed, synth=synth,
                jobs=jobs, progress=progress, ray=ray)
    return DseResult(model=model or "default", target=device.name, device=device.to_dict(),
                     candidates=cands, seconds=time.time() - t0)


# ---- report ---------------------------------------------------------------------------------
def _f(v, fmt: str) -> str:
    return "" if v is None else format(v, fmt)


def _row(i, c: Candidate, mark: str = "") -> str:
    r = c.resources
    sim = "" if c.simulated_cycles is None else str(c.simulated_cycles)
    err = "" if c.model_error_pct is None else f"{c.model_error_pct:+.1f}%"
    exact = "" if c.bit_exact is None else ("yes" if c.bit_exact else "NO")
    if c.confirm_error:
        sim, mark = "error", f"{mark}  error: {c.confirm_error}"
    return (f"  {i:>3} {c.config.array:>6} {c.config.axi_data_width:>4} {c.config.spad_a_depth:>5} "
            f"{c.config.spad_c_depth:>5} {c.config.max_k:>6} {c.predicted_cycles:>10} "
            f"{c.clock_mhz:>6.1f} {c.latency_us():>9.1f} {_f(c.gmacs(), '.3f'):>7} "
            f"{_f(c.peak_fraction(), '.1%'):>6} "
            f"{r.get('dsp', 0):>5} {r.get('bram', 0):>5} {r.get('lut', 0):>7} {c.util:>6.1%} "
            f"{sim:>10} {err:>7} {exact:>5} {_f(c.placed_fmax_mhz, '.1f'):>6} "
            f"{_f(c.placed_latency_us(), '.1f'):>9}{mark}")


HEADER = (f"  {'#':>3} {'array':>6} {'axi':>4} {'spad':>5} {'spadC':>5} {'max_k':>6} "
          f"{'pred cyc':>10} {'MHz':>6} {'pred us':>9} {'GMAC/s':>7} {'peak':>6} {'DSP':>5} "
          f"{'BRAM':>5} {'LUT':>7} {'util':>6} {'sim cyc':>10} {'err':>7} {'exact':>5} "
          f"{'Fmax':>6} {'placed us':>9}")


def fmax_model_line() -> str:
    """What the Fmax model is and how well it fits its placed points."""
    from .fpga import fit
    f = fit.fit_fmax()
    res = ", ".join(f"{p.rows}x{p.cols}/acc{p.acc_width} {p.fmax_mhz:g} MHz ({r:+.1f}%)"
                    for p, r in zip(f.points, f.residuals_pct()))
    return (f"MHz = Fmax model (fpga.fit.fit_fmax, {fit.FMAX_FAMILY} only): period "
            f"{f.a_ns:.3f} ns + {f.b_ns_per_kbit:.4f} ns per kbit of accumulators (rows x cols "
            f"x acc_width), at most {fit.ARRAY_CEILING_MHZ:g} MHz; placed points (model error): "
            f"{res}")


#: the configs named on one line of the refused list (the rest are counted)
REFUSED_KEYS = 3


def table_lines(res: DseResult, top: int = 10) -> list[str]:
    """The CLI's report: the best ``top`` by predicted latency, then the Pareto front, then
    why the refused candidates are refused (up to ``top`` distinct sets of reasons, each with
    the configs it refused)."""
    ranked = res.ranked
    counts = res.to_dict()["counts"]
    dev = res.device
    lines = [f"DSE of {res.model} for {res.target} ({dev.get('part', '')}: {dev.get('dsp')} DSP, "
             f"{dev.get('bram')} BRAM, {dev.get('lut')} LUT): {len(res.candidates)} configs, "
             + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
             + f" ({res.seconds:.1f} s)"]
    if ranked:
        lines += [
            "latency = predicted cycles (pycde_accel.perfmodel) / MHz; GMAC/s = the model's MACs "
            "(no padding) / latency; peak = GMAC/s over the device's DSP count x MHz; util = "
            "max share of the device's DSP/BRAM/LUT; Fmax / placed us: nextpnr's (--synth)",
            fmax_model_line()]
        other = sorted({c.fmax_source for c in ranked} - {"model"})
        if other:
            lines.append(f"no Fmax model for {res.target}'s family: latency at the config's "
                         f"clock ({', '.join(other)})")
    else:
        lines.append("no candidate fits and compiles")
    front = {id(c) for c in res.pareto}
    lines.append(f"best {min(top, len(ranked))} by predicted latency (* = on the Pareto front):")
    lines.append(HEADER)
    for i, c in enumerate(ranked[:top]):
        lines.append(_row(i + 1, c, " *" if id(c) in front else ""))
    lines.append("Pareto front (no other config has lower or equal latency, DSP, BRAM and LUT):")
    lines.append(HEADER)
    index = {id(c): i + 1 for i, c in enumerate(ranked)}
    for c in res.pareto:
        lines.append(_row(index[id(c)], c))
    placed = sorted((c for c in ranked if c.placed_latency_us() is not None),
                    key=Candidate.placed_latency_us)
    if placed:
        lines.append("placed (--synth), by latency at the placed Fmax:")
        for c in placed:
            err = c.fmax_model_error_pct
            lines.append(f"  {c.key}: {c.placed_fmax_mhz:.2f} MHz placed (model {c.clock_mhz:.2f}"
                         + ("" if err is None else f", {err:+.1f}%") + f"), "
                         f"{c.placed_latency_us():.1f} us")
    refused = [c for c in res.candidates if not c.ok]
    if refused:
        # candidates refused for the same reasons (an array too large at every AXI width and
        # scratchpad depth) are listed once, so ``top`` groups show that many distinct causes
        groups: dict[tuple, list[Candidate]] = {}
        for c in refused:
            groups.setdefault((c.status, tuple(c.reasons)), []).append(c)
        lines.append(f"refused ({len(refused)}), every reason:")
        for (status, reasons), cs in list(groups.items())[:top]:
            keys = ", ".join(c.key for c in cs[:REFUSED_KEYS])
            if len(cs) > REFUSED_KEYS:
                keys += f" and {len(cs) - REFUSED_KEYS} more"
            lines.append(f"  {keys} ({status}" + (f", {len(cs)} configs" if len(cs) > 1 else "")
                         + "):")
            lines += [f"    - {r}" for r in reasons]
        if len(groups) > top:
            rest, sets = sum(len(cs) for cs in list(groups.values())[top:]), len(groups) - top
            lines.append(f"  ... and {rest} more ({sets} other set{'s' * (sets > 1)} of "
                         f"reasons) in dse.json")
    return lines
