"""Reports: ``report.json``, ``report.md`` and a self-contained ``report.html`` for one model on
one accelerator config (the ``report`` subcommand and ``Design.report``).

Contents:

* per layer: simulated cycles split into core busy (the systolic core took a beat), core stalled
  inside an EXEC, and the rest (command fetch, DMA not overlapped with compute, post-ops, drain),
  MACs (the model's; ``array_macs``: what the array does, channel padding included), PE
  utilization (model MACs / (PEs x cycles)), DMA bytes, operational intensity; predicted cycles next to them when
  ``pycde_accel.perfmodel`` exists (``perfmodel.predict(compiled, config)``);
* a per-layer cycle breakdown chart (stacked bars);
* a roofline chart: compute bound ``rows * cols`` MACs/cycle, bandwidth bound ``bytes per
  cycle * intensity`` (one AXI beat per cycle, read and write channels shared in the count, or
  the board memory's bytes per cycle when that is less: intensity = MACs / (DMA bytes read +
  written)), and one measured point per layer with MACs
  (vector layers, which do no MACs, are listed but not plotted);
* the memory (``memory``, :func:`pycde_accel.perfmodel.demand.summary`): the board memory the
  target assumes, the bytes per cycle it gives at the config's clock (and at the placed Fmax
  when a synthesis report is there), what the layers demand to run compute-bound and the
  bottleneck;
* a resource table against the target device's capacity: from a synthesis report
  (``DIR/synth/report.json`` written by ``synth``) when one exists for the same config, else the
  fit estimate of :mod:`pycde_accel.fpga.fit`.

Charts are matplotlib PNGs (Agg canvas, no pyplot state, no metadata) embedded in the HTML as
base64 and written beside the markdown (``report_cycles.png``, ``report_roofline.png``).
Everything is deterministic: no timestamps, no absolute paths.
"""

from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import dataclass
from pathlib import Path

from .backend.compile import padding_waste
from .config import AccelConfig

CHART_CYCLES = "report_cycles.png"
CHART_ROOFLINE = "report_roofline.png"


@dataclass
class Report:
    """What ``build`` assembled: ``data`` is report.json; ``charts`` name -> PNG bytes."""

    data: dict
    charts: dict

    def to_json(self) -> str:
        return json.dumps(self.data, indent=2, sort_keys=True) + "\n"

    def to_markdown(self) -> str:
        return markdown(self.data)

    def to_html(self) -> str:
        return html_page(self.data, self.charts)

    def write(self, out: Path) -> list[Path]:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        files = {"report.json": self.to_json(), "report.md": self.to_markdown(),
                 "report.html": self.to_html()}
        for name, text in files.items():
            (out / name).write_text(text)
        for name, png in self.charts.items():
            (out / name).write_bytes(png)
        return [out / n for n in (*files, *self.charts)]


# ---- assembling the data -------------------------------------------------------------------
def predicted_cycles(compiled, config: AccelConfig) -> list[int] | None:
    """Per-layer cycles from ``pycde_accel.perfmodel.predict`` when that module exists.

    Accepts what it returns as a list (of numbers or of dicts with ``cycles``), or an object /
    dict whose ``layers`` is such a list."""
    try:
        from . import perfmodel  # type: ignore[attr-defined]
    except ImportError:
        return None
    pred = perfmodel.predict(compiled, config)
    layers = pred.get("layers") if isinstance(pred, dict) else getattr(pred, "layers", pred)
    out = []
    for p in layers:
        if isinstance(p, dict):
            v = p.get("cycles", p.get("total", p.get("predicted_cycles")))
        else:
            v = getattr(p, "cycles", p)
        out.append(int(round(float(v))))
    return out


def resources(config: AccelConfig, synth: dict | None) -> dict:
    """The resource table: ``source`` ("synthesis" or "estimate"), device, rows of
    (resource, used, available)."""
    from .fpga import estimate, get_device
    dev = get_device(config.target)
    if synth and synth.get("target") == dev.name:
        res, avail = synth.get("resources", {}), synth.get("available", {})
        rows = [{"resource": k, "used": int(res[k]), "available": int(avail.get(k, 0)) or None}
                for k in ("lut", "ff", "dsp", "bram") if k in res]
        return {"source": "synthesis", "device": dev.name, "part": dev.part, "rows": rows,
                "fmax_mhz": synth.get("fmax_mhz"), "placed": bool(synth.get("placed"))}
    est = estimate(config, dev)
    rows = [{"resource": "lut", "used": est.lut, "available": dev.lut},
            {"resource": "dsp", "used": est.dsp, "available": dev.dsp},
            {"resource": "bram", "used": est.bram, "available": dev.bram}]
    return {"source": "estimate", "device": dev.name, "part": dev.part, "rows": rows,
            "fmax_mhz": None, "placed": False}


