"""Accelerator + host: a per-layer placement plan from costs, and running it.

``python -m pycde_accel partition MODEL --host cpu|gpu:NAME|SPEC.json [--link NAME] --out DIR``

*Layers* are the nodes of the frontend's layer graph (BatchNorm folded, ReLU fused), captured
with ``host_ops`` (:func:`pycde_accel.frontend.capture.capture`): an op the accelerator lacks
stays in the graph as a host-only node instead of refusing the model. Each layer knows the fx
nodes of the exported program it came from, so that any set of consecutive layers can be cut
out as a PyTorch module of its own (:func:`segment_module`).

*Accelerator cost*: every maximal run of supported layers is compiled as a model of its own
(frontend, back end) and :func:`pycde_accel.perfmodel.predict` gives each program layer's
cycles; a layer costs the cycles of its program layers at the design's Fmax: the placed Fmax of
``DIR/synth/report.json`` when ``synth`` ran there for the same config, else the config's clock
(``clock_mhz``, what the design is constrained to). ``partition.json`` says which
(``fmax_source``). A run whose layers do not map one to one onto the sub-model's (the frontend
fused differently at its edges) is one placement unit: all its layers go to the same device.
A run the back end refuses is host-only, with the reason.

*Host cost*: ``cpu``: each layer's fx nodes timed in PyTorch on this machine (float32, one
intra-op thread so that other load on the cores does not swamp small layers; the median of
:data:`CPU_REPEATS` runs after :data:`CPU_WARMUP`); a GPU (:data:`GPUS`) or a
SPEC.json (the same keys): a roofline, ``launch_us + max(flops / peak, bytes / bandwidth)``
per layer (a view costs nothing), at the spec's ``precision``.

*Boundary cost*: a tensor that crosses between host and accelerator goes as int8 (the host
quantizes and dequantizes): ``latency + bytes / bandwidth`` of the link (:data:`LINKS`). The
model's inputs start on the host and its outputs end there. A tensor crosses once however many
layers on the other side read it.

*Placement* (:func:`place`) minimizes the sum of layer and boundary costs (the devices run one
after the other: the plan's latency is that sum). A chain (each layer reads the one before)
is solved exactly by a shortest path over layer x device; any other graph exactly by a
minimum s-t cut (two devices, costs >= 0: the labelling problem is submodular; a producer's
"its value is on the host / on the accelerator" are variables of their own so that fan-out is
counted once). Host-only layers are pinned to the host.

*Running a plan* (:func:`run_plan`, ``sim MODEL --partition DIR/partition.json``): the layers in
graph order are cut into segments of one device; host segments run in PyTorch (float32),
accelerator segments are compiled as models of their own (calibrated on their float inputs)
and run in Verilator, bit-exact against their integer reference; the boundaries quantize and
dequantize at the segment's scales. The end-to-end output is compared with float PyTorch.
In a DAG, a tensor from one accelerator segment to a later one that a host segment separates in
graph order goes through the host here (dequantized and quantized again), where the plan's cost
counted no transfer for it; a chain has no such tensor.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .config import AccelConfig
from .errors import UserError
from .perfmodel.memory import board_memory

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


CPU_WARMUP = 3
CPU_REPEATS = 15

#: GPU presets from the vendors' data sheets (dense peak, no sparsity; ``launch_us``: a CUDA
#: kernel launch as seen from an eager PyTorch program, a typical 5-10 us; we take 8).
#: - NVIDIA T4 (Tesla T4 data sheet, 2019): FP32 8.1 TFLOPS, FP16 65 TFLOPS, INT8 130 TOPS,
#:   320 GB/s GDDR6.
#: - NVIDIA A100 40GB PCIe (A100 data sheet, 2020/06): FP32 19.5 TFLOPS, FP16 tensor 312
#:   TFLOPS, INT8 tensor 624 TOPS, 1555 GB/s HBM2.
#: - NVIDIA Jetson Orin Nano 8GB (Jetson Orin Nano series data sheet, 2023): 1024 CUDA cores +
#:   32 tensor cores at 625 MHz: FP32 1.28 TFLOPS, FP16 tensor ~10 TFLOPS (dense), INT8 20 TOPS
#:   dense (40 sparse), 68 GB/s LPDDR5.
GPUS = {
    "t4": {"name": "NVIDIA T4", "peak_tops": {"fp32": 8.1, "fp16": 65.0, "int8": 130.0},
           "bandwidth_gbs": 320.0, "launch_us": 8.0, "precision": "fp16"},
    "a100": {"name": "NVIDIA A100 40GB PCIe", "peak_tops": {"fp32": 19.5, "fp16": 312.0,
                                                          "int8": 624.0},
             "bandwidth_gbs": 1555.0, "launch_us": 8.0, "precision": "fp16"},
    "orin-nano": {"name": "NVIDIA Jetson Orin Nano 8GB",
                  "peak_tops": {"fp32": 1.28, "fp16": 10.0, "int8": 20.0},
                  "bandwidth_gbs": 68.0, "launch_us": 8.0, "precision": "fp16"},
}
PRECISION_BYTES = {"fp32": 4, "fp16": 2, "int8": 1}

#: links between host and accelerator: effective bandwidth (bytes/s) and one-way latency (s)
#: - ``pcie3x4``: PCIe Gen3 x4, 8 GT/s x 4 lanes x 128/130 = 3.94 GB/s raw; about 3.2 GB/s of
#:   DMA payload after TLP/DLLP overhead (~80%), and ~1 us for a DMA descriptor round trip.
#: - ``axi``: an on-chip AXI link (a processor system next to the fabric, Zynq-style HP port,
#:   sharing the board memory): the accelerator's bus width x its Fmax, but no more than the
#:   target's board memory gives (``memory == "board"``: a tensor crossing the link is written
#:   to and read from that memory), 0.1 us (tens of cycles) per transfer.
LINKS = {
    "pcie3x4": {"name": "PCIe Gen3 x4", "bandwidth_gbs": 3.2, "latency_us": 1.0},
    "axi": {"name": "on-chip AXI", "bandwidth_gbs": None, "latency_us": 0.1},
}
DEFAULT_LINK = "pcie3x4"

#: layer kinds that are views: no kernel on a GPU
VIEW_KINDS = ("reshape", "input")


# ---- devices ----------------------------------------------------------------------------------
def host_spec(text: str) -> dict:
    """``cpu``, ``gpu:NAME`` (:data:`GPUS`) or a SPEC.json path as a spec dict (``kind``:
    ``cpu`` or ``roofline``)."""
    if text == "cpu":
        return {"kind": "cpu", "name": "this machine's CPU (PyTorch, float32, 1 thread, measured)"}
    if text.startswith("gpu:"):
        key = text[4:].lower()
        if key not in GPUS:
            raise UserError(f"--host {text}: unknown GPU; known: "
                            + ", ".join(f"gpu:{k}" for k in GPUS) + " (or a SPEC.json)")
        return {"kind": "roofline", "preset": key, **GPUS[key]}
    path = Path(text)
    if not path.is_file():
        raise UserError(f"--host {text}: expected cpu, gpu:NAME ("
                        + ", ".join(GPUS) + ") or a SPEC.json file")
    try:
        spec = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"--host {text}: not a JSON file ({e})") from None
    return check_spec(spec, text)


def check_spec(spec, where: str) -> dict:
    """A roofline spec: ``peak_tops`` {precision: tera-ops/s}, ``bandwidth_gbs``, ``launch_us``,
    ``precision`` (one of ``peak_tops``'s keys)."""
    if not isinstance(spec, dict):
        raise UserError(f"--host {where}: expected a JSON object")
    peak = spec.get("peak_tops")
    prec = spec.get("precision", "fp32")
    bad = None
    if not isinstance(peak, dict) or not peak:
        bad = "peak_tops (an object such as {\"fp32\": 8.1}) is missing"
    elif prec not in PRECISION_BYTES:
        bad = f"precision {prec!r} is not one of {', '.join(PRECISION_BYTES)}"
    elif not isinstance(peak.get(prec), (int, float)) or not peak[prec] > 0:
        bad = f"peak_tops has no positive figure for its precision {prec!r}"
    for key in ("bandwidth_gbs", "launch_us"):
        v = spec.get(key)
        if bad is None and (not isinstance(v, (int, float)) or v < 0 or
                            (key == "bandwidth_gbs" and v == 0)):
            bad = f"{key} must be a positive number"
    if bad:
        raise UserError(f"--host {where}: {bad}")
    return {"kind": "roofline", "name": str(spec.get("name", where)), "peak_tops": dict(peak),
            "bandwidth_gbs": float(spec["bandwidth_gbs"]), "launch_us": float(spec["launch_us"]),
            "precision": prec}


def link_spec(name: str, config: AccelConfig, fmax_mhz: float | None = None) -> dict:
    """The link preset ``name``; the on-chip ``axi`` link's bandwidth is the bus at
    ``fmax_mhz`` (default: the config's clock), capped by the board memory (see :data:`LINKS`)."""
    if name not in LINKS:
        raise UserError(f"--link {name}: unknown link; known: {', '.join(LINKS)}")
    link = dict(LINKS[name], preset=name)
    if link["bandwidth_gbs"] is None:
        bus = config.axi_data_width / 8 * (fmax_mhz or config.clock_mhz) * 1e6
        mem = board_memory(config) if config.memory == "board" else None
        link["bandwidth_gbs"] = (bus if mem is None else min(bus, mem.bytes_per_s)) / 1e9
        link["bandwidth_from"] = ("the bus at the design's clock" if mem is None
                                  or bus <= mem.bytes_per_s else f"the board memory ({mem.kind})")
    return link


def transfer_s(nbytes: int, link: dict) -> float:
    return link["latency_us"] * 1e-6 + nbytes / (link["bandwidth_gbs"] * 1e9)


# ---- analysis ---------------------------------------------------------------------------------
@dataclass
class Layer:
    name: str
    op: str
    inputs: tuple
    shape: tuple
    host_only: bool = False
    reason: str = ""
    fx: list = field(default_factory=list)          # fx node names, in order
    macs: int = 0
    weight_elems: int = 0
    in_elems: int = 0
    accel_cycles: int | None = None
    accel_s: float | None = None
    host_s: float = 0.0
    unit: str = ""                                  # placement unit (a layer or a whole run)

    @property
    def out_elems(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1


@dataclass
class Analysis:
    model: object                   # LoadedModel
    gm: object                      # the exported program as a GraphModule (fx)
    layers: list                    # Layer, graph order (the inputs first, as 'input' layers)
    outputs: list                   # layer names of the model outputs
    values: dict                    # fx node name -> float value at the example inputs
    runs: list = field(default_factory=list)   # [{"layers": [...], "error": str|None}]


def exported_module(module, example_inputs):
    """The exported program of ``module`` as an fx GraphModule (its node names are the ones
    capture sees), without the guard call torch.export adds."""
    import warnings

    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = torch.export.export(module.eval(), tuple(example_inputs)).module()
    for n in list(gm.graph.nodes):
        if n.op == "call_module" and not n.users:
            gm.graph.erase_node(n)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def _fx_values(gm, example_inputs) -> dict:
    """Every fx node's value at ``example_inputs`` (an fx Interpreter run)."""
    import torch
    values = {}

    class Rec(torch.fx.Interpreter):
        def run_node(self, n):
            v = super().run_node(n)
            values[n.name] = v
            return v

    with torch.no_grad():
        Rec(gm).run(*example_inputs)
    return values


def analyze(spec, config: AccelConfig, *, seed: int = 0, progress: Progress = _quiet,
            price: bool = True) -> Analysis:
    """Load ``spec``, capture it with host-only ops, map layers to fx nodes and price every
    supported run on the accelerator (the perf model; see the module docstring)."""
    from .frontend import capture as cap
    from .frontend import graph as fgraph
    from .frontend.loader import load_model

    model = load_model(spec)
    alias: dict = {}
    progress("frontend: export and capture (ops the accelerator lacks stay for the host)")
    pre = cap.capture(model.module, model.example_inputs, fallback_source=model.fallback_source,
                      host_ops=True, alias=alias)
    graph = fgraph.fuse_relu(pre)
    names = {n.name for n in graph.nodes}
    pre_by = {n.name: n for n in pre.nodes}

    def layer_of(t: str):
        while t is not None and t not in names:
            node = pre_by.get(t)
            t = node.inputs[0] if node is not None and node.inputs else None
        return t

    gm = exported_module(model.module, model.example_inputs)
    values = _fx_values(gm, model.example_inputs)
    layers = []
    by = {}
    for n in graph.nodes:
        host_only = n.kind == "unsupported"
        lay = Layer(name=n.name, op=n.kind, inputs=tuple(n.inputs), shape=tuple(n.shape),
                    host_only=host_only,
                    reason=(getattr(n, "what", "") or "an output of an op only the host runs")
                    if host_only else "",
                    unit=n.name)
        try:
            lay.macs = int(n.macs(graph) or 0)
        except Exception:
            lay.macs = 0
        lay.weight_elems = int(sum(v.size for v in vars(n).values() if isinstance(v, np.ndarray)))
        layers.append(lay)
        by[n.name] = lay
    for lay in layers:
        lay.in_elems = sum(by[i].out_elems for i in lay.inputs if i in by)
    for fx in gm.graph.nodes:
        if fx.op in ("call_function", "placeholder") and fx.name in alias:
            t = layer_of(alias[fx.name])
            if t in by:
                by[t].fx.append(fx.name)
    an = Analysis(model=model, gm=gm, layers=layers, outputs=list(graph.outputs), values=values)
    if price:
        _price_accel(an, config, seed=seed, progress=progress)
    return an


def _runs(layers: list) -> list[list]:
    """Maximal runs of consecutive (graph order) layers the accelerator may run."""
    runs, cur = [], []
    for lay in layers:
        if lay.op == "input" or lay.host_only:
            if cur:
                runs.append(cur)
            cur = []
        else:
            cur.append(lay)
    if cur:
        runs.append(cur)
    return runs


def segment_module(an: Analysis, names: list[str]):
    """The layers ``names`` as a GraphModule of their own: its inputs are the values they read
    from outside (in fx order), its outputs the values read after it or by the model's
    output. Returns (module, input fx names, output fx names)."""
    import torch
    inside = set()
    for lay in an.layers:
        if lay.name in names:
            inside.update(lay.fx)
    g = an.gm.graph
    new = torch.fx.Graph()
    env = {}
    ins, outs = [], []
    order = [n for n in g.nodes if n.name in inside and n.op == "call_function"]
    for n in order:
        for a in n.all_input_nodes:
            if a.name in env:
                continue
            if a.op == "get_attr":
                env[a.name] = new.node_copy(a, lambda x: env[x.name])
            elif a.name not in inside or a.op == "placeholder":
                ph = new.placeholder(a.name)
                ph.meta = dict(a.meta)
                env[a.name] = ph
                ins.append(a.name)
        env[n.name] = new.node_copy(n, lambda x: env[x.name])
    for n in order:
        if any(u.name not in inside or u.op == "output" for u in n.users):
            outs.append(n.name)
    new.output(tuple(env[o] for o in outs) if len(outs) != 1 else env[outs[0]])
    return torch.fx.GraphModule(an.gm, new), ins, outs


def _segment_inputs(an: Analysis, ins: list[str]):
    import torch
    return tuple(torch.as_tensor(an.values[i]).detach().float() for i in ins)


def _compile_segment(an: Analysis, names: list[str], config: AccelConfig, seed: int, tag: str,
                     eval_batches: int = 1, inputs=None):
    """A segment as a model of its own through the frontend and back end: (fe, compiled, ins,
    outs); UserError when the frontend or the back end refuses it."""
    from . import frontend
    from .backend import compile_program
    from .frontend.loader import from_module
    mod, ins, outs = segment_module(an, names)
    xs = _segment_inputs(an, ins) if inputs is None else inputs
    fe = frontend.run(from_module(mod, xs, name=tag), seed=seed, eval_batches=eval_batches)
    return fe, compile_program(fe, config), ins, outs


def _price_accel(an: Analysis, config: AccelConfig, *, seed: int, progress: Progress) -> None:
    from . import perfmodel
    for k, run in enumerate(_runs(an.layers)):
        names = [l.name for l in run]
        progress(f"accelerator cost of run {k} ({len(run)} layers: {names[0]} .. {names[-1]})")
        try:
            fe, compiled, _, _ = _compile_segment(an, names, config, seed, f"run{k}")
            pred = perfmodel.predict(compiled, config)
        except Exception as e:      # refused (UserError) or a compiler failure: the host runs it
            first = (str(e).splitlines() or [""])[0]
            what = first if isinstance(e, UserError) else f"{type(e).__name__}: {first}"
            reason = f"the accelerator cannot run this part of the model: {what}"
            for lay in run:
                lay.host_only, lay.reason = True, reason
            an.runs.append({"layers": names, "error": reason})
            continue
        sub = [n for n in fe.graph.nodes if n.kind != "input"]
        cycles: dict[str, int] = {}
        for entry, lp in zip(compiled.layers, pred.layers):
            cycles[str(entry.get("name"))] = cycles.get(str(entry.get("name")), 0) + lp.cycles
        if len(sub) == len(run) and all(s.kind == l.op for s, l in zip(sub, run)):
            for s, lay in zip(sub, run):
                lay.accel_cycles = cycles.get(s.name, 0)
            an.runs.append({"layers": names, "error": None, "unit": None})
        else:           # mapped differently: the run is one unit, its cycles on its first layer
            for i, lay in enumerate(run):
                lay.accel_cycles = sum(cycles.values()) if i == 0 else 0
                lay.unit = run[0].name
            an.runs.append({"layers": names, "error": None, "unit": run[0].name})


# ---- host costs -------------------------------------------------------------------------------
def _time_call(fn, repeats: int = CPU_REPEATS, warmup: int = CPU_WARMUP) -> float:
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def cpu_times(an: Analysis) -> None:
    """Each layer's fx nodes timed in PyTorch here (float32): the median of the repeats."""
    import torch
    g = {n.name: n for n in an.gm.graph.nodes}
    attrs = {}
    for n in an.gm.graph.nodes:
        if n.op == "get_attr":
            obj = an.gm
            for part in str(n.target).split("."):
                obj = getattr(obj, part)
            attrs[n.name] = obj

    def val(a):
        if isinstance(a, torch.fx.Node):
            return attrs[a.name] if a.name in attrs else an.values[a.name]
        if isinstance(a, (list, tuple)):
            return type(a)(val(x) for x in a)
        return a

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _cpu_layers(an, g, val)
    finally:
        torch.set_num_threads(threads)


def _cpu_layers(an: Analysis, g: dict, val) -> None:
    import torch
    with torch.no_grad():
        for lay in an.layers:
            calls = []
            for name in lay.fx:
                n = g[name]
                if n.op != "call_function":
                    continue
                args, kwargs = val(n.args), {k: val(v) for k, v in n.kwargs.items()}
                calls.append((n.target, args, kwargs))
            if not calls:
                lay.host_s = 0.0
                continue

            def run(calls=calls):
                for f, a, kw in calls:
                    f(*a, **kw)
            lay.host_s = _time_call(run)


def roofline_times(an: Analysis, spec: dict) -> None:
    prec = spec["precision"]
    peak = spec["peak_tops"][prec] * 1e12
    bw = spec["bandwidth_gbs"] * 1e9
    b = PRECISION_BYTES[prec]
    for lay in an.layers:
        if lay.op in VIEW_KINDS:
            lay.host_s = 0.0
            continue
        flops = 2 * lay.macs if lay.macs else lay.out_elems
        nbytes = (lay.in_elems + lay.out_elems + lay.weight_elems) * b
        lay.host_s = spec["launch_us"] * 1e-6 + max(flops / peak, nbytes / bw)


# ---- placement --------------------------------------------------------------------------------
HOST, ACCEL = "host", "accel"


def _problem(an: Analysis, link: dict):
    """Units (placement variables): name -> {"host": s, "accel": s or inf}; producers: unit
    of each tensor with its transfer cost and consumer units; pinned host units."""
    inf = math.inf
    units: dict[str, dict] = {}
    unit_of = {}
    for lay in an.layers:
        u = units.setdefault(lay.unit, {HOST: 0.0, ACCEL: 0.0})
        unit_of[lay.name] = lay.unit
        u[HOST] += lay.host_s
        if lay.op == "input" or lay.host_only or lay.accel_s is None:
            u[ACCEL] = inf
        else:
            u[ACCEL] += lay.accel_s
    tensors = []
    for lay in an.layers:
        users = {unit_of[l.name] for l in an.layers if lay.name in l.inputs} - {lay.unit}
        sink = lay.name in an.outputs
        if users or sink:
            tensors.append({"unit": lay.unit, "users": sorted(users), "host_sink": sink,
                            "cost": transfer_s(lay.out_elems, link), "bytes": lay.out_elems,
                            "layer": lay.name})
    return units, tensors


def is_chain(an: Analysis) -> bool:
    prev = None
    for lay in an.layers:
        if prev is not None and tuple(lay.inputs) != (prev,):
            return False
        if prev is None and lay.op != "input":
            return False
        prev = lay.name
    return an.outputs == [an.layers[-1].name]


def plan_cost(assign: dict, units: dict, tensors: list) -> tuple[float, float]:
    """(total, transfer) seconds of a placement ``assign`` (unit -> device)."""
    total = sum(units[u][d] for u, d in assign.items())
    tr = 0.0
    for t in tensors:
        d = assign[t["unit"]]
        other = {assign[v] for v in t["users"]} | ({HOST} if t["host_sink"] else set())
        if other - {d}:
            tr += t["cost"]
    return total + tr, tr


def _place_chain(order: list, units: dict, tensors: list) -> dict:
    """Shortest path over unit x device (the chain's transfer is the edge between two units)."""
    cost_after = {t["unit"]: t["cost"] for t in tensors}
    best = {HOST: (0.0, []), ACCEL: (math.inf, [])}   # before the first unit: on the host
    prev_u = None
    for u in order:
        step = {}
        for d in (HOST, ACCEL):
            c = units[u][d]
            cands = []
            for pd, (pc, path) in best.items():
                edge = 0.0 if pd == d or prev_u is None else cost_after[prev_u]
                if prev_u is None and d != HOST:
                    edge = math.inf
                cands.append((pc + edge + c, path + [d]))
            step[d] = min(cands, key=lambda x: x[0])
        best, prev_u = step, u
    final = {d: (c + (0.0 if d == HOST else cost_after[prev_u]), p) for d, (c, p) in best.items()}
    _, path = min(final.values(), key=lambda x: x[0])
    return dict(zip(order, path))


def _place_cut(units: dict, tensors: list) -> dict:
    """Exact minimum s-t cut (networkx). Source side = host. Variables: x_u (unit on host),
    h_t (tensor t is on the host), a_t (on the accelerator) with h_t >= x_u, h_t >= x_v for
    host users, a_t >= 1 - x_u, a_t >= 1 - x_v; cost sum c_u(x_u) + cost_t (h_t + a_t - 1)."""
    import networkx as nx
    G = nx.DiGraph()
    S, T = "__S", "__T"
    BIG = 1e9   # stands in for infinity: larger than any finite plan
    inf = math.inf

    def cap(a, b, c):
        if c <= 0:
            return
        c = BIG if c == inf else c
        if G.has_edge(a, b):
            G[a][b]["capacity"] += c
        else:
            G.add_edge(a, b, capacity=c)

    # x_u = 1 (host) <-> node on the source side. Cutting S->u puts u on the sink side (accel)
    # and costs accel; cutting u->T costs host.
    for u, c in units.items():
        G.add_node(u)
        cap(S, u, c[ACCEL])
        cap(u, T, c[HOST])
    for i, t in enumerate(tensors):
        h, a = f"__h{i}", f"__a{i}"       # h on source side: on host; a on sink side: on accel
        cap(h, T, t["cost"])               # h = 1 costs cost
        cap(S, a, t["cost"])               # a = 1 (a on sink side) costs cost
        for v in [t["unit"]] + t["users"]:
            cap(v, h, BIG)                 # x_v = 1 and h = 0 forbidden
            cap(a, v, BIG)                 # x_v = 0 (sink) and a = 0 (source) forbidden
        if t["host_sink"]:
            cap(S, h, BIG)                 # the output ends on the host
    _, (src, _) = nx.minimum_cut(G, S, T)
    return {u: (HOST if u in src else ACCEL) for u in units}


def place(an: Analysis, link: dict) -> tuple[dict, str]:
    units, tensors = _problem(an, link)
    order = list(dict.fromkeys(l.unit for l in an.layers))
    if is_chain(an) and all(l.unit == l.name for l in an.layers):
        return _place_chain(order, units, tensors), "shortest path over layer x device (chain)"
    return _place_cut(units, tensors), "minimum s-t cut (exact; the graph is not a chain)"


# ---- the plan ---------------------------------------------------------------------------------
def fmax_of(out: Path | None, config: AccelConfig) -> tuple[float, str]:
    """The placed Fmax of ``out/synth/report.json`` for ``config``, else the config's clock."""
    if out is not None:
        p = Path(out) / "synth" / "report.json"
        try:
            rep = json.loads(p.read_text()) if p.is_file() else None
        except (OSError, ValueError):
            rep = None
        if rep and rep.get("config") == config.to_dict():
            f = rep.get("fmax_mhz") or (rep.get("timing") or {}).get("fmax_mhz")
            if isinstance(f, (int, float)) and f > 0:
                return float(f), f"placed (nextpnr, {p.parent.name}/report.json)"
    return config.clock_mhz, "estimate: the config's clock_mhz (no placed design for this config)"


def make_plan(spec, config: AccelConfig, host: str, link_name: str = DEFAULT_LINK, *,
              seed: int = 0, fmax_dir: Path | None = None, progress: Progress = _quiet,
              analysis: Analysis | None = None) -> dict:
    """The whole ``partition``: analysis, costs, placement; returns partition.json's content."""
    hs = host_spec(host)
    fmax, fsrc = fmax_of(fmax_dir, config)
    link = link_spec(link_name, config, fmax)
    an = analysis or analyze(spec, config, seed=seed, progress=progress)
    for lay in an.layers:
        if lay.accel_cycles is not None and not lay.host_only:
            lay.accel_s = lay.accel_cycles / (fmax * 1e6)
    progress("host cost: " + ("timing every layer in PyTorch" if hs["kind"] == "cpu"
                              else f"roofline of {hs['name']}"))
    if hs["kind"] == "cpu":
        cpu_times(an)
    else:
        roofline_times(an, hs)
    assign, method = place(an, link)
    units, tensors = _problem(an, link)
    total, tr = plan_cost(assign, units, tensors)
    all_host = {u: HOST for u in units}
    host_total, host_tr = plan_cost(all_host, units, tensors)
    accel_ok = all(units[u][ACCEL] < math.inf for u in units if not u.startswith("__") and
                   not any(l.op == "input" for l in an.layers if l.unit == u))
    all_accel = None
    if accel_ok:
        aa = {u: (HOST if any(l.op == "input" for l in an.layers if l.unit == u) else ACCEL)
              for u in units}
        c, t = plan_cost(aa, units, tensors)
        all_accel = {"latency_s": c, "transfer_s": t, "transfer_share": t / c if c else 0.0}
    dev = {l.name: assign[l.unit] for l in an.layers}
    rows = []
    for lay in an.layers:
        d = dev[lay.name]
        crossings = []
        for i in lay.inputs:
            if dev.get(i, HOST) != d:
                src = next(l for l in an.layers if l.name == i)
                crossings.append({"tensor": i, "from": dev[i], "to": d, "bytes": src.out_elems,
                                  "seconds": transfer_s(src.out_elems, link)})
        if lay.name in an.outputs and d != HOST:
            crossings.append({"tensor": lay.name, "from": d, "to": HOST, "bytes": lay.out_elems,
                              "seconds": transfer_s(lay.out_elems, link), "model_output": True})
        rows.append({"name": lay.name, "op": lay.op, "device": d, "host_only": lay.host_only,
                     "reason": lay.reason, "inputs": list(lay.inputs), "shape": list(lay.shape),
                     "macs": lay.macs, "accel_cycles": lay.accel_cycles,
                     "accel_s": lay.accel_s, "host_s": lay.host_s, "unit": lay.unit,
                     "transfers": crossings})
    return {
        "model": an.model.spec, "config": config.to_dict(),
        "host": hs, "link": link, "fmax_mhz": fmax, "fmax_source": fsrc,
        "accel_cost": "pycde_accel.perfmodel cycles of the layer's program at fmax_mhz",
        "host_cost": ("measured: median of %d PyTorch runs after %d warm-up" % (CPU_REPEATS,
                                                                                 CPU_WARMUP)
                      if hs["kind"] == "cpu" else
                      "roofline: launch_us + max(flops / peak, bytes / bandwidth)"),
        "transfer_cost": "int8 bytes / link bandwidth + link latency, once per crossing tensor",
        "method": method, "outputs": list(an.outputs),
        "layers": rows,
        "totals": {"plan": {"latency_s": total, "transfer_s": tr,
                            "transfer_share": tr / total if total else 0.0},
                   "all_host": {"latency_s": host_total, "transfer_s": host_tr,
                                "transfer_share": host_tr / host_total if host_total else 0.0},
                   "all_accel": all_accel,
                   "accel_layers": sum(1 for r in rows if r["device"] == ACCEL),
                   "host_layers": sum(1 for r in rows if r["device"] == HOST and r["op"] != "input")},
    }


def plot(plan: dict, path: Path) -> None:
    """Per-layer time on each device (log scale); the device each layer is placed on is the
    solid bar, the other one is pale."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in plan["layers"] if r["op"] != "input"]
    x = np.arange(len(rows))
    host = np.array([max(r["host_s"], 1e-9) * 1e6 for r in rows])
    acc = np.array([max(r["accel_s"], 1e-9) * 1e6 if r["accel_s"] is not None else 0.0
                    for r in rows])
    on_acc = np.array([r["device"] == ACCEL for r in rows])
    fig, ax = plt.subplots(figsize=(min(18, max(6, 0.3 * len(rows) + 2)), 4), dpi=80)
    for xs, vals, color, placed, label in (
            (x - 0.2, host, "#4c72b0", ~on_acc, "host"),
            (x + 0.2, acc, "#dd8452", on_acc, "accelerator")):
        ax.bar(xs[placed], vals[placed], 0.4, color=color, label=f"{label} (placed there)")
        ax.bar(xs[~placed], vals[~placed], 0.4, color=color, alpha=0.3)
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels([r["name"] for r in rows], rotation=60, ha="right",
                       fontsize=7 if len(rows) < 40 else 5)
    ax.set_ylabel("predicted time (us)")
    t = plan["totals"]["plan"]
    ax.set_title(f"{plan['model']}: plan {t['latency_s'] * 1e6:.1f} us "
                 f"(transfers {t['transfer_share']:.0%}); pale = the device not chosen",
                 fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def _us(s) -> str:
    return "-" if s is None else f"{s * 1e6:.2f}"


def report_lines(plan: dict) -> list[str]:
    t = plan["totals"]
    lines = [f"partition of {plan['model']}: host {plan['host']['name']}, link "
             f"{plan['link']['name']}, accelerator {plan['config']['rows']}x"
             f"{plan['config']['cols']} at {plan['fmax_mhz']:g} MHz ({plan['fmax_source']})",
             f"placement: {plan['method']}",
             f"  {'layer':<24} {'op':<12} {'device':<6} {'host us':>10} {'accel us':>10} "
             f"{'transfer us':>11}"]
    for r in plan["layers"]:
        if r["op"] == "input":
            continue
        tr = sum(c["seconds"] for c in r["transfers"])
        lines.append(f"  {r['name']:<24} {r['op']:<12} {r['device']:<6} {_us(r['host_s']):>10} "
                     f"{_us(r['accel_s']):>10} {_us(tr) if tr else '':>11}"
                     + (f"  host only: {r['reason']}" if r["host_only"] else ""))
    for key, label in (("plan", "plan"), ("all_host", "all host"), ("all_accel", "all accel")):
        v = t[key]
        if v is None:
            lines.append(f"  {label:<10} -  (some layer runs on the host only)")
        else:
            lines.append(f"  {label:<10} {v['latency_s'] * 1e6:10.2f} us, transfers "
                         f"{v['transfer_s'] * 1e6:.2f} us ({v['transfer_share']:.1%})")
    return lines


def write(plan: dict, folder: Path) -> list[Path]:
    folder = Path(folder)
    (folder / "partition.json").write_text(json.dumps(plan, indent=1) + "\n")
    plot(plan, folder / "partition.png")
    md = ["# Partition", "", "```", *report_lines(plan), "```", "",
          "![time per layer on each device](partition.png)", ""]
    (folder / "partition.md").write_text("\n".join(md))
    return [folder / "partition.json", folder / "partition.md", folder / "partition.png"]


FILES = ("partition.json", "partition.md", "partition.png")


# ---- running a plan ---------------------------------------------------------------------------
def read_plan(path) -> dict:
    p = Path(path)
    try:
        plan = json.loads(p.read_text())
    except FileNotFoundError:
        raise UserError(f"--partition {path}: no such file (write it with 'python -m "
                        f"pycde_accel partition MODEL --out DIR')") from None
    except (OSError, ValueError) as e:
        raise UserError(f"--partition {path}: not a partition.json ({e})") from None
    if not isinstance(plan, dict) or not isinstance(plan.get("layers"), list) or not all(
            isinstance(r, dict) and r.get("device") in (HOST, ACCEL) and "name" in r
            for r in plan["layers"]):
        raise UserError(f"--partition {path}: not a partition.json (a 'layers' list whose "
                        f"entries have a name and a device 'accel' or 'host')")
    return plan


def segments(an: Analysis, plan: dict) -> list[tuple[str, list[str]]]:
    """(device, layer names) of the plan's segments: the layers in graph order, cut where the
    device changes. UserError when the plan does not fit the model."""
    dev = {r["name"]: r["device"] for r in plan["layers"]}
    names = [l.name for l in an.layers if l.op != "input"]
    if set(dev) - {l.name for l in an.layers if l.op == "input"} != set(names):
        raise UserError(f"the plan ({plan.get('model')}) does not fit the model "
                        f"{an.model.spec}: its layers differ; rerun partition for this model")
    out: list[tuple[str, list[str]]] = []
    for lay in an.layers:
        if lay.op == "input":
            continue
        d = dev[lay.name]
        if d == ACCEL and lay.host_only:
            raise UserError(f"the plan puts {lay.name} ({lay.reason or lay.op}) on the "
                            f"accelerator, which cannot run it")
        if out and out[-1][0] == d:
            out[-1][1].append(lay.name)
        else:
            out.append((d, [lay.name]))
    return out


def run_plan(spec, config: AccelConfig, plan: dict, work: Path, *, seed: int = 0,
             progress: Progress = _quiet, cache_root=None, analysis: Analysis | None = None,
             golden: bool = False) -> dict:
    """Run ``plan`` on ``spec``'s example inputs (see the module docstring); returns the
    result (``segments``: device, layers, and for the accelerator the cycles and
    ``bit_exact``; ``bit_exact``: every accelerator segment; ``max_abs_error`` and
    ``top1_match`` of the end-to-end output against float PyTorch). ``golden``: run the
    accelerator segments' commands on the back end's golden model (``backend.cmdexec``)
    instead of Verilator (no cycles then)."""
    import torch

    from . import frontend
    from .backend import compile_program
    from .frontend.loader import from_module
    from .simulate import classifier_shaped, simulate

    an = analysis or analyze(spec, config, seed=seed, progress=progress, price=False)
    segs = segments(an, plan)
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    env = {}
    for lay in an.layers:
        if lay.op == "input":
            env.update({n: torch.as_tensor(an.values[n]) for n in lay.fx})
    rows = []
    for k, (dev, names) in enumerate(segs):
        mod, ins, outs = segment_module(an, names)
        xs = tuple(env[i].detach().float() for i in ins)
        row = {"index": k, "device": dev, "layers": names, "inputs": ins, "outputs": outs}
        t0 = time.time()
        if dev == HOST:
            progress(f"segment {k}: {len(names)} layers on the host (PyTorch)")
            with torch.no_grad():
                res = mod(*xs)
            vals = list(res) if isinstance(res, (tuple, list)) else [res]
        else:
            progress(f"segment {k}: {len(names)} layers on the accelerator (Verilator)")
            fe = frontend.run(from_module(mod, xs, name=f"segment{k}"), seed=seed, eval_batches=1)
            compiled = compile_program(fe, config)
            qm = fe.quantized
            if golden:
                got = _golden(fe, compiled)
            else:
                r = simulate(fe, config, work / f"segment{k}", seed=seed, compiled=compiled,
                             cache_root=cache_root, progress=progress)
                got = {"outputs": r.outputs, "bit_exact": r.bit_exact,
                       "mismatches": r.mismatches, "cycles": r.total_cycles,
                       "predicted_cycles": r.predicted_cycles,
                       "float_max_abs_error": r.float_max_abs_error}
            vals = [torch.as_tensor(np.asarray(o, np.float64) * qm.scales[n]).float()
                    for n, o in zip(qm.graph.outputs, got.pop("outputs"))]
            row.update(got)
            row.update({"engine": "golden (backend.cmdexec)" if golden else "Verilator",
                        "input_scales": [float(qm.scales[n]) for n in qm.graph.inputs],
                        "output_scales": [float(qm.scales[n]) for n in qm.graph.outputs]})
        row["seconds"] = round(time.time() - t0, 2)
        if len(vals) != len(outs):
            raise UserError(f"segment {k} gave {len(vals)} outputs for {len(outs)} values")
        env.update(zip(outs, vals))
        rows.append(row)
    out_node = next(n for n in an.gm.graph.nodes if n.op == "output")
    res = out_node.args[0]
    res = list(res) if isinstance(res, (tuple, list)) else [res]
    errs, top1 = [], None
    for n in res:
        got = env[n.name].detach().double().numpy()
        want = torch.as_tensor(an.values[n.name]).detach().double().numpy()
        errs.append(float(np.max(np.abs(got - want))) if want.size else 0.0)
        if classifier_shaped(want.shape):
            top1 = bool(np.array_equal(np.argmax(got.reshape(-1, want.shape[-1]), -1),
                                       np.argmax(want.reshape(-1, want.shape[-1]), -1)))
    accel = [r for r in rows if r["device"] == ACCEL]
    return {"model": an.model.spec, "config": config.to_dict(), "segments": rows,
            "accel_segments": len(accel), "host_segments": len(rows) - len(accel),
            "bit_exact": all(r["bit_exact"] for r in accel),
            "accel_cycles": sum(r["cycles"] or 0 for r in accel),
            "max_abs_error": max(errs) if errs else 0.0, "top1_match": top1}


def _golden(fe, compiled) -> dict:
    """A segment's commands on the golden model, against its integer reference."""
    from .backend import cmdexec
    from .frontend import reference
    qm = fe.quantized
    xq = reference.quantize_inputs(qm, [t.detach().double().numpy()
                                        for t in fe.model.example_inputs])
    outs, _ = cmdexec.run(compiled, xq)
    want = reference.run(qm, xq).outputs
    bad = [f"output {n}: {int(np.sum(np.asarray(o) != np.asarray(w)))} values differ"
           for n, o, w in zip(qm.graph.outputs, outs, want)
           if np.asarray(o).shape != np.asarray(w).shape or not np.array_equal(o, w)]
    return {"outputs": outs, "bit_exact": not bad, "mismatches": bad, "cycles": None,
            "predicted_cycles": None, "float_max_abs_error": None}


def run_lines(res: dict) -> list[str]:
    lines = [f"{res['model']}: the plan in {len(res['segments'])} segments "
             f"({res['accel_segments']} on the accelerator in Verilator, "
             f"{res['host_segments']} on the host in PyTorch)"]
    for r in res["segments"]:
        what = f"{len(r['layers'])} layers ({r['layers'][0]} .. {r['layers'][-1]})"
        if r["device"] == ACCEL:
            cyc = (f"{r['cycles']} cycles (predicted {r['predicted_cycles']})"
                   if r["cycles"] is not None else r["engine"])
            lines.append(f"  {r['index']:>2} accel {what}: {cyc}, bit-exact with its integer "
                         f"reference: "
                         + ("yes" if r["bit_exact"] else "NO - " + "; ".join(r["mismatches"])))
        else:
            lines.append(f"  {r['index']:>2} host  {what}")
    top1 = ("" if res["top1_match"] is None else
            ", same top-1" if res["top1_match"] else ", different top-1")
    lines.append(f"  end to end against float PyTorch: max abs error {res['max_abs_error']:.4g}"
                 f"{top1}")
    lines.append("  every accelerator segment bit-exact: " + ("yes" if res["bit_exact"] else "NO"))
    return lines
