"""Assembly of the accelerator with its lowered post-op kernels: the layer between rtl_lib and
lowering.

rtl_lib's engines take their element kernels as parameters (PyCDE module classes with the
stream ports of ``lowering.stream``: ``make_store_engine(config, requant)``,
``make_vector_engine(config, add, max)``, ``make_accelerator(config, requant, add, max)``)
and know nothing of how they are made; lowering knows nothing of the engines. This module
joins the two: it names the kernels each engine instantiates (``lowering.kernels``), lowers
them through CIRCT by the kernel route (``lowering.build_kernel``), imports them into the
PyCDE system as streaming modules (``lowering.stream.stream_module``), builds the engine or
the whole accelerator on them and emits it (``rtl_lib.emit.emit_module``).

* :func:`emit_accelerator`: the whole accelerator for a config (SV + filelist);
  :func:`accel_kernels`: its kernels by role;
* :func:`emit_store_engine` / :func:`emit_vector_engine`: one engine alone, with its kernels
  lowered as the accelerator lowers them (the block tests); ``*_prepare``: their
  ``emit_module`` ``prepare`` hooks;
* :data:`KERNEL_ROUTE`, :func:`kernel_for_route`, :func:`lower_accel_kernel`: the route;
  :func:`lowering_route`: its ``lowering.ROUTES`` name for a target (ECP5: registered DSPs).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from .config import AccelConfig
from .errors import UserError
from .rtl_lib.emit import EmittedSV, emit_module
from .rtl_lib.vector_engine import MAX_RUN

#: config.schedule values ``emit_accelerator`` can build (the kernel route, see KERNEL_ROUTE).
ACCEL_SCHEDULES = ("dynamic", "static", "calyx")

#: The lowering route of the accelerator's post-op kernels: the static schedule (a fixed-latency
#: II=1 pipeline, ``lowering.stream`` wraps it into the engines' stream contract) with the wide
#: multiplies split into 16x16 partial products (``lowering.split_mul``), so that no kernel
#: stage holds more than one DSP or one adder chain. The handshake route ("dynamic") computes a
#: whole element in one cycle, a long path for the clock.
KERNEL_ROUTE = "static"


def lowering_route(route: str, target: str) -> str:
    """The ``lowering.ROUTES`` name that builds the kernels of ``route`` for ``target``. The
    static route's kernels run inside ``lowering.stream``'s wrapper, which never stalls them,
    so their data registers need no enable (``static-stream``,
    ``pycde-accel-free-running-regs``); on ECP5 each multiply is also a registered MULT18X18D
    (``static-ecp5-stream``, ``pycde-accel-ecp5-dsp-mul``; simulation then needs
    ``rtl_lib.ecp5.SIM_MODEL``)."""
    from .rtl_lib.ecp5 import is_ecp5
    if route != "static":
        return route
    return "static-ecp5-stream" if is_ecp5(target) else "static-stream"


def kernel_sim_models(route: str, target: str) -> list:
    """The simulation-only sources the kernels of ``route`` need on ``target``."""
    from .rtl_lib.ecp5 import SIM_MODEL
    return [SIM_MODEL] if lowering_route(route, target).startswith("static-ecp5") else []


def kernel_for_route(kernel, route: str = KERNEL_ROUTE):
    """``kernel`` as the accelerator lowers it by ``route`` (static: wide multiplies split)."""
    from .lowering.split_mul import split_wide_muls
    return split_wide_muls(kernel) if route == "static" else kernel


def lower_accel_kernel(kernel, out: Path, route: str = KERNEL_ROUTE, target: str = "ecp5-85f"):
    """``lowering.build_kernel`` of :func:`kernel_for_route` ``(kernel, route)`` into ``out``
    by :func:`lowering_route` ``(route, target)``; returns ``(kernel as lowered, Lowered)``
    (pass both to ``lowering.stream.stream_module``)."""
    from . import lowering
    k = kernel_for_route(kernel, route)
    return k, lowering.build_kernel(k, Path(out), route=lowering_route(route, target))


# ---- the kernels of each engine ---------------------------------------------------------------

def requant_kernel(config: AccelConfig):
    """The kernel the store engine (``rtl_lib.store_engine``) instantiates: per-channel
    requantize of R*C/L elements (one run per tile in each of its ``L = config.lanes`` lanes)."""
    from .lowering import kernels
    return kernels.requantize(n=config.rows * config.cols // config.lanes, per_channel=True)


def vector_kernels(config: AccelConfig, max_run: int = MAX_RUN):
    """The three kernels the vector engine (``rtl_lib.vector_engine``) for ``config``
    instantiates, as ``lowering.kernels.Kernel``: ``(residual_add, maxpool, mul_requantize)``
    (mul_requantize like residual_add, one run per beat): residual_add with
    run length n = AB elements (one beat), maxpool with k = 2 taps and run length ``max_run``
    (any n >= 1 works; tests use a short one to cross run boundaries), named
    ``vec_residual_add`` / ``vec_maxpool`` so that they coexist with other instances of the same
    kernels in one design. Lower them with ``lowering.build_kernel`` (default route) and wrap
    them with ``lowering.stream.stream_module``."""
    from .lowering import kernels

    ab = config.axi_data_width // 8
    return (kernels.residual_add(ab, name="vec_residual_add"),
            kernels.maxpool(max_run, k=2, name="vec_maxpool"),
            kernels.mul_requantize(ab, name="vec_mul_requantize"))


def row_reduce_kernels(config: AccelConfig, max_run: int = MAX_RUN):
    """The two kernels of the vector engine's row-reduction unit (``rtl_lib.row_reduce``):
    ``(row_lanes, requantize)``: the lane tree of one AXI beat (``kernels.row_lanes``, AB lanes,
    max / sum / sum of squares, run length ``max_run``) and the requantize of a row's total
    (``m0``/``shift`` element inputs next to it, so that runs span rows and commands: no
    restart per row), named ``vec_row_lanes`` / ``vec_row_requantize``."""
    from .lowering import kernels

    ab = config.axi_data_width // 8
    return (kernels.row_lanes(max_run, ab, name="vec_row_lanes"),
            kernels.requantize(max_run, per_channel=True, name="vec_row_requantize"))


def accel_kernels(config: AccelConfig, route: str = KERNEL_ROUTE, rowred: bool = False) -> dict:
    """The post-op kernels the accelerator instantiates, by role: ``requant`` (per-channel
    requantize of one C tile, n = rows*cols), ``add`` and ``max`` (the vector engine's); for
    the static route with their wide multiplies split (same names, ports and function).
    ``rowred``: also ``row_lanes`` and ``row_rq``, the row-reduction unit's."""
    add, mx, mul = vector_kernels(config)
    ks = {"requant": requant_kernel(config), "add": add, "max": mx, "mul": mul}
    if rowred:
        ks["row_lanes"], ks["row_rq"] = row_reduce_kernels(config)
    return {role: kernel_for_route(k, route) for role, k in ks.items()}


def make_row_reduce_unit(config: AccelConfig, mods: dict):
    """The ``rtl_lib.row_reduce`` module class on the imported kernels ``mods`` (by role), or
    None when they hold no row-reduction kernels."""
    if "row_lanes" not in mods:
        return None
    from .rtl_lib.row_reduce import make_row_reduce
    return make_row_reduce(config, mods["row_lanes"], mods["row_rq"])


# ---- the whole accelerator --------------------------------------------------------------------

def emit_accelerator(config: AccelConfig, sv_dir: Path, kernel_dir: Path | None = None,
                     route: str | None = None, rowred: bool = False) -> EmittedSV:
    """Emit the whole accelerator (``rtl_lib.accel``) for ``config`` into ``sv_dir``.

    The post-op kernels are lowered through CIRCT first (``lowering.build_kernel`` by ``route``,
    default :data:`KERNEL_ROUTE`; stage dumps go to ``kernel_dir/<kernel>/ir`` if given, else to
    a temporary folder) and imported into the same PyCDE system as streaming modules
    (``lowering.stream.stream_module``, the same ports for either route). ``rowred``: with the
    vector engine's row-reduction unit (VEC ROWRED; a program that uses it needs it, others
    get the accelerator without it, unchanged)."""
    from . import lowering
    from .lowering.stream import stream_module
    from .rtl_lib import keep_ff, lutram
    from .rtl_lib.accel import make_accelerator
    from .rtl_lib import store_engine, vector_engine
    from .rtl_lib.matmul_unit import sim_models

    route = route or config.schedule       # --schedule; config.schedule defaults to KERNEL_ROUTE
    if route not in ACCEL_SCHEDULES:
        raise UserError(f"schedule {route!r}: the accelerator's post-op kernels are built by "
                        f"the {' or '.join(ACCEL_SCHEDULES)} route")
    ks = accel_kernels(config, route, rowred)
    models = _union(sim_models(config), store_engine.sim_models(config),
                    vector_engine.sim_models(config), kernel_sim_models(route, config.target))
    with tempfile.TemporaryDirectory(prefix="pycde_accel_kernels_") as tmp:
        base = Path(kernel_dir) if kernel_dir is not None else Path(tmp)
        lowered = {role: lowering.build_kernel(k, base / k.name,
                                               route=lowering_route(route, config.target))
                   for role, k in ks.items()}

        def prepare(system):
            mods = {role: stream_module(system, ks[role], lowered[role]) for role in ks}
            return make_accelerator(config, mods["requant"], mods["add"], mods["max"],
                                    mods["mul"], make_row_reduce_unit(config, mods))

        return emit_module(None, Path(sv_dir), sim_models=models,
                           sources=[lutram.SOURCE, keep_ff.SOURCE], prepare=prepare)


# ---- one engine alone ----------------------------------------------------------------------------

def _union(*model_lists) -> list:
    """Simulation models of several parts, each once, in order."""
    out = []
    for m in (m for ms in model_lists for m in ms):
        if m not in out:
            out.append(m)
    return out


def store_engine_prepare(config: AccelConfig, lowered, kernel=None):
    """``emit_module``'s ``prepare`` hook: import the lowered kernel (``lowered``: what
    ``build_kernel(kernel, ...)`` returned; ``kernel`` defaults to ``requant_kernel(config)``)
    and build the store engine on it."""
    from .lowering.stream import stream_module
    from .rtl_lib.store_engine import make_store_engine

    def prepare(system):
        requant = stream_module(system, kernel or requant_kernel(config), lowered)
        return make_store_engine(config, requant)

    return prepare


def emit_store_engine(config: AccelConfig, sv_dir: Path, work_dir: Path | None = None,
                      route: str | None = None) -> EmittedSV:
    """Lower the kernel as the accelerator does (:func:`lower_accel_kernel`, ``route`` default
    :data:`KERNEL_ROUTE`; stage dumps under ``work_dir``, default ``sv_dir/../requant``) and
    emit the store engine with it into ``sv_dir``."""
    from .rtl_lib.store_engine import check_config, sim_models

    check_config(config)
    sv_dir = Path(sv_dir)
    work_dir = Path(work_dir) if work_dir is not None else sv_dir.parent / "requant"
    route = route or KERNEL_ROUTE
    k, lowered = lower_accel_kernel(requant_kernel(config), work_dir, route, config.target)
    models = _union(sim_models(config), kernel_sim_models(route, config.target))
    from .rtl_lib import keep_ff

    return emit_module(None, sv_dir, sim_models=models, sources=[keep_ff.SOURCE],
                       prepare=store_engine_prepare(config, lowered, k))


def vector_engine_prepare(config: AccelConfig, lowered, max_run: int = MAX_RUN, kernels=None,
                          rowred: bool = False):
    """``emit_module``'s ``prepare`` hook: import the two lowered kernels (``lowered``: what
    ``build_kernel`` returned for each of ``kernels``, default :func:`vector_kernels`
    ``(config, max_run)``, in that order; ``rowred``: then :func:`row_reduce_kernels` too) and
    build the vector engine on them. A bigger design calls ``stream_module`` the same way."""
    from .lowering.stream import stream_module
    from .rtl_lib.vector_engine import make_vector_engine

    def prepare(system):
        ks = kernels or (vector_kernels(config, max_run) +
                         (row_reduce_kernels(config, max_run) if rowred else ()))
        mods = [stream_module(system, k, lo) for k, lo in zip(ks, lowered)]
        rr = make_row_reduce_unit(config, {"row_lanes": mods[3], "row_rq": mods[4]}) \
            if len(mods) > 3 else None
        return make_vector_engine(config, *mods[:3], rr)

    return prepare


def emit_vector_engine(config: AccelConfig, sv_dir: Path, work_dir: Path | None = None,
                       max_run: int = MAX_RUN, route: str | None = None,
                       rowred: bool = False) -> EmittedSV:
    """Lower the two kernels as the accelerator does (:func:`lower_accel_kernel`, ``route``
    default :data:`KERNEL_ROUTE`; stage dumps under ``work_dir/<kernel name>``, default
    ``sv_dir/../vec_kernels``) and emit ``vector_engine_w{W}`` with them into ``sv_dir``."""
    sv_dir = Path(sv_dir)
    work_dir = Path(work_dir) if work_dir is not None else sv_dir.parent / "vec_kernels"
    ks = vector_kernels(config, max_run) + (row_reduce_kernels(config, max_run) if rowred else ())
    route = route or KERNEL_ROUTE
    pairs = [lower_accel_kernel(k, work_dir / k.name, route, config.target) for k in ks]
    from .rtl_lib import keep_ff, vector_engine

    models = _union(vector_engine.sim_models(config), kernel_sim_models(route, config.target))
    return emit_module(None, sv_dir, sim_models=models,
                       sources=[keep_ff.SOURCE], prepare=vector_engine_prepare(
        config, [lo for _, lo in pairs], max_run, [k for k, _ in pairs]))