def memory_section(config: AccelConfig, compiled=None, fmax_mhz: float | None = None) -> dict:
    """report.json's ``memory``: :func:`pycde_accel.perfmodel.demand.summary` of ``compiled``
    (without it, only the board and what it gives), plus ``at_fmax`` when a placed Fmax is
    known: the board's bytes per cycle at that clock (the cycles above are charged at
    ``clock_mhz``; set it to the Fmax to simulate at the placed clock)."""
    from .perfmodel import memory
    if compiled is not None:
        from .perfmodel import demand
        m = demand.summary(compiled, config)
    else:
        mem = memory.board_memory(config)
        bpc = memory.bytes_per_cycle(config)
        m = {"model": config.memory, "board": mem.to_dict() if mem else None,
             "clock_mhz": float(config.clock_mhz), "axi_bytes_per_beat": config.axi_data_width // 8,
             "board_bytes_per_cycle": None if bpc is None else round(float(bpc), 4),
             "charged_bytes_per_cycle": round(float(memory.charged_bytes_per_cycle(config)), 4),
             "throttled": memory.rate(config) is not None}
    if fmax_mhz and config.memory == "board" and m.get("board"):
        at = config.replace(clock_mhz=float(fmax_mhz))
        m["at_fmax"] = {"fmax_mhz": round(float(fmax_mhz), 2),
                        "board_bytes_per_cycle": round(float(memory.bytes_per_cycle(at)), 4),
                        "throttled": memory.rate(at) is not None}
    return m


def build(sim: dict, config: AccelConfig, *, predicted: list[int] | None = None,
          synth: dict | None = None, compiled=None) -> Report:
    """The report of simulation result ``sim`` (``SimResult.to_dict()``) on ``config``;
    ``predicted``: per-layer predicted cycles, used when the sim's layers carry no
    ``predicted_cycles`` of their own (``simulate()`` predicts for the engine it ran);
    ``compiled``: the program, for what the layers demand of the memory (``memory``)."""
    from .perfmodel.memory import charged_bytes_per_cycle
    pe = config.rows * config.cols
    # one beat per cycle (both channels counted together), or the board's bytes if fewer
    bpc = config.axi_data_width // 8
    board = float(charged_bytes_per_cycle(config))
    if board < bpc:
        bpc = round(board, 4)
    if sim["layers"] and all(l.get("predicted_cycles") is not None for l in sim["layers"]):
        # simulate() predicted each layer for the simulation engine and memory model it ran
        predicted = [int(l["predicted_cycles"]) for l in sim["layers"]]
    layers = []
    for i, l in enumerate(sim["layers"]):
        moved = int(l["dma_rd_bytes"]) + int(l["dma_wr_bytes"])
        cyc = int(l["cycles"])
        busy, stall = int(l.get("core_busy", 0)), int(l.get("stall", 0))
        e = {"index": i, "name": l.get("name", str(i)), "op": l.get("op", ""), "cycles": cyc,
             "core_busy": busy, "core_stall": stall, "other": max(0, cyc - busy - stall),
             "macs": int(l["macs"]), "array_macs": int(l.get("array_macs", l["macs"])),
             "padding_waste": padding_waste(int(l["macs"]), int(l.get("array_macs", l["macs"]))),
             "pe_utilization": round(float(l["pe_utilization"]), 6),
             "dma_rd_bytes": int(l["dma_rd_bytes"]), "dma_wr_bytes": int(l["dma_wr_bytes"]),
             "commands": int(l.get("cmds", l.get("cmd_count", 0))),
             "intensity": round(l["macs"] / moved, 6) if moved else None,
             "macs_per_cycle": round(l["macs"] / cyc, 6) if cyc else 0.0}
        if predicted is not None and i < len(predicted):
            e["predicted_cycles"] = int(predicted[i])
            e["predicted_error_pct"] = round(100.0 * (predicted[i] - cyc) / cyc, 3) if cyc else None
        layers.append(e)
    data = {
        "model": sim["model"], "config": config.to_dict(), "array": config.array,
        "bit_exact": bool(sim["bit_exact"]), "mismatches": list(sim.get("mismatches", [])),
        "float_max_abs_error": round(float(sim.get("float_max_abs_error", 0.0)), 6),
        "total_cycles": int(sim["total_cycles"]), "macs": int(sim["macs"]),
        "array_macs": int(sim.get("array_macs") or sim["macs"]),
        "pe_utilization": round(float(sim["pe_utilization"]), 6),
        "dma_bytes_read": int(sim["dma_bytes_read"]),
        "dma_bytes_written": int(sim["dma_bytes_written"]),
        "roofline": {"peak_macs_per_cycle": pe, "dram_bytes_per_cycle": bpc,
                     "ridge_intensity": pe / bpc},
        "layers": layers, "resources": resources(config, synth),
    }
    if predicted is not None:
        data["predicted_total_cycles"] = int(sum(predicted[:len(layers)]))
    data["memory"] = memory_section(config, compiled, data["resources"].get("fmax_mhz"))
    fmax = data["resources"].get("fmax_mhz") or config.clock_mhz
    data["clock_mhz"] = round(float(fmax), 2)
    data["latency_us"] = round(data["total_cycles"] / float(fmax), 3)
    charts = {CHART_CYCLES: cycles_chart(data), CHART_ROOFLINE: roofline_chart(data)}
    return Report(data, charts)


