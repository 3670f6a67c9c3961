"""Golden model of the accelerator running command lists (docs/accelerator-contract.md) on DRAM.

:func:`run_layer` fetches ``cmd_count`` commands at ``cmd_base`` from the image and executes them in
program order with the hardware's state: the A and B operand scratchpads (2 banks each, R resp. C
lanes of ``spad_depth`` int8 elements = ``spad_depth / AB`` words of AB bytes; producer/consumer ownership with COMMIT and REL_A/REL_B),
the store engine's parameter memory P (``4 * spad_c_depth`` int32 words), the vector engine's X
buffer (``spad_c_depth`` beats) and S stream, and the core's C-tile stream between EXEC and STORE.
Sequential program order is the hardware's dispatch order, so a program that runs here without a
:class:`CommandError` cannot deadlock the hardware; every wait that could not be satisfied by an
earlier command raises (EXEC with no committed bank, STORE with no C tile, VEC with too few S beats,
LOAD when the producer owns no bank and none is free).

Hardware rules asserted (CommandError): DMA addresses and strides are multiples of AB and inside
the image; LOAD beats/rows >= 1; lanes and words inside a bank (a LOAD writes only the bank its
producer side owns); ZERO only to A/B and S (zero S beats: a VEC operand that is ignored); P and
X writes inside their memories; EXEC
1 <= K <= min(spad depths, 65535) with its words inside the bank, a tile's K summed over a
CHAIN run (the core keeps accumulating; the tile is queued by the EXEC without CHAIN) <= max_k,
no tile left open at the end; STORE valid_rows in 1..R and
records inside P; VEC n >= 1 and X ranges inside X; at the end of a layer the S and C streams are
empty and every bank is free again. In-flight data: the accelerator holds a LOAD P (LOAD X) at
dispatch until every earlier STORE (VEC) is done, but a later STORE (VEC) could run before the
load's data are routed; so a STORE must only read records loaded before the later of its tile's
operand COMMITs, and a VEC only X beats loaded before the LOAD S of its S beats (the router
delivers in load order).

Initial scratchpad/X contents are random (``garbage_seed``), so a program relying on stale zeros
fails; ``fill_garbage`` puts random bytes into a byte range of the image (activation padding).

A run (:meth:`Machine.run`, one ``start``) may hold several layers separated by FENCEs (the
back end's whole-model command list): a FENCE is a barrier after which every earlier command is
complete, checked as at the end of a run (streams empty, banks free).

Per layer (:class:`LayerCounters`): commands, tiles (EXECs without CHAIN), array MACs (R*C*K per EXEC),
exec cycles (sum K), DMA beats/bytes read (LOADs, ZERO excluded) and written (STOREs, VECs to
DRAM), command fetch beats.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass

import numpy as np

from ..config import AccelConfig
from ..frontend import quantize as q
from . import commands as C_
from .encoding import OP_FENCE


class CommandError(RuntimeError):
    """The command list breaks a hardware rule or would deadlock."""


@dataclass
class LayerCounters:
    index: int
    commands: int = 0
    tiles: int = 0
    array_macs: int = 0
    exec_cycles: int = 0
    dram_beats_read: int = 0
    dram_beats_written: int = 0
    dram_bytes_read: int = 0
    dram_bytes_written: int = 0
    cmd_beats_read: int = 0


def _wrap(x: np.ndarray, bits: int) -> np.ndarray:
    m = 1 << bits
    return ((x + (m >> 1)) % m) - (m >> 1)


class _Spad:
    """One double-buffered operand scratchpad."""

    def __init__(self, name: str, lanes: int, depth: int, ab: int, rng):
        self.name = name
        self.data = rng.integers(0, 256, size=(2, lanes, depth, ab), dtype=np.uint8)
        self.free = deque([0, 1])
        self.producer = None
        self.committed = deque()
        self.consumer = None
        self.commit_seq = [-1, -1]        # load sequence number of each bank's COMMIT

    def produce(self) -> int:
        if self.producer is None:
            if not self.free:
                raise CommandError(f"LOAD to {self.name}: the producer owns no bank and none is free "
                                   f"(no earlier EXEC releases one: deadlock)")
            self.producer = self.free.popleft()
        return self.producer

    def commit(self, seq: int) -> None:
        if self.producer is None:
            raise CommandError(f"COMMIT of {self.name} with no bank being filled")
        self.commit_seq[self.producer] = seq
        self.committed.append(self.producer)
        self.producer = None

    def consume(self) -> int:
        if self.consumer is None:
            if not self.committed:
                raise CommandError(f"EXEC: no committed {self.name} bank (deadlock)")
            self.consumer = self.committed.popleft()
        return self.consumer

    def release(self) -> None:
        if self.consumer is None:
            raise CommandError(f"REL_{self.name} with no bank held")
        self.free.append(self.consumer)
        self.consumer = None

    def idle(self) -> bool:
        return self.producer is None and not self.committed and self.consumer is None


class Machine:
    def __init__(self, image: bytearray, config: AccelConfig, garbage_seed: int = 0):
        self.cfg = config
        self.R, self.C = config.rows, config.cols
        self.AB = config.axi_data_width // 8
        self.image = image
        self.mem = np.frombuffer(image, dtype=np.uint8)
        rng = np.random.default_rng(garbage_seed)
        self.A = _Spad("A", self.R, config.spad_a_depth // self.AB, self.AB, rng)
        self.B = _Spad("B", self.C, config.spad_b_depth // self.AB, self.AB, rng)
        self.P = np.zeros(4 * config.spad_c_depth, np.int64)
        self.X = rng.integers(0, 256, size=(config.spad_c_depth, self.AB), dtype=np.uint8)
        self.S: deque = deque()           # (beat, seq of the LOAD S that brought it)
        # the vector engine's function table (VEC LUT_SET / LUT), random until set
        self.T = rng.integers(0, 256, size=256, dtype=np.uint8)
        self.Cq: deque = deque()          # (tile, seq of the later of its operands' COMMITs)
        self.partial = None               # (sums, K so far) of a tile an EXEC CHAIN left open
        # in-flight hazards: the accelerator resolves LOAD P / LOAD X against earlier STOREs /
        # VECs at dispatch, but a later consumer may run before the load's data are routed unless
        # it waits for data of a load issued after it (the router is in load order)
        self.seq = 0
        self.P_seq = np.full(config.spad_c_depth, -1, np.int64)
        self.X_seq = np.full(config.spad_c_depth, -1, np.int64)

    # ---- DMA ---------------------------------------------------------------------------------
    def _check(self, what, addr, stride, rows, nbytes):
        if addr % self.AB or stride % self.AB:
            raise CommandError(f"{what}: address {addr} / stride {stride} not a multiple of AB={self.AB}")
        last = addr + (rows - 1) * stride + nbytes
        if addr < 0 or last > self.mem.size:
            raise CommandError(f"{what}: [{addr}, {last}) outside the image of {self.mem.size} bytes")

    def dma_read(self, addr, beats, rows, stride, c: LayerCounters) -> np.ndarray:
        """rows x beats x AB bytes (uint8)."""
        self._check("DMA read", addr, stride, rows, beats * self.AB)
        idx = addr + np.arange(rows)[:, None] * stride + np.arange(beats * self.AB)[None, :]
        c.dram_beats_read += rows * beats
        c.dram_bytes_read += rows * beats * self.AB
        return self.mem[idx].reshape(rows, beats, self.AB)

    def dma_write(self, addr, data: np.ndarray, rows, stride, c: LayerCounters) -> None:
        nbytes = data.shape[1]
        self._check("DMA write", addr, stride, rows, nbytes)
        idx = addr + np.arange(rows)[:, None] * stride + np.arange(nbytes)[None, :]
        self.mem[idx] = data.astype(np.int64).astype(np.uint8)
        c.dram_beats_written += rows * nbytes // self.AB
        c.dram_bytes_written += rows * nbytes

    # ---- commands -----------------------------------------------------------------------------
    def load(self, k: C_.Load, c: LayerCounters) -> None:
        if k.beats < 1 or k.rows < 1:
            raise CommandError(f"LOAD with beats={k.beats} rows={k.rows}")
        zero = bool(k.flags & C_.ZERO)
        if k.dst in (C_.DST_A, C_.DST_B):
            sp = self.A if k.dst == C_.DST_A else self.B
            data = (np.zeros((k.rows, k.beats, self.AB), np.uint8) if zero
                    else self.dma_read(k.addr, k.beats, k.rows, k.stride, c))
            bank = sp.produce()
            lanes, depth = sp.data.shape[1], sp.data.shape[2]
            if k.flags & C_.LANES:
                if k.index + k.rows > lanes or k.word + k.beats > depth:
                    raise CommandError(f"LOAD {sp.name}: lanes {k.index}+{k.rows} / words "
                                       f"{k.word}+{k.beats} outside {lanes} x {depth}")
                sp.data[bank, k.index:k.index + k.rows, k.word:k.word + k.beats] = data
            else:
                n = k.rows * k.beats
                if k.index >= lanes or k.word + n > depth:
                    raise CommandError(f"LOAD {sp.name}: lane {k.index} / words {k.word}+{n} outside "
                                       f"{lanes} x {depth}")
                sp.data[bank, k.index, k.word:k.word + n] = data.reshape(n, self.AB)
            if k.flags & C_.COMMIT:
                sp.commit(self.seq)
            return
        if (zero and k.dst != C_.DST_S) or k.flags & (C_.LANES | C_.COMMIT):
            raise CommandError(f"LOAD to {C_.DST_NAMES.get(k.dst, k.dst)} with A/B-only flags {k.flags}")
        data = (np.zeros((k.rows * k.beats, self.AB), np.uint8) if zero
                else self.dma_read(k.addr, k.beats, k.rows, k.stride, c).reshape(-1, self.AB))
        if k.dst == C_.DST_P:
            words = np.frombuffer(data.tobytes(), "<i4").astype(np.int64)
            lo = 4 * k.index
            if lo + words.size > self.P.size:
                raise CommandError(f"LOAD P: words {lo}+{words.size} outside {self.P.size}")
            self.P[lo:lo + words.size] = words
            self.P_seq[lo // 4:(lo + words.size + 3) // 4] = self.seq
        elif k.dst == C_.DST_X:
            if k.index + len(data) > len(self.X):
                raise CommandError(f"LOAD X: beats {k.index}+{len(data)} outside {len(self.X)}")
            self.X[k.index:k.index + len(data)] = data
            self.X_seq[k.index:k.index + len(data)] = self.seq
        elif k.dst == C_.DST_S:
            self.S.extend((beat, self.seq) for beat in data)
        else:
            raise CommandError(f"LOAD to unknown dst {k.dst}")

    def _operand(self, sp: _Spad, bank: int, word: int, K: int) -> np.ndarray:
        kw = -(-K // self.AB)
        if word + kw > sp.data.shape[2]:
            raise CommandError(f"EXEC: {sp.name} words {word}+{kw} outside depth {sp.data.shape[2]}")
        lanes = sp.data[bank, :, word:word + kw].reshape(sp.data.shape[1], -1)[:, :K]
        return lanes.view(np.int8).astype(np.int64)

    def exec_(self, k: C_.Exec, c: LayerCounters) -> None:
        lim = min(self.cfg.spad_a_depth, self.cfg.spad_b_depth, (1 << C_.Exec.SPEC.field("K").bits) - 1)
        if not 1 <= k.K <= lim:
            raise CommandError(f"EXEC K={k.K} outside 1..{lim}")
        ab, bb = self.A.consume(), self.B.consume()
        b = self._operand(self.B, bb, k.b_word, k.K)
        if k.flags & C_.DW:     # depthwise: word a_word + k of each A lane, column j its byte j
            if self.C != self.AB:
                raise CommandError(f"EXEC DW needs cols == AXI bytes, got {self.C} and {self.AB}")
            if k.a_word + k.K > self.A.data.shape[2]:
                raise CommandError(f"EXEC: A words {k.a_word}+{k.K} outside depth {self.A.data.shape[2]}")
            a = self.A.data[ab, :, k.a_word:k.a_word + k.K].view(np.int8).astype(np.int64)
            prod = np.einsum("ikj,jk->ij", a.reshape(self.R, k.K, self.AB), b)
        else:
            a = self._operand(self.A, ab, k.a_word, k.K)
            prod = a @ b.T
        acc, k_sum = self.partial if self.partial is not None else (0, 0)
        acc, k_sum = acc + prod, k_sum + k.K            # a CHAIN run is one tile in the core
        if k_sum > self.cfg.max_k:
            raise CommandError(f"EXEC: a tile of K={k_sum} (CHAIN) exceeds max_k={self.cfg.max_k}")
        if k.flags & C_.CHAIN:
            self.partial = (acc, k_sum)
        else:
            self.partial = None
            self.Cq.append((_wrap(acc, self.cfg.acc_width),
                            max(self.A.commit_seq[ab], self.B.commit_seq[bb])))
            c.tiles += 1
        if k.flags & C_.REL_A:
            self.A.release()
        if k.flags & C_.REL_B:
            self.B.release()
        c.array_macs += self.R * self.C * k.K
        c.exec_cycles += k.K

    def store(self, k: C_.Store, c: LayerCounters) -> None:
        if not self.Cq:
            raise CommandError("STORE with no C tile from an earlier EXEC (deadlock)")
        if not 1 <= k.valid_rows <= self.R:
            raise CommandError(f"STORE valid_rows={k.valid_rows} outside 1..{self.R}")
        acc, ready = self.Cq.popleft()
        if k.flags & C_.S_PER_TENSOR:
            idx = np.full(self.C, k.p_index)
        else:
            idx = k.p_index + np.arange(self.C)
        if idx.max() >= self.P.size // 4:
            raise CommandError(f"STORE records {k.p_index}.. outside the parameter memory")
        if self.P_seq[idx].max() > ready:
            raise CommandError(f"STORE reads records {k.p_index}.. of a LOAD P that no COMMIT its "
                               f"tile waited for follows: the records may still be in flight")
        rec = self.P.reshape(-1, 4)[idx]
        y = _wrap(_wrap(acc, 32) + rec[:, 0][None, :], 32)
        y = q.requantize(y, rec[:, 1][None, :], rec[:, 2][None, :], bool(k.flags & C_.S_RELU))
        self.dma_write(k.addr, y[:k.valid_rows], k.valid_rows, k.stride, c)

    def vec(self, k: C_.Vec, c: LayerCounters) -> None:
        if k.flags & (C_.V_LUT_SET | C_.V_LUT):
            return self._vec_lut(k, c)
        if k.flags & C_.V_ROWRED:
            return self._vec_rowred(k, c)
        n = k.n
        period = k.mb if k.flags & C_.V_MUL and k.mb > 0 else n
        if n < 1 or k.x_off + min(n, period) > len(self.X):
            raise CommandError(f"VEC n={n} x_off={k.x_off} outside X of {len(self.X)} beats")
        if len(self.S) < n:
            raise CommandError(f"VEC needs {n} S beats, {len(self.S)} were loaded before it (deadlock)")
        beats = [self.S.popleft() for _ in range(n)]
        s = np.array([b for b, _ in beats]).view(np.int8).astype(np.int64)
        # MUL with mb > 0: X beat x_off + (i mod mb) (a vector re-read per pixel)
        xi = k.x_off + (np.arange(n) % k.mb if k.flags & C_.V_MUL and k.mb > 0 else np.arange(n))
        if xi.max() >= len(self.X):
            raise CommandError(f"VEC reads X beat {xi.max()} outside X of {len(self.X)} beats")
        if np.any(self.X_seq[xi] > np.array([q_ for _, q_ in beats])):
            raise CommandError("VEC reads X beats of a LOAD X issued after the LOAD S of its S beats")
        a = self.X[xi].view(np.int8).astype(np.int64)
        if k.flags & C_.V_MUL:
            if k.flags & (C_.V_MAX | C_.V_RELU):
                raise CommandError(f"VEC with flags {k.flags}: MUL takes no MAX/RELU")
            y = q.requantize(a * s, k.ma, k.shift)
        elif k.flags & C_.V_MAX:
            y = np.maximum(a, s)
        else:
            y = q.residual_add(a, s, k.ma, k.mb, k.shift)
        if k.flags & C_.V_RELU:
            y = np.maximum(y, 0)
        if k.flags & C_.V_TO_X:
            if k.dst + n > len(self.X):
                raise CommandError(f"VEC TO_X dst={k.dst} n={n} outside X")
            self.X[k.dst:k.dst + n] = y.astype(np.int8).view(np.uint8)
            self.X_seq[k.dst:k.dst + n] = -1
        else:
            self.dma_write(k.dst, y.reshape(1, -1), 1, 0, c)

    def _vec_rowred(self, k: C_.Vec, c: LayerCounters) -> None:
        """ROWRED: n S beats in rows of x_off beats (X unused); per row R (max / sum / sum of
        squares of its first mb & 0xFFFF bytes, op mb >> 16), sat8(RDBPOT(SRDHM(R, ma),
        shift)) in every byte of the row's beats, to DRAM at dst."""
        from .executor import row_reduce
        n, bpr, length, op = k.n, k.x_off, k.mb & 0xFFFF, k.mb >> 16 & 3
        if k.flags & ~C_.V_ROWRED:
            raise CommandError(f"VEC with flags {k.flags}: ROWRED takes no other flag")
        if bpr < 1 or n % bpr or not 1 <= length <= bpr * self.AB:
            raise CommandError(f"VEC ROWRED n={n} in rows of {bpr} beats of {length} elements")
        if len(self.S) < n:
            raise CommandError(f"VEC needs {n} S beats, {len(self.S)} were loaded before it (deadlock)")
        beats = [self.S.popleft() for _ in range(n)]
        s = np.array([b for b, _ in beats]).view(np.int8).astype(np.int64)
        rows = s.reshape(n // bpr, bpr * self.AB)
        y = q.requantize(row_reduce(rows[:, :length], op), k.ma, k.shift)
        out = np.repeat(y[:, None], bpr * self.AB, axis=1)
        self.dma_write(k.dst, out.reshape(1, -1), 1, 0, c)

    def _vec_lut(self, k: C_.Vec, c: LayerCounters) -> None:
        """LUT_SET: the n S beats are the table (exactly 256 bytes); LUT: table[s + 128] of
        n S beats (X unused), to DRAM or with TO_X into X."""
        n = k.n
        if k.flags & C_.V_LUT_SET and k.flags & C_.V_LUT or k.flags & (C_.V_MAX | C_.V_RELU):
            raise CommandError(f"VEC with flags {k.flags}: LUT_SET/LUT take no other function")
        if n < 1 or len(self.S) < n:
            raise CommandError(f"VEC needs {n} S beats, {len(self.S)} were loaded before it (deadlock)")
        s = np.array([self.S.popleft()[0] for _ in range(n)])
        if k.flags & C_.V_LUT_SET:
            if n * self.AB != 256 or k.flags & C_.V_TO_X:
                raise CommandError(f"VEC LUT_SET of {n} beats ({n * self.AB} bytes, not 256)")
            self.T = s.reshape(-1).astype(np.uint8).copy()
            return
        y = self.T[(s.view(np.int8).astype(np.int64) + 128)]
        if k.flags & C_.V_TO_X:
            if k.dst + n > len(self.X):
                raise CommandError(f"VEC TO_X dst={k.dst} n={n} outside X")
            self.X[k.dst:k.dst + n] = y
            self.X_seq[k.dst:k.dst + n] = -1
        else:
            self.dma_write(k.dst, y.view(np.int8).astype(np.int64).reshape(1, -1), 1, 0, c)

    def run_layer(self, cmd_base: int, cmd_count: int, index: int = 0) -> LayerCounters:
        """Run one start's commands; a FENCE among them is rejected (:meth:`run` takes them)."""
        (c,) = self.run(cmd_base, cmd_count, [index], fences=False)
        return c

    def run(self, cmd_base: int, cmd_count: int, indices: list[int],
            fences: bool = True) -> list[LayerCounters]:
        """Run one start's ``cmd_count`` commands from ``cmd_base``: the layers ``indices`` in
        order, separated by FENCEs (one counter set per layer; ``commands`` counts the layer's
        own, not the FENCEs). A FENCE is a barrier: every earlier command is complete, so at a FENCE, as
        at the end of a run, the S and C streams must be empty and every bank free."""
        cs = [LayerCounters(i) for i in indices]
        nbytes = C_.CMD_BYTES * cmd_count
        self._check("command fetch", cmd_base, 0, 1, nbytes)
        raw = bytes(self.image[cmd_base:cmd_base + nbytes])
        seg = 0
        c = cs[0]
        c.cmd_beats_read = -(-nbytes // self.AB)
        for i in range(cmd_count):
            k = C_.decode(struct.unpack_from("<8I", raw, C_.CMD_BYTES * i))
            if k.OP == OP_FENCE:
                if not fences:
                    raise CommandError(f"layer {c.index} command {i}: a FENCE in a layer's own "
                                       f"commands")
                self._check_drained(c.index)
                seg += 1
                if seg >= len(cs):
                    raise CommandError(f"run of layers {indices}: FENCE number {seg} where "
                                       f"{len(cs) - 1} were expected")
                c = cs[seg]
                continue
            try:
                if isinstance(k, C_.Load):
                    self.seq += 1
                    self.load(k, c)
                elif isinstance(k, C_.Exec):
                    self.exec_(k, c)
                elif isinstance(k, C_.Store):
                    self.store(k, c)
                else:
                    self.vec(k, c)
            except CommandError as e:
                raise CommandError(f"layer {c.index} command {i} ({k.KIND}): {e}") from None
            c.commands += 1
        if seg != len(cs) - 1:
            raise CommandError(f"run of layers {indices}: {seg} FENCEs where {len(cs) - 1} "
                               f"were expected")
        self._check_drained(c.index)
        return cs

    def _check_drained(self, index: int) -> None:
        if self.S or self.Cq or self.partial is not None or not self.A.idle() or not self.B.idle():
            raise CommandError(f"layer {index} ends with {len(self.S)} S beats, {len(self.Cq)} C tiles "
                               f"pending or a scratchpad bank not released")


def fill_garbage(image: bytearray, lo: int, hi: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    image[lo:hi] = rng.integers(0, 256, size=hi - lo, dtype=np.uint8).tobytes()


@dataclass
class Execution:
    image: bytearray
    layers: list            # LayerCounters per layer


def execute(compiled, image, garbage_seed: int = 0, per_layer: bool = False) -> Execution:
    """Run every layer of ``compiled`` on ``image`` as the host does: the runs of
    ``compiled.run_groups(per_layer)`` (default: the whole model per start, FENCEs between
    the layers; ``per_layer``: each layer's LayerEntry cmd_addr/cmd_count per start)."""
    m = Machine(image, compiled.config, garbage_seed)
    out = []
    for g in compiled.run_groups(per_layer):
        out += m.run(g["cmd_addr"], g["cmd_count"],
                     [compiled.layers[i]["index"] for i in g["layers"]])
    return Execution(image, out)


def run(compiled, inputs_q, garbage: bool = True, seed: int = 0,
        per_layer: bool = False) -> tuple[list, Execution]:
    """Write the inputs into a copy of the image (activations pre-filled with random bytes when
    ``garbage``), execute all layers, read the outputs."""
    img = bytearray(compiled.image)
    if garbage:
        acts = [s for s in compiled.symbols.values() if s.kind in ("activation", "output")]
        for s in acts:
            fill_garbage(img, s.addr, s.addr + s.size, seed + s.addr)
        for p in compiled.input_placements:            # input padding is garbage too
            fill_garbage(img, p.addr, p.addr + p.size, seed + p.addr + 1)
            buf = np.frombuffer(img, np.uint8)
            data = np.frombuffer(p.pack_input(inputs_q[compiled.input_placements.index(p)]), np.uint8)
            reg = buf[p.addr:p.addr + p.size]
            keep = p.data_bytes()
            reg[keep] = data[keep]
    else:
        img = compiled.load_inputs(inputs_q)
    ex = execute(compiled, img, seed, per_layer)
    return compiled.read_outputs(ex.image), ex
