"""Fuzz the whole compiler: random valid models (``bench/fuzzgen.py``) through the frontend, the
back end and the golden command executor, bit-exact against the integer reference; some of them
through the accelerator in Verilator as well.

    python bench/fuzz.py --cases N --sim-cases S --seed X [--jobs J] [--out DIR]

Case ``i`` of seed ``X`` is ``fuzzgen.generate(case_seed(X, i))``. Every ``N // S``-th case is
a simulation case: its config is drawn from ``fuzzgen.SIM_POOL`` (so the Verilator builds are
reused; the build cache is the CLI's), it runs on the native engine, or, for every fourth one,
on the AxiRam engine with random AXI pauses (on the default config, to need one cocotb build). A case that crashes (an exception that is no
``UserError``), mismatches, is refused (``UserError``: the generator makes only models the
compiler claims to support) or hangs (over ``--timeout`` seconds) is saved under ``--out``
(default ``bench/out/fuzz``) as ``<kind>-<case>/model.py``, ``config.json`` and ``repro.sh``,
the one-line command that reproduces it (``python bench/fuzz.py --replay DIR``).

The last line of stdout is a JSON object: ``cases``, ``mismatches``, ``crashes``, ``refusals``,
``hangs``, ``sim_cases``, ``sim_mismatches``, ``seconds``, ``cases_per_second``, ``seed``,
``jobs``, ``build_seconds`` (the workers' time in emitting and building accelerators, which the
per-case time limit leaves out) and the mean wall seconds of a golden and of a simulation case
(builds left out).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shlex
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fuzzgen  # noqa: E402


class Hang(Exception):
    pass


def case_seed(seed: int, i: int) -> int:
    return seed * 1_000_003 + i


def _alarm(signum, frame):
    raise Hang("time limit")


def check_case(source: str, config, work: Path, *, sim: bool = False, axi_pause: float = 0.0,
               sim_seed: int = 0, cache_root: Path | None = None, builds: dict | None = None,
               keep_dir: Path | None = None) -> dict:
    """Run one model file text through the flow; return ``{"status": ok|mismatch|refused|crash,
    "detail": ..., "sim": bool, "sim_ok": bool|None}``."""
    import numpy as np

    from pycde_accel import frontend
    from pycde_accel.backend import cmdexec, compile_program
    from pycde_accel.errors import UserError
    from pycde_accel.frontend import reference

    work.mkdir(parents=True, exist_ok=True)
    path = work / "model.py"
    path.write_text(source)
    res = {"status": "ok", "detail": "", "sim": sim, "sim_ok": None}
    stage = "frontend"
    try:
        fe = frontend.run(str(path), eval_batches=1)
        xs = [t.detach().double().numpy() for t in fe.model.example_inputs]
        xq = reference.quantize_inputs(fe.quantized, xs)
        want = reference.run(fe.quantized, xq).outputs
        stage = "back end"
        cp = compile_program(fe, config)
        stage = "command executor"
        outs, _ = cmdexec.run(cp, xq)
        bad = [i for i, (a, b) in enumerate(zip(outs, want))
               if np.shape(a) != np.shape(b) or not np.array_equal(a, b)]
        if bad or len(outs) != len(want):
            res.update(status="mismatch", detail=f"command executor: outputs {bad} differ from the "
                                                 f"integer reference")
            return res
        if sim:
            stage = "simulation"
            from pycde_accel import simulate as S
            engine = "axiram" if axi_pause > 0 else "native"
            # the Verilator builds are the config's, not the case's: no time limit on them
            left = signal.alarm(0)
            t_build = time.monotonic()
            key = (config, engine == "axiram")
            build = (builds or {}).get(key)
            if build is None:
                # a build kept for later cases lives in a folder of its own, not in the case's
                where = work / "accel" if builds is None else \
                    Path(tempfile.mkdtemp(prefix="accel-", dir=keep_dir))
                build = S.build_accelerator(config, where, cache_root=cache_root,
                                            defer=engine != "axiram")
                if builds is not None:
                    builds[key] = build
            if engine == "axiram":
                from pycde_accel.sim import runner
                build = runner.ensure_built(build)
            else:
                from pycde_accel.sim import fast
                fast.build_native(build, mem_log2=fast.mem_log2(len(cp.load_inputs(xq))))
            res["build_seconds"] = time.monotonic() - t_build
            if left:
                signal.alarm(left)
            r = S.simulate(fe, config, work / "sim", sim=build, axi_pause=axi_pause, seed=sim_seed,
                           engine=engine, compiled=cp)
            res["sim_ok"] = r.bit_exact
            if not r.bit_exact:
                res.update(status="mismatch", detail=f"Verilator: {'; '.join(r.mismatches)}")
    except Hang:
        res.update(status="hang", detail=f"{stage}: over the time limit")
    except UserError as e:
        # a refusal of the frontend or back end is a documented limit; a simulation that fails
        # (an accelerator error, the watchdog, a layer time limit) is a failure of the flow
        res.update(status="crash" if stage == "simulation" else "refused", detail=f"{stage}: {e}")
    except Exception as e:  # noqa: BLE001 - every other exception is a compiler crash
        tb = traceback.extract_tb(e.__traceback__)
        where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"
        res.update(status="crash", detail=f"{stage}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
                                          f"({where})",
                   traceback="".join(traceback.format_exception(e)))
    return res


# ---- worker side -------------------------------------------------------------------------
_BUILDS: dict = {}


def _init_worker():
    import torch
    torch.set_num_threads(1)
    signal.signal(signal.SIGALRM, _alarm)


def _run_one(job: dict) -> dict:
    from pycde_accel.config import AccelConfig
    case = fuzzgen.generate(job["seed"], sim=job["sim"])
    cfg = AccelConfig.from_dict(job["config"]) if job.get("config") else case.config
    if job["axi_pause"] > 0:
        cfg = fuzzgen.SIM_POOL[0]           # one cocotb (AxiRam) build for the paused cases
    source = job.get("source") or case.source
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pycde-fuzz-") as d:
        signal.alarm(job["timeout"])
        try:
            res = check_case(source, cfg, Path(d), sim=job["sim"], axi_pause=job["axi_pause"],
                             sim_seed=job["seed"], builds=_BUILDS, keep_dir=job["keep_dir"])
        except Hang:
            res = {"status": "hang", "detail": "over the time limit", "sim": job["sim"], "sim_ok": None}
        finally:
            signal.alarm(0)
    res.update(seed=job["seed"], index=job["index"], ops=case.ops, source=source,
               config=cfg.to_dict(), axi_pause=job["axi_pause"], seconds=time.monotonic() - t0)
    return res


def save_failure(out: Path, res: dict) -> Path:
    d = out / f"{res['status']}-{res['index']:05d}-{res['seed']}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "model.py").write_text(res["source"])
    (d / "config.json").write_text(json.dumps(res["config"], indent=2, sort_keys=True) + "\n")
    meta = {k: res[k] for k in ("status", "detail", "seed", "sim", "axi_pause", "ops")}
    (d / "case.json").write_text(json.dumps(meta, indent=2) + "\n")
    if res.get("traceback"):
        (d / "traceback.txt").write_text(res["traceback"])
    cmd = f"python {shlex.quote(str(Path(__file__).relative_to(HERE.parent)))} --replay {shlex.quote(str(d))}"
    (d / "repro.sh").write_text(f"{cmd}\n")
    return d


def replay(d: Path, timeout: int) -> int:
    from pycde_accel.config import AccelConfig
    meta = json.loads((d / "case.json").read_text())
    cfg = AccelConfig.from_dict(json.loads((d / "config.json").read_text()))
    _init_worker()
    signal.alarm(timeout)
    with tempfile.TemporaryDirectory(prefix="pycde-fuzz-") as w:
        res = check_case((d / "model.py").read_text(), cfg, Path(w), sim=meta["sim"],
                         axi_pause=meta["axi_pause"], sim_seed=meta["seed"])
    signal.alarm(0)
    print(f"{d}: {res['status']} {res['detail']}")
    if res.get("traceback"):
        print(res["traceback"], file=sys.stderr)
    return 0 if res["status"] == "ok" else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--sim-cases", type=int, default=0)
    ap.add_argument("--seed", type=int, default=None, help="default: a fresh one (printed)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per case (a hang beyond)")
    ap.add_argument("--out", default=str(HERE / "out" / "fuzz"), help="where failing cases go")
    ap.add_argument("--replay", metavar="DIR", help="run one saved case again")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.replay:
        return replay(Path(args.replay), args.timeout)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "little")
    if seed < 0 or args.cases < 0 or args.sim_cases < 0 or args.sim_cases > args.cases:
        ap.error("--seed, --cases and --sim-cases must be >= 0, and --sim-cases <= --cases")
    print(f"fuzz: seed {seed}, {args.cases} cases, {args.sim_cases} in Verilator, {args.jobs} jobs")
    every = args.cases // args.sim_cases if args.sim_cases else 0
    jobs = []
    nsim = 0
    for i in range(args.cases):
        sim = bool(every) and i % every == 0 and nsim < args.sim_cases
        nsim += sim
        jobs.append({"index": i, "seed": case_seed(seed, i), "sim": sim,
                     "axi_pause": 0.3 if sim and nsim % 4 == 0 else 0.0, "timeout": args.timeout})
    # the simulation cases first: they are the long ones
    jobs.sort(key=lambda j: not j["sim"])
    out = Path(args.out)
    t0 = time.monotonic()
    counts = dict(cases=0, mismatches=0, crashes=0, refusals=0, hangs=0, sim_cases=0, sim_mismatches=0)
    spent: dict[str, list[float]] = {"golden": [], "sim": [], "build": []}
    key = {"mismatch": "mismatches", "crash": "crashes", "refused": "refusals", "hang": "hangs"}
    ctx = mp.get_context("fork")
    keep = tempfile.TemporaryDirectory(prefix="pycde-fuzz-builds-")    # the workers' accelerators
    for j in jobs:
        j["keep_dir"] = keep.name
    with keep, ctx.Pool(args.jobs, initializer=_init_worker, maxtasksperchild=None) as pool:
        for res in pool.imap_unordered(_run_one, jobs):
            spent["sim" if res["sim"] else "golden"].append(res["seconds"] - res.get("build_seconds", 0))
            spent["build"].append(res.get("build_seconds", 0))
            counts["cases"] += 1
            counts["sim_cases"] += bool(res["sim"] and res["sim_ok"] is not None)
            if res["status"] != "ok":
                counts[key[res["status"]]] += 1
                if res["sim"] and res["status"] == "mismatch" and res["detail"].startswith("Verilator"):
                    counts["sim_mismatches"] += 1
                d = save_failure(out, res)
                print(f"  {res['status']}: case {res['index']} (seed {res['seed']}): {res['detail'][:300]} "
                      f"-> {d}", flush=True)
            elif not args.quiet and counts["cases"] % 50 == 0:
                print(f"  {counts['cases']} cases, {time.monotonic() - t0:.0f} s", flush=True)
    secs = time.monotonic() - t0
    counts.update(seconds=round(secs, 1), cases_per_second=round(counts["cases"] / secs, 3), seed=seed,
                  jobs=args.jobs, build_seconds=round(sum(spent.pop("build")), 1),
                  **{f"{k}_case_seconds_mean": round(sum(v) / len(v), 2) for k, v in spent.items() if v})
    print(json.dumps(counts, sort_keys=True))
    return 0 if all(counts[k] == 0 for k in key.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
