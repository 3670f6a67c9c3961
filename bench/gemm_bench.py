"""One standalone GEMM layer and its bounds (a helper of the bench scripts, and a script).

``gemm_program(config, M, N, K, seed)`` compiles C = requant(A @ B + bias) with random int8 A
(M x K), B (K x N), int32 bias and per-column (m0, shift) as a one-layer program (a Linear
without the frontend) and returns a :class:`GemmBench`: the compiled program, the input, the
integer reference's output and the layer's compute and bandwidth bounds. bench/layer.py,
bench/model.py and bench/sim_speed.py use it, and so do tests (tests/conftest.py puts this
folder on ``sys.path``).

``python bench/gemm_bench.py [--array 8x8] [--axi 64] [--m 256 --n 256 --k 256]`` prints the
layer's program figures (tiles, model MACs, commands, K chunks per tile (a K longer than a
scratchpad bank runs as CHAIN-ed EXECs), compute and bandwidth bounds, and the
bound's share of the array's peak: model MACs over rows*cols*bound cycles) and ends with one
JSON line of them. It compiles only; bench/layer.py simulates the same layer.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

import numpy as np

from pycde_accel.backend import commands as CMD
from pycde_accel.backend.compile import CompiledProgram, compile_program
from pycde_accel.backend.tiling import ceil_div
from pycde_accel.config import AccelConfig
from pycde_accel.frontend import graph as g
from pycde_accel.frontend import quantize as q
from pycde_accel.frontend import reference

@dataclass
class GemmBench:
    """A standalone GEMM layer program (a Linear without the frontend) and its bounds."""
    compiled: CompiledProgram
    quantized: object
    a: np.ndarray                 # M x K int8 input
    expected: np.ndarray          # M x N int8 output (frontend.reference)
    compute_cycles: int           # tiles * K: the core streaming every tile back to back
    bytes_read: int               # DMA bytes of the layer's commands
    bytes_written: int
    read_beats: int
    write_beats: int

    @property
    def bandwidth_cycles(self) -> int:
        return max(self.read_beats, self.write_beats)

    @property
    def bound_cycles(self) -> int:
        return max(self.compute_cycles, self.bandwidth_cycles)

    def figures(self) -> dict:
        e = self.compiled.layers[0]
        graph = self.quantized.graph
        return {"M": self.a.shape[0], "N": self.expected.shape[1], "K": self.a.shape[1],
                "tiles": e["tiles"], "macs": graph.node("gemm").macs(graph),
                "array_macs": e["array_macs"], "commands": e["cmd_count"],
                "cmd_beats": ceil_div(CMD.CMD_BYTES * e["cmd_count"], self.compiled.config.axi_data_width // 8),
                "compute_cycles": self.compute_cycles, "read_beats": self.read_beats,
                "write_beats": self.write_beats, "bandwidth_cycles": self.bandwidth_cycles,
                "bound_cycles": self.bound_cycles, "order": self.compiled.stats[0]["order"],
                "block": self.compiled.stats[0]["block"],
                "k_chunks": self.compiled.stats[0].get("k_chunks", 1)}


def gemm_program(config: AccelConfig, M: int, N: int, K: int, seed: int = 0, relu: bool = False) -> GemmBench:
    """C = requant(A @ B + bias) with random int8 A (M x K), B (K x N), int32 bias and
    per-column (m0, shift): one layer, compiled; ``expected`` from the integer reference."""
    rng = np.random.default_rng(seed)
    x = g.Input("a", (), (M, K), index=0)
    fc = g.Linear("gemm", ("a",), (M, N), module="gemm", weight=np.zeros((N, K)), bias=np.zeros(N), relu=relu)
    w = rng.integers(-127, 128, size=(N, K))
    bias = rng.integers(-(1 << 16), 1 << 16, size=N)
    # a multiplier that maps |acc| ~ 128*128*sqrt(K) into int8 range
    m0 = rng.integers(1 << 30, 1 << 31, size=N)
    shift = np.full(N, max(0, int(np.log2(128 * 128 * max(1.0, np.sqrt(K)) / 128))), np.int64)
    lq = q.LayerQuant(weight=w, bias=bias, m0=m0, shift=shift)
    qm = q.QuantizedModel(graph=g.Graph([x, fc], ["a"], ["gemm"]), scales={"a": 1.0, "gemm": 1.0},
                          layers={"gemm": lq})
    a = rng.integers(-128, 128, size=(M, K))
    cp = compile_program(qm, config)
    exp = reference.run(qm, [a]).outputs[0]
    e = cp.layers[0]
    ab = config.axi_data_width // 8
    return GemmBench(cp, qm, a, exp, e["exec_cycles"], e["bytes_read"], e["bytes_written"],
                     ceil_div(e["bytes_read"], ab), ceil_div(e["bytes_written"], ab))


def main(argv=None) -> None:
    from pycde_accel.config import parse_array
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--axi", type=int, default=64)
    ap.add_argument("--m", type=int, default=256)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rows, cols = parse_array(args.array)
    cfg = AccelConfig(rows=rows, cols=cols, axi_data_width=args.axi).validate()
    fig = gemm_program(cfg, args.m, args.n, args.k, seed=args.seed).figures()
    fig["peak_share_at_bound"] = round(fig["macs"] / (rows * cols * fig["bound_cycles"]), 4)
    for k, v in fig.items():
        print(f"{k:>20}: {v}")
    print(json.dumps(fig, sort_keys=True))


if __name__ == "__main__":
    main()
