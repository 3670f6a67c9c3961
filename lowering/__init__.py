"""lowering: torch-mlir linalg -> scf -> cf -> CIRCT handshake (dynamic) | scf -> CIRCT pipeline
(static) | scf -> CIRCT calyx with the project's calyx passes (calyx) -> hw -> SV.

Public API:

* :data:`pipeline.ROUTES` / :func:`pipeline.stage_files`: the stages of each route, as data.
* :func:`lower` (= :func:`pipeline.lower`): run a route on linalg text or a stage-00 file,
  writing ``ir/NN_<stage>.mlir``; every stage runs in a worker process (crash isolation, timeout).
* :data:`pipeline.MODEL_ROUTES`: a model's chain: its post-op kernels (:mod:`.postops`,
  extracted from the frontend's quantized graph) down to SV, one module per kernel.
* :data:`kernels.KERNELS`: the post-op kernels (requantize, residual_add, maxpool, clamp, lut,
  mul_requantize) as linalg builders; :func:`build_kernel` lowers one.
* :func:`import_kernel`: put a lowered kernel into a PyCDE ``System`` (``System.import_mlir``)
  and return its module class for rtl_lib to instantiate.
* :func:`stream.stream_module` / :func:`stream.emit_stream`: a kernel as a streaming PyCDE
  module ``<name>_stream`` (element streams in/out, ``done`` pulse): what rtl_lib instantiates.
* :mod:`.passes`: the project's passes (handshake rewrites, scf -> pipeline.scheduled, the
  calyx passes that stand in for CIRCT's missing ones and make the calyx FSM shorter).

Verilator runs of one lowered kernel (the dynamic protocol below, the static route's element
streams) are test code: ``tests/lowering/kernel_sim.py`` and its testbenches.

Kernel protocol (dynamic route): the kernel is a ``clock``/``reset`` module whose ports are
valid/ready channels (``X``, ``X_valid``, ``X_ready``): per tensor input a load port
(``inK_ld0_addr`` out, ``inK_ld0_data`` in, answered in order, any latency), per scalar input a
channel taken once per run, one store port (``inK_st0_address``/``inK_st0_data`` out, answered by
a ``inK_st0_done`` token), a start token ``inS`` and ``out0``; see ``Kernel.ports()``. The
kernel has finished when all ``n`` stores were accepted (count them: ``out0`` only means all
accesses were issued). In the PyCDE import, port names keep their dots (``in0_ld0.addr``).
"""

from __future__ import annotations

from pathlib import Path

from . import kernels
from .pipeline import ROUTES, Lowered, Stage, lower, stage_files

__all__ = ["ROUTES", "Lowered", "Stage", "lower", "stage_files", "kernels", "build_kernel",
           "import_kernel"]


def build_kernel(kernel: "kernels.Kernel", out: Path, route: str = "dynamic") -> Lowered:
    """Lower ``kernel`` into ``out/ir`` (stage dumps) and ``out/sv/<name>.sv``."""
    out = Path(out)
    return lower(kernel.linalg(), out / "ir", route=route, name=kernel.name, sv_dir=out / "sv")


def import_kernel(system, lowered: Lowered, name: str):
    """Import the hw stage of ``lowered`` into the PyCDE ``system``; return the module class
    ``name`` (helper modules carry the ``<name>_`` prefix, so several kernels can coexist)."""
    if lowered.hw is None:
        raise ValueError(f"route {lowered.route} produced no hw stage to import")
    return system.import_mlir(file=lowered.hw)[name]
