"""The perf model's results: per layer and per model, ready for ``report.json``."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LayerPrediction:
    """One layer: predicted cycles and the closed-form bounds it is compared with."""

    index: int
    name: str
    op: str
    cycles: int
    bounds: dict
    commands: int

    @property
    def bottleneck(self) -> str:
        return max(self.bounds, key=self.bounds.get) if self.bounds else ""

    def to_dict(self) -> dict:
        total = sum(self.bounds.values())
        return {"index": self.index, "name": self.name, "op": self.op,
                "predicted_cycles": self.cycles, "commands": self.commands,
                "bounds": dict(self.bounds), "bottleneck": self.bottleneck,
                "overlap": round(total / self.cycles, 3) if self.cycles else 0.0}


@dataclass
class ModelPrediction:
    """Every layer's prediction and the total (layers run one after the other)."""

    config: dict
    layers: list = field(default_factory=list)

    @property
    def total_cycles(self) -> int:
        return sum(l.cycles for l in self.layers)

    def latency_us(self, clock_mhz: float) -> float:
        return self.total_cycles / clock_mhz

    def to_dict(self) -> dict:
        return {"model": "event-level cycle model (pycde_accel.perfmodel)",
                "config": {k: self.config[k] for k in ("rows", "cols", "axi_data_width",
                                                       "spad_a_depth", "spad_b_depth",
                                                       "spad_c_depth") if k in self.config},
                "total_cycles": self.total_cycles,
                "layers": [l.to_dict() for l in self.layers]}