# ---- charts --------------------------------------------------------------------------------
def _figure(w: float, h: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(w, h), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None}, bbox_inches="tight")
    return buf.getvalue()


def cycles_chart(data: dict) -> bytes:
    layers = data["layers"]
    fig = _figure(7.5, 0.9 + 0.38 * max(1, len(layers)))
    ax = fig.add_subplot(1, 1, 1)
    names = [f"{l['index']} {l['name']} ({l['op']})" for l in layers][::-1]
    y = list(range(len(layers)))
    parts = (("core_busy", "core busy", "#2b6cb0"), ("core_stall", "core stalled in EXEC", "#dd6b20"),
             ("other", "other (fetch, DMA, post-ops, drain)", "#a0aec0"))
    left = [0] * len(layers)
    for key, label, color in parts:
        vals = [l[key] for l in layers][::-1]
        ax.barh(y, vals, left=left, color=color, label=label, height=0.7)
        left = [a + b for a, b in zip(left, vals)]
    if any("predicted_cycles" in l for l in layers):
        ax.scatter([l.get("predicted_cycles", 0) for l in layers][::-1], y, marker="|", s=300,
                   color="black", label="predicted (perf model)", zorder=3)
    ax.set_yticks(y)
    ax.set_yticklabels(names, fontsize=8)
    ax.set_xlabel("cycles")
    ax.set_title(f"{data['model']} on {data['array']}: cycles per layer "
                 f"(total {data['total_cycles']})", fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.6 / len(y)), ncol=4,
              frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def roofline_chart(data: dict) -> bytes:
    rf = data["roofline"]
    peak, bw = rf["peak_macs_per_cycle"], rf["dram_bytes_per_cycle"]
    pts = [l for l in data["layers"] if l["macs"] and l["intensity"]]
    xs = [l["intensity"] for l in pts]
    lo = min([rf["ridge_intensity"] / 16] + [x / 2 for x in xs])
    hi = max([rf["ridge_intensity"] * 16] + [x * 2 for x in xs])
    fig = _figure(6.5, 4.5)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ridge = rf["ridge_intensity"]
    ax.plot([lo, ridge], [lo * bw, peak], color="#c53030", label=f"bandwidth bound ({bw} B/cycle)")
    ax.plot([ridge, hi], [peak, peak], color="#2f855a", label=f"compute bound ({peak} MACs/cycle)")
    markers = "os^Dv<>p*h"
    for k, l in enumerate(pts):
        ax.scatter([l["intensity"]], [max(l["macs_per_cycle"], 1e-3)], marker=markers[k % len(markers)],
                   s=40, zorder=3, label=f"{l['index']} {l['name']}")
    ax.set_xlabel("operational intensity (MACs per DRAM byte)")
    ax.set_ylabel("performance (MACs per cycle)")
    ax.set_title(f"roofline: {data['model']} on {data['array']}", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    return _png(fig)


# ---- text ----------------------------------------------------------------------------------
def _table(data: dict) -> tuple[list[str], list[list[str]]]:
    pred = any("predicted_cycles" in l for l in data["layers"])
    head = ["#", "layer", "op", "cycles"] + (["predicted", "error %"] if pred else []) + \
        ["core busy", "stalled", "other", "MACs", "array MACs", "waste", "PE util", "DMA rd B",
         "DMA wr B", "MACs/B"]
    rows = []
    for l in data["layers"]:
        r = [str(l["index"]), l["name"], l["op"], str(l["cycles"])]
        if pred:
            err = l.get("predicted_error_pct")
            r += [str(l.get("predicted_cycles", "")), "" if err is None else f"{err:+.1f}"]
        r += [str(l["core_busy"]), str(l["core_stall"]), str(l["other"]), str(l["macs"]),
              str(l["array_macs"]), f"{l['padding_waste']:.1%}" if l["array_macs"] else "-",
              f"{l['pe_utilization']:.3f}", str(l["dma_rd_bytes"]), str(l["dma_wr_bytes"]),
              "-" if l["intensity"] is None else f"{l['intensity']:.2f}"]
        rows.append(r)
    total = ["", "total", "", str(data["total_cycles"])]
    if pred:
        p = data.get("predicted_total_cycles")
        total += [str(p), f"{100.0 * (p - data['total_cycles']) / data['total_cycles']:+.1f}"
                  if p is not None and data["total_cycles"] else ""]
    total += [str(sum(l[k] for l in data["layers"])) for k in ("core_busy", "core_stall", "other")]
    total += [str(data["macs"]), str(data["array_macs"]), f"{_waste(data):.1%}",
              f"{data['pe_utilization']:.3f}", str(data["dma_bytes_read"]),
              str(data["dma_bytes_written"]), ""]
    rows.append(total)
    return head, rows


def _resource_rows(data: dict) -> list[list[str]]:
    out = []
    for r in data["resources"]["rows"]:
        avail = r["available"]
        pct = f"{100.0 * r['used'] / avail:.1f}%" if avail else "-"
        out.append([r["resource"].upper(), str(r["used"]), str(avail or "-"), pct])
    return out


def _waste(data: dict) -> float:
    """The share of the array's MACs that multiply padding (channel padding of K, the other
    channels of a depthwise conv's slice)."""
    return padding_waste(data["macs"], data.get("array_macs") or 0)


def _summary_lines(data: dict) -> list[str]:
    c = data["config"]
    res = data["resources"]
    verdict = "yes" if data["bit_exact"] else "NO - " + "; ".join(data["mismatches"])
    return [
        f"Model `{data['model']}` on a {data['array']} int{c['data_width']} array, "
        f"{c['axi_data_width']}-bit AXI, target {c['target']}, {c['schedule']} post-op schedule.",
        f"Simulated in Verilator: {data['total_cycles']} cycles "
        f"({data['latency_us']} us at {data['clock_mhz']} MHz), {data['macs']} MACs of the model "
        f"({data['array_macs']} on the array with channel padding, padding waste "
        f"{_waste(data):.1%}), PE utilization {data['pe_utilization']:.3f}; bit-exact with the integer reference: "
        f"{verdict}; float PyTorch max abs error {data['float_max_abs_error']:.4g}.",
        "Resources: " + ("synthesis report" if res["source"] == "synthesis" else
                         "fit estimate (no synthesis report; run `synth` first for measured figures)")
        + f" on {res['device']} ({res['part']})" +
        (f", Fmax {res['fmax_mhz']:.1f} MHz." if res.get("fmax_mhz") else "."),
    ]


def _memory_lines(data: dict) -> list[str]:
    m = data.get("memory") or {}
    b = m.get("board")
    if not b:
        return ["No board memory figure for this target: the AXI bus alone limits the DRAM."]
    lines = [f"Board memory: {b['kind']} ({b['board']}), {b['peak_gb_s']:g} GB/s peak "
             f"(source: {b['source']}).",
             f"At {m['clock_mhz']:g} MHz that is {m['board_bytes_per_cycle']:g} bytes/cycle; the "
             f"AXI bus moves {m['axi_bytes_per_beat']} bytes a beat each way; the simulation and "
             f"the prediction charge {m['charged_bytes_per_cycle']:g} bytes/cycle "
             f"(memory {m['model']!r}" + (", throttled" if m.get("throttled") else
                                          ", not throttled at this clock") + ")."]
    if "need_bytes_per_cycle" in m:
        lines.append(f"To run every layer compute-bound the memory would need "
                     f"{m['need_bytes_per_cycle']:g} bytes/cycle ({m['need_gb_s']:g} GB/s at "
                     f"{m['clock_mhz']:g} MHz; {m['average_need_bytes_per_cycle']} bytes/cycle "
                     f"averaged over the model); {m['memory_bound_layers']} of "
                     f"{len(m['layers'])} layers are bound by the memory or the AXI bus ("
                     f"{m['memory_bound_share']:.0%} of the bound time): bottleneck "
                     f"{m['bottleneck']}.")
    if m.get("at_fmax"):
        a = m["at_fmax"]
        lines.append(f"At the placed Fmax {a['fmax_mhz']:g} MHz the board gives "
                     f"{a['board_bytes_per_cycle']:g} bytes/cycle (cycles above are charged at "
                     f"{m['clock_mhz']:g} MHz).")
    return lines


def markdown(data: dict) -> str:
    L = [f"# pycde-accel report: {data['model']} on {data['array']}", ""]
    L += [s + "  " for s in _summary_lines(data)]
    head, rows = _table(data)
    L += ["", "## Cycles per layer", "", f"![cycles per layer]({CHART_CYCLES})", "",
          "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    L += ["| " + " | ".join(r) + " |" for r in rows]
    rf = data["roofline"]
    L += ["", "## Roofline", "", f"![roofline]({CHART_ROOFLINE})", "",
          f"Compute bound {rf['peak_macs_per_cycle']} MACs/cycle; bandwidth bound "
          f"{rf['dram_bytes_per_cycle']} bytes/cycle x intensity; ridge at "
          f"{rf['ridge_intensity']:g} MACs/byte. Layers without MACs (vector ops) are not plotted."]
    L += ["", "## Memory", ""] + [s + "  " for s in _memory_lines(data)]
    L += ["", f"## Resources ({data['resources']['source']}, {data['resources']['device']})", "",
          "| resource | used | device has | utilization |", "|---|---:|---:|---:|"]
    L += ["| " + " | ".join(r) + " |" for r in _resource_rows(data)]
    L += ["", "## Config", "", "```json", json.dumps(data["config"], indent=2, sort_keys=True), "```", ""]
    return "\n".join(L)


def _html_table(head, rows) -> str:
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    b = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{b}</tbody></table>"


def html_page(data: dict, charts: dict) -> str:
    def img(name, alt):
        return (f'<img alt="{alt}" src="data:image/png;base64,'
                f'{base64.b64encode(charts[name]).decode()}">')
    head, rows = _table(data)
    rf = data["roofline"]
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>pycde-accel report: {html.escape(data['model'])} on {data['array']}</title>",
        "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px;"
        "text-align:right}th{background:#eee}img{max-width:100%}pre{background:#f6f6f6;padding:1em}"
        "</style></head><body>",
        f"<h1>pycde-accel report: {html.escape(data['model'])} on {data['array']}</h1>",
        *[f"<p>{html.escape(s).replace('`', '')}</p>" for s in _summary_lines(data)],
        "<h2>Cycles per layer</h2>", img(CHART_CYCLES, "cycles per layer"), _html_table(head, rows),
        "<h2>Roofline</h2>", img(CHART_ROOFLINE, "roofline"),
        f"<p>Compute bound {rf['peak_macs_per_cycle']} MACs/cycle; bandwidth bound "
        f"{rf['dram_bytes_per_cycle']} bytes/cycle &times; intensity; ridge at "
        f"{rf['ridge_intensity']:g} MACs/byte. Layers without MACs (vector ops) are not plotted.</p>",
        "<h2>Memory</h2>", *[f"<p>{html.escape(s)}</p>" for s in _memory_lines(data)],
        f"<h2>Resources ({data['resources']['source']}, {html.escape(data['resources']['device'])})</h2>",
        _html_table(["resource", "used", "device has", "utilization"], _resource_rows(data)),
        "<h2>Config</h2>", f"<pre>{html.escape(json.dumps(data['config'], indent=2, sort_keys=True))}</pre>",
        "</body></html>", ""]
    return "\n".join(parts)
