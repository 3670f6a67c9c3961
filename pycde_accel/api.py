"""Python API: ``pycde_accel.compile(model, example_inputs, config=...) -> Design``.

::

    import torch, pycde_accel
    design = pycde_accel.compile(net, (torch.randn(1, 784),), config=pycde_accel.AccelConfig())
    design.emit("out/net")                  # -> EmitResult (sv/, ir/, design.json, host/ ...)
    sim = design.simulate()                 # -> SimResult (Verilator; bit_exact, cycles per layer)
    syn = design.synthesize("ecp5-85f")     # -> SynthOutput (Yosys + nextpnr report, or vendor files)
    rep = design.report("out/net", sim=sim) # -> report.Report (report.md/.html/.json written)

``model`` is a ``torch.nn.Module`` with ``example_inputs`` (a tuple of float tensors), or a model
spec as the CLI takes it (``"mlp"``, ``"path/to/file.py[:function]"``; no example inputs then).
``config`` is an :class:`~pycde_accel.config.AccelConfig`, a dict of its fields, or None (the
default). ``compile`` runs the frontend (torch.export, int8 quantization, accuracy check) and the
back end (command program, DRAM image) at once, so an unsupported op or a config that cannot be
built raises :class:`~pycde_accel.errors.UserError` there. Nothing here prints; every method
returns a result object.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .config import AccelConfig
from .errors import UserError


@dataclass
class EmitResult:
    """What :meth:`Design.emit` wrote into ``out``."""

    out: Path
    top: str
    sv_files: list[Path]
    filelist: Path
    design_json: Path
    host_files: list[Path]


class Design:
    """A model compiled for one accelerator config (see the module docstring)."""

    def __init__(self, fe, config: AccelConfig, seed: int = 0):
        from .backend import compile_program
        self.frontend = fe
        self.config = config
        self.seed = seed
        self.compiled = compile_program(fe, config)

    # ---- what was compiled -----------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.frontend.model.spec

    @property
    def accuracy(self) -> dict:
        """int8 against float agreement on seeded samples (``design.json``'s ``accuracy``)."""
        return dict(self.frontend.accuracy)

    @property
    def layers(self) -> list[dict]:
        """The layer table: name, op, ``cmd_addr``, ``cmd_count``, MACs ... per layer."""
        return [dict(e) for e in self.compiled.layers]

    def predict(self):
        """The performance model's prediction (:func:`pycde_accel.perfmodel.predict`)."""
        from . import perfmodel
        return perfmodel.predict(self.compiled, self.config)

    def __repr__(self) -> str:
        return f"Design({self.name!r}, {self.config.array}, {len(self.compiled.layers)} layers)"

    # ---- steps -----------------------------------------------------------------------------
    def emit(self, out) -> EmitResult:
        """Write the whole output folder (as ``gen``) into ``out``; it appears whole or not at all."""
        import json

        from . import flow, hostgen
        out = Path(out)
        flow.gen(self.frontend, out, self.config, seed=self.seed, compiled=self.compiled)
        sv = out / "sv"
        design = json.loads((out / "design.json").read_text())
        return EmitResult(out=out, top=design["top"],
                          sv_files=[sv / f for f in (sv / "filelist.f").read_text().split()],
                          filelist=sv / "filelist.f", design_json=out / "design.json",
                          host_files=[out / "host" / n for n in (hostgen.HEADER_CSR,
                                                                 hostgen.HEADER_PROGRAM,
                                                                 hostgen.DRIVER, hostgen.IO_NPZ)])

    def simulate(self, inputs=None, *, work=None, axi_pause: float = 0.0, waves: bool = False,
                 cache_root=None, per_layer_starts: bool = False):
        """Run the model on the accelerator in Verilator; return a
        :class:`~pycde_accel.simulate.SimResult` (``bit_exact``, cycles per layer, outputs).

        ``inputs``: a tuple of float tensors/arrays shaped like the example inputs (default: the
        example inputs). ``work``: where the build and run files go (default: a temporary
        folder, removed after). Verilator builds are cached (``cache_root``, default the user
        cache, ``$PYCDE_ACCEL_CACHE``). The host starts the accelerator once for the whole
        model (``per_layer_starts``: once per layer)."""
        from .simulate import simulate
        fe = self.frontend if inputs is None else self._with_inputs(inputs)
        # the program does not depend on the inputs (they go into the image): compiled once
        kw = dict(axi_pause=axi_pause, seed=self.seed, waves=waves, cache_root=cache_root,
                  compiled=self.compiled, per_layer_starts=per_layer_starts)
        if work is not None:
            return simulate(fe, self.config, Path(work), **kw)
        with tempfile.TemporaryDirectory(prefix="pycde_accel_sim_") as tmp:
            return simulate(fe, self.config, Path(tmp), **kw)

    def synthesize(self, target: str | None = None, out=None):
        """Synthesize for ``target`` (default: the config's); return
        :class:`~pycde_accel.fpga.project.SynthOutput` (``report``: LUT/FF/DSP/BRAM, Fmax for the
        open flow; ``written``: the vendor project files otherwise). ``out``: the output folder
        (default: a temporary one, removed after; ``written`` is then empty)."""
        from .fpga import get_device, project
        cfg = self.config if target is None else self.config.replace(target=get_device(target).name)
        kw = dict(seed=self.seed, compiled=self.compiled if cfg == self.config else None)
        if out is not None:
            return project.synth_model(self.frontend, Path(out), cfg, **kw)
        with tempfile.TemporaryDirectory(prefix="pycde_accel_synth_") as tmp:
            r = project.synth_model(self.frontend, Path(tmp) / "out", cfg, **kw)
            return project.SynthOutput(r.top, r.report, [])

    def report(self, out, *, sim=None, synth=None):
        """Write report.md, report.html and report.json into ``out`` (simulating first unless
        ``sim``, a SimResult or its dict, is given; ``synth``: a SynthOutput/SynthReport or its
        dict for the resource table, else the fit estimate); return the :class:`report.Report`."""
        from . import report
        if sim is None:
            sim = self.simulate()
        sim_d = sim if isinstance(sim, dict) else sim.to_dict()
        synth_d = synth
        if synth is not None and not isinstance(synth, dict):
            rep = getattr(synth, "report", synth)
            synth_d = rep.to_dict() if rep is not None else None
        r = report.build(sim_d, self.config, synth=synth_d,
                         predicted=report.predicted_cycles(self.compiled, self.config),
                         compiled=self.compiled)
        r.write(Path(out))
        return r

    # ---- helpers ---------------------------------------------------------------------------
    def _with_inputs(self, inputs):
        import numpy as np
        import torch
        if isinstance(inputs, (torch.Tensor, np.ndarray)):
            inputs = (inputs,)
        ex = self.frontend.model.example_inputs
        if len(inputs) != len(ex):
            raise UserError(f"simulate: {len(inputs)} inputs, the model takes {len(ex)}")
        ts = []
        for i, (x, e) in enumerate(zip(inputs, ex)):
            t = torch.as_tensor(np.asarray(x, np.float32) if not isinstance(x, torch.Tensor) else x)
            if tuple(t.shape) != tuple(e.shape):
                raise UserError(f"simulate: input {i} has shape {tuple(t.shape)}, the design was "
                                f"compiled for {tuple(e.shape)}")
            ts.append(t.to(e.dtype))
        model = dataclasses.replace(self.frontend.model, example_inputs=tuple(ts))
        return dataclasses.replace(self.frontend, model=model)


def compile(model, example_inputs=None, config=None, *, seed: int = 0,  # noqa: A001 - the API name
            name: str | None = None) -> Design:
    """Compile ``model`` for the accelerator described by ``config``; see the module docstring."""
    from . import frontend
    from .frontend.loader import from_module
    if isinstance(config, dict):
        config = AccelConfig.from_dict(config)
    config = AccelConfig() if config is None else config
    if not isinstance(config, AccelConfig):
        raise UserError(f"config: expected an AccelConfig or a dict, got {type(config).__name__}")
    config.validate()
    if model is None or isinstance(model, str):
        if example_inputs is not None:
            raise UserError("compile: example_inputs go with a torch.nn.Module, not a model spec "
                            "(a model file's build() returns its own)")
        spec = model
    else:
        if example_inputs is None:
            raise UserError("compile(model, example_inputs): a torch.nn.Module needs example inputs")
        spec = from_module(model, example_inputs, name=name)
    fe = frontend.run(spec, seed=seed)
    return Design(fe, config, seed)


def _loaded(model, example_inputs, name=None):
    """A model spec or a module with its example inputs, as the partition functions take it."""
    from .frontend.loader import from_module
    if model is None or isinstance(model, str):
        if example_inputs is not None:
            raise UserError("partition: example_inputs go with a torch.nn.Module, not a model spec")
        return model
    if example_inputs is None:
        raise UserError("partition(model, example_inputs): a torch.nn.Module needs example inputs")
    return from_module(model, example_inputs, name=name)


def plan_partition(model, example_inputs=None, *, host: str = "cpu", link: str = "pcie3x4",
              config=None, seed: int = 0, name: str | None = None) -> dict:
    """A placement plan of ``model`` over the accelerator and ``host`` (``cpu``,
    ``gpu:NAME``, a SPEC.json path), as ``partition`` writes it in partition.json
    (:func:`pycde_accel.partition.make_plan`); ops the accelerator lacks go to the host."""
    from . import partition as part
    if isinstance(config, dict):
        config = AccelConfig.from_dict(config)
    config = (config or AccelConfig()).validate()
    return part.make_plan(_loaded(model, example_inputs, name), config, host, link, seed=seed)


def run_partition(model, plan, example_inputs=None, *, config=None, seed: int = 0, work=None,
                  cache_root=None, name: str | None = None) -> dict:
    """Run ``plan`` (a dict of :func:`plan_partition` or a partition.json path): host segments in
    PyTorch, accelerator segments in Verilator (:func:`pycde_accel.partition.run_plan`)."""
    from . import partition as part
    if not isinstance(plan, dict):
        plan = part.read_plan(plan)
    if isinstance(config, dict):
        config = AccelConfig.from_dict(config)
    if config is None:
        config = AccelConfig.from_dict(plan["config"]) if isinstance(plan.get("config"), dict) \
            else AccelConfig()
    config.validate()
    spec = _loaded(model, example_inputs, name)
    if work is not None:
        return part.run_plan(spec, config, plan, Path(work), seed=seed, cache_root=cache_root)
    with tempfile.TemporaryDirectory(prefix="pycde_accel_part_") as tmp:
        return part.run_plan(spec, config, plan, Path(tmp), seed=seed, cache_root=cache_root)
