"""The systolic matmul core: an output-stationary array of ``rows x cols`` int8 MAC PEs.

Dataflow: output-stationary
---------------------------
Each PE owns one element C[i][j] of a ``rows x cols`` output tile; the reduction dimension K
streams through the array (A moves right along PE rows, B moves down PE columns) and the partial
sums never move until the tile is done. We chose it over weight-stationary because:

* one engine serves Linear, Conv2d (as im2col) and bmm alike: every layer is a sequence of tiles
  C[M_tile, N_tile] = A[M_tile, K] @ B[K, N_tile], with K (the reduction length of the layer)
  streamed, so nothing has to be preloaded into the array and K is per tile (1..max_k; the
  matmul unit feeds a tile longer than a scratchpad bank from several EXECs, see CHAIN);
* there is no weight preload phase: a weight-stationary array must load ``rows x cols`` weights
  before each block and only pays off when a weight block is reused over many input rows;
* partial sums stay at full accumulator width inside the PE (no 32-bit partial-sum traffic
  between PEs or to memory, which WS needs when K > rows).

The trade-off: output-stationary re-streams B (and A) for every output tile, i.e. it needs
``rows + cols`` operands per cycle of input bandwidth, whereas weight-stationary reuses a weight
block for as many input rows as it likes and only streams activations (``rows`` per cycle). With
the scratchpads in front of the core this bandwidth is on-chip, so OS costs little; for small K
(K < rows) OS cannot hide the drain and stalls (see latency below).

Ports and protocol (all streams valid/ready, AXI-Stream style: a beat moves on a rising edge
where valid and ready are both high; a sender must hold a beat until it is taken)
-------------------------------------------------------------------------------------------
* ``clk``, ``rst`` (synchronous, active high).
* A stream ``a_data`` (rows x data_width), ``a_last``, ``a_valid``, ``a_ready`` (out): beat k of
  a tile is the column k of the A tile, *unskewed*: lane i (bits ``[i*dw, (i+1)*dw)``) is
  A[i][k], signed. ``a_last`` marks the beat of the tile's final k.
* B stream ``b_data`` (cols x data_width), ``b_last``, ``b_valid``, ``b_ready`` (out): beat k is
  row k of the B tile, lane j is B[k][j]. ``b_last`` must equal ``a_last``.
  The two streams are joined: a beat is taken from both on the same edge (``a_ready`` waits for
  ``b_valid`` and ``b_ready`` for ``a_valid``). K is the number of beats up to and including
  ``last``: 1 <= K <= config.max_k (the accumulator cannot overflow within max_k; a longer tile
  is not detected and wraps).
* C stream ``c_data`` (cols x acc_width), ``c_last``, ``c_valid`` (out), ``c_ready``: ``rows``
  beats per tile, beat r is row r of C (lane j = C[r][j], signed, two's complement), tiles in
  input order. ``c_last`` marks beat ``rows - 1``.
* ``err`` (out): sticky, set if a beat was taken with ``a_last != b_last``.
* Fed form (``make_systolic_core(config, fed=True)``, the matmul unit's): the core has no
  admission of its own and takes every beat offered (``a_ready == b_valid & ~rst``); the
  feeder offers a tile's last beat only when a :class:`LastBeatAdmission` of its own, fed with
  its takes of last beats and the core's C pops (``c_valid & c_ready``), says ``ok``. The
  cycles are the same as the self-admitting core's: it is the same state machine with the same
  inputs, run beside the feeder's head (the core's flop read by the feeder's take, and the
  feeder's head read by the core's credits, put two routes across the die in one cycle's loop:
  the placed 8x8's worst paths on seed 2 at fc1165b, 8.40 and 8.01 ns).
* Depthwise mode (``depthwise=True``, built when cols * data_width == axi_data_width, i.e.
  cols == AB): two more inputs of the A stream, taken on the same edges as ``a_data``:
  ``a_dw`` (1) and ``a_words`` (rows x cols x data_width; lane i = the word of A row i, byte j
  in bits ``[(i*cols + j)*dw, ...)``). A beat with ``a_dw`` high feeds PE column j of A row i
  with byte j of lane i's word (``a_data`` is ignored), so such a tile computes
  ``C[i][j] = sum_k A_i[k][j] * B[k][j]`` (one channel per column: a depthwise conv with
  K = taps beats); with ``a_dw`` low the beat is a normal one. The two kinds may be mixed
  freely, beat by beat, with no change of timing: the latency below holds for both.
  Inside: the lane's word (its byte 0 being ``a_data`` lane i in normal mode) and ``a_dw``
  go through the row skew, then along each row byte j through j registers and the flag
  through a chain of 1-bit registers, so byte j reaches PE (p, j) on the same edge as the A
  beat that travels along the row; a 2:1 mux in front of PE (p, j)'s A input (j >= 1) picks
  the byte when the flag is set. Registers: rows*(rows-1)/2 * (cols-1)*dw + 1 more in the skew,
  rows * (cols*(cols-1)/2 * dw + cols - 1) along the rows.

The core skews the operands itself (row p of the array is fed p cycles later, column j j
cycles later), so the array is free running: a cycle without an input beat sends a bubble
(valid bit 0) through it, and the PEs have no clock-enable from a global stall. Flow control
lives in front of the array only: the input streams are back-pressured on a tile's *last* beat,
never on the others, and only when (1) fewer than ``rows`` cycles have passed since the previous
tile's last beat (the drain of a tile takes ``rows`` cycles, so K < rows tiles wait), or (2) the
output FIFO has no room reserved for the tile's ``rows`` result rows (output back-pressure).
The output FIFO is deep enough that with ``c_ready`` held high case (2) never happens.

Inside: PE(p, j) (see ``pe.py``) accumulates A-row ``rows-1-p`` (the array is mirrored so that
the bottom row, which finishes last, is drained first: C leaves in row order 0, 1, ...). On a
tile's last beat each PE moves its sum into its output register; each column's output registers
form a downward shift chain, shifted by flags that travel along the PE rows, so the column drains
through its bottom PE in ``rows`` cycles while the next tile already accumulates. A deskew buffer
realigns the columns into one row of C per beat, which goes through the output FIFO: a RAM
(``lutram``, distributed RAM on ECP5) of ``out_fifo_depth`` rows, a power of two, with
registered pointers, a registered ``c_valid`` (non-empty) flag and a head register
(``fifo_head``) that drives ``c_data``/``c_last``: the C stream leaves from flops, not from the
RAM's read mux. The RAM is ``FIFO_CHUNK``-bit chunks, each with its own kept copies
(``keep_ff``) of the pointers and the write enable, so no address net spans the whole row. It
has no full check, since the credits never admit a tile whose rows it could not hold.

Target: the PE's multiplier depends on ``config.target`` (``ecp5.uses_ecp5_dsp``): on ECP5 each
PE instantiates a MULT18X18D with its internal input and output registers (simulation then
needs ``rtl_lib/MULT18X18D_sim.sv``, which ``emit_core`` lists in ``filelist_sim.f`` only),
and the operands enter the array sign-extended to the block's 18 bits (``rtl_lib.pe``);
elsewhere the multiply is inferred with the same register stages. The latency below holds for
every target.

Timing (FPGA Fmax): there is no global stall or enable. The only signals that reach every PE
are the clock and the synchronous reset (which clears the valid/drain flags and the
accumulators; it is not on any data path). Every other path is PE-to-neighbour, register to
register. Inside a PE the multiplier has registers on both sides (on ECP5 those inside the
MULT18X18D) and one more fabric register (``p_r``) before the accumulator, so the longest path
is ``p_r`` -> the accumulator's carry chain -> ``acc``, local to one PE (``bench/fmax.py``
measures the clock). The admission logic (ready) is a few gates and one flop in front of the array;
the output FIFO's pointers count by themselves (power-of-two depth) and its flags are registers.

Reset: a one-cycle ``rst`` in the middle of a tile drops every beat in flight (valid flags in
the skew and the PEs, drain counters, FIFO, credits); ``a_ready``/``b_ready`` are low while
``rst`` is high.

Latency (cycles = rising edges; no back-pressure: all valids and ``c_ready`` high)
----------------------------------------------------------------------------------
Let the last beat of a tile be taken on edge s. Then its C row r is on ``c_data`` with
``c_valid`` high for the edge s + rows + cols + 4 + r (r = 0 .. rows-1), i.e.

* first-result latency: ``rows + cols + 4`` edges after the tile's last input beat
  (``K + rows + cols + 3`` after its first input beat); the 4 is ``pe.PE_LATENCY`` (the PE's
  registers, the multiplier's input and output registers, ``p_r``), the same on every target;
* per-tile occupancy of the input: ``max(K, rows)`` cycles (the last beat of tile t+1 is taken
  ``max(K_{t+1}, rows)`` edges after that of tile t, when the inputs are offered back to back);
* a run of tiles K_0, ..., K_{T-1} offered back to back spans, counted in cycles from the one in
  which the first input beat is taken to the one in which the last C beat is taken, inclusive::

      cycles = K_0 + sum_{t>=1} max(K_t, rows) + 2*rows + cols + 3

  (``run_cycles`` below). The ideal for T tiles is sum K_t (one MAC per PE per cycle), so the
  fill/drain overhead is ``2*rows + cols + 3`` cycles per run, not per tile.

Resources: rows*cols PEs (1 multiplier, 4*data_width + 2*acc_width + 9 fabric flip-flops each
on ECP5, whose DSP holds the operand and product registers; 2*data_width more elsewhere), skew
buffers of rows*(rows-1)/2 and cols*(cols-1)/2 operands, a deskew buffer of cols*(cols-1)/2
accumulators and an output FIFO of ``out_fifo_depth(rows, cols)`` rows of C (+1 bit, last),
with one more row of flops as its head register.
"""

from __future__ import annotations

from pycde import Clock, Input, Module, Output, Reset
from pycde.constructs import Mux
from pycde.signals import BitsSignal
from pycde.types import Bits

from ..config import AccelConfig
from ..regs import thermometer_step
from .bits import count_width, inc
from .common import NamedReg
from .ecp5 import DSP_WIDTH, uses_ecp5_dsp
from .keep_ff import kept_counter, replicated
from .lutram import Lutram, addr_width
from .pe import PE_LATENCY, make_pe
from .skew import make_skew
from .stream import Stream, module


#: output FIFO bits per RAM chunk (each chunk has its own copies of the pointers, see below)
FIFO_CHUNK = 64


# ---- the latency contract (the tests check the simulated counts against these) -------------

def first_result_latency(rows: int, cols: int) -> int:
    """Edges from a tile's last input beat to its first C beat."""
    return rows + cols + PE_LATENCY


def tile_occupancy(rows: int, k: int) -> int:
    """Cycles a tile of K beats holds the input when tiles come back to back."""
    return max(k, rows)


def run_cycles(rows: int, cols: int, ks: list[int]) -> int:
    """Cycles from the first input beat to the last C beat (inclusive) for tiles ``ks``."""
    if not ks:
        return 0
    return ks[0] + sum(max(k, rows) for k in ks[1:]) + 2 * rows + cols + PE_LATENCY - 1


def out_fifo_depth(rows: int, cols: int) -> int:
    """Output FIFO rows that make the credit check never stall with ``c_ready`` high.

    A tile reserves ``rows`` entries on the edge its last beat is taken (edge s) and frees
    them one per edge s + first_result_latency + r. With tiles rows edges apart (the fastest
    the core takes them), the tiles whose rows are still held at an admission are summed;
    the depth is that sum rounded up to a power of two, so that the FIFO's read and write
    pointers wrap by themselves (no compare-with-depth on the pointer path).
    """
    first = first_result_latency(rows, cols)
    held = 0
    m = 1
    while True:
        gap = m * rows
        freed = min(max(gap - first, 0), rows)  # entries of a tile gap edges ago already freed
        if freed >= rows:
            break
        held += rows - freed
        m += 1
    need = rows + held
    return 1 << (need - 1).bit_length()


class LastBeatAdmission:
    """The flow control on a tile's last beat (the module docstring's cases (1) and (2)), built
    inside a module: ``ok`` is a flop (``last_ok``), high when a last beat may be taken on this
    edge, i.e. the output FIFO has room for the tile's ``rows`` result rows and ``rows`` edges
    have passed since the previous tile's last beat. :meth:`update` closes the loop with the
    edge's two events: ``last_fire`` (a last beat is taken) and ``pop`` (a C row leaves the
    output FIFO of ``depth`` rows). Reset: ``ok`` high, all rows free, the gap satisfied.

    Registers: ``credits`` (the free output FIFO rows, 0 .. depth, as a thermometer code, bit
    k: more than k free; each bit's next value is a mux of four of its bits picked by the two
    events: no adder, no compare. With a binary count, the compares and the events' mux were
    five LUTs ordered with the pop first: matmul._core_c_valid -> the pop -> a 2.76 ns route
    -> four LUTs -> credit_ok was the placed 8x8's third path on seed 2 at de882f7, 7.80 ns),
    ``last_gap`` (edges since the last beat, saturating at ``rows``) with its flag
    ``last_gap_ok``, and ``last_ok`` = credits[rows - 1] & last_gap_ok of the next edge.
    """

    def __init__(self, clk, rst, rows: int, depth: int):
        assert depth >= rows
        self.clk, self.rst, self.rows, self.depth = clk, rst, rows, depth
        self.credits = NamedReg(depth, clk, rst, (1 << depth) - 1, name="credits")
        self.last_ok = NamedReg(1, clk, rst, 1, name="last_ok")
        self.ok = self.last_ok.q

    def update(self, last_fire, pop) -> None:
        """Drive the registers' next values from this edge's events."""
        clk, rst, rows, depth = self.clk, self.rst, self.rows, self.depth
        one, zero = Bits(1)(1), Bits(1)(0)
        if rows > 1:
            gw = count_width(rows)
            gap = NamedReg(gw, clk, rst, rows, name="last_gap")
            gap_ok_q = NamedReg(1, clk, rst, 1, name="last_gap_ok")
            gap_ok = gap_ok_q.q
            gap_inc = inc(gap.q)
            gap.next(Mux(last_fire, Mux(gap_ok, gap_inc, gap.q), Bits(gw)(1)))
            # gap == rows after this edge: it saturates there; a last beat restarts it at 1
            gap_ok_next = ~last_fire & (gap_ok | (gap_inc == Bits(gw)(rows)))
            gap_ok_q.next(gap_ok_next)
        else:
            gap_ok_next = one

        # -rows when a last beat is taken, +1 per C row that leaves: credits + d > k is
        # bit k - d, so each bit is a mux of four bits by the two events
        def more_than(k):          # the current credits > k
            if k < 0:
                return one
            return self.credits.q[k] if k < depth else zero

        nxt = [Mux(last_fire, Mux(pop, more_than(k), more_than(k - 1)),
                   Mux(pop, more_than(k + rows), more_than(k + rows - 1)))
               for k in range(depth)]
        self.credits.next(BitsSignal.concat(nxt[::-1]) if depth > 1 else nxt[0])
        self.last_ok.next(nxt[rows - 1] & gap_ok_next)


# ---- the generator ---------------------------------------------------------------------------

def has_depthwise(config: AccelConfig) -> bool:
    """Whether the core (and the EXEC engine) of ``config`` has the depthwise mode: one A word
    per lane holds exactly the ``cols`` channels of the array."""
    return config.cols * config.data_width == config.axi_data_width


def make_systolic_core(config: AccelConfig, fed: bool = False) -> type[Module]:
    """The core module class for ``config`` (ConfigError if the config cannot be built);
    ``fed``: the fed form, whose feeder runs the last-beat admission (module docstring)."""
    config.validate()
    rows, cols = config.rows, config.cols
    dw, aw = config.data_width, config.acc_width
    dwm = has_depthwise(config) and cols > 1
    depth = out_fifo_depth(rows, cols)
    use_dsp = uses_ecp5_dsp(config.target, dw)
    PE = make_pe(dw, aw, use_dsp=use_dsp)
    extra = PE_LATENCY - 2  # drain control timing was first written for a 2-stage PE
    aword = cols * dw if dwm else dw          # the A lane through the row skew
    SkewA = make_skew(rows, aword + 1 + (1 if dwm else 0))  # lane p: A (word), last, dw flag
    SkewV = make_skew(rows, 1, reset=True)    # lane p: valid flag, delayed p
    SkewB = make_skew(cols, dw)               # lane j: B element, delayed j
    Deskew = make_skew(cols, aw, descending=True)  # lane j: delayed cols-1-j

    io = {"clk": Clock(), "rst": Reset(),
          **Stream(data=rows * dw, last=1).sink("a"),
          **Stream(data=cols * dw, last=1).sink("b"),
          **Stream(data=cols * aw, last=1).source("c"), "err": Output(Bits(1))}
    if dwm:
        io.update({"a_dw": Input(Bits(1)), "a_words": Input(Bits(rows * cols * dw))})

    def build(ports):
        clk, rst = ports.clk, ports.rst
        one = Bits(1)(1)
        zero = Bits(1)(0)

        # -- admission: back-pressure only a tile's last beat ------------------------------
        # (the fed form's feeder runs it beside its head; see the module docstring)
        adm = None if fed else LastBeatAdmission(clk, rst, rows, depth)
        ok = ~rst.as_bits() if fed else ~rst.as_bits() & (~ports.a_last | adm.ok)
        fire = ports.a_valid & ports.b_valid & ok
        last_fire = fire & ports.a_last
        ports.a_ready = ports.b_valid & ok
        ports.b_ready = ports.a_valid & ok
        err = NamedReg(1, clk, rst, 0, name="err_r")
        err.next(err.q | (fire & (ports.a_last ^ ports.b_last)))
        ports.err = err.q

        # -- skew the operands ----------------------------------------------------------
        lanes_a = []
        for p in range(rows):
            i = rows - 1 - p  # the array is mirrored: PE row p holds A row rows-1-p
            a_i = ports.a_data[i * dw:(i + 1) * dw]
            if dwm:  # byte 0 is column 0's operand in both modes; bytes 1.. only depthwise
                word = ports.a_words[i * cols * dw:(i + 1) * cols * dw]
                a_i = BitsSignal.concat([word[dw:], Mux(ports.a_dw, a_i, word[0:dw])])
                lanes_a.append(BitsSignal.concat([ports.a_dw, ports.a_last, a_i]))
            else:
                lanes_a.append(BitsSignal.concat([ports.a_last, a_i]))
        skew_a = SkewA(clk=clk, d_in=BitsSignal.concat(list(reversed(lanes_a))),
                       instance_name="skew_a").d_out
        fires = BitsSignal.concat([fire] * rows) if rows > 1 else fire
        skew_v = SkewV(clk=clk, rst=rst, d_in=fires, instance_name="skew_v").d_out
        skew_b = SkewB(clk=clk, d_in=ports.b_data, instance_name="skew_b").d_out

        # -- drain control: the tile's last beat, delayed ---------------------------------
        n_delay = rows + cols + extra
        d = []
        sig = last_fire
        for n in range(n_delay):
            sig = sig.reg(clk, rst, name=f"last_d{n}")
            d.append(sig)
        sh = [zero] * rows
        if rows > 1:
            ccw = count_width(rows - 1)
            cnt = NamedReg(ccw, clk, rst, 0, name="drain_cnt")
            running = cnt.q != Bits(ccw)(0)
            at_end = cnt.q == Bits(ccw)(rows - 1)
            cnt_inc = inc(cnt.q)
            cnt.next(Mux(d[rows - 2 + extra],
                           Mux(running & ~at_end, Bits(ccw)(0), cnt_inc),
                           Bits(ccw)(1)))
            for p in range(1, rows):
                shp = running & (cnt.q.as_uint() <= p).as_bits()
                sh[p] = shp.reg(clk, rst, name=f"drain_sh{p}")

        # -- the array ------------------------------------------------------------------
        lw = aword + 1 + (1 if dwm else 0)
        a_right = [skew_a[p * lw:p * lw + dw] for p in range(rows)]
        l_right = [skew_a[p * lw + aword] for p in range(rows)]
        # depthwise: per row, byte j of the skewed word through j registers, the flag along
        dw_byte = [[None] * cols for _ in range(rows)]
        dw_flag = [[None] * cols for _ in range(rows)]
        if dwm:
            for p in range(rows):
                f = skew_a[p * lw + aword + 1]
                for j in range(1, cols):
                    f = f.reg(clk, rst, name=f"dw_f_r{p}_c{j}")
                    dw_flag[p][j] = f
                    b = skew_a[p * lw + j * dw:p * lw + (j + 1) * dw]
                    for n in range(j):
                        b = b.reg(clk, name=f"dw_b_r{p}_c{j}_{n}")
                    dw_byte[p][j] = b
        v_right = [skew_v[p] for p in range(rows)]
        sh_right = list(sh)
        b_down = [skew_b[j * dw:(j + 1) * dw] for j in range(cols)]
        def ext(x):  # the PEs forward the DSP's 18-bit operands (see rtl_lib.pe)
            return x.as_sint().as_sint(DSP_WIDTH).as_bits() if use_dsp else x
        a_right = [ext(x) for x in a_right]
        b_down = [ext(x) for x in b_down]
        o_down = [Bits(aw)(0)] * cols
        for p in range(rows):
            for j in range(cols):
                a_in = a_right[p]
                if dw_byte[p][j] is not None:
                    a_in = Mux(dw_flag[p][j], a_in, ext(dw_byte[p][j]))
                pe = PE(clk=clk, rst=rst, a_in=a_in, b_in=b_down[j], v_in=v_right[p],
                        l_in=l_right[p], sh_in=sh_right[p], o_in=o_down[j],
                        instance_name=f"pe_r{p}_c{j}")
                a_right[p], v_right[p], l_right[p] = pe.a_out, pe.v_out, pe.l_out
                sh_right[p] = pe.sh_out
                b_down[j], o_down[j] = pe.b_out, pe.o_out

        # -- deskew the bottom row and queue it --------------------------------------------
        bottom = BitsSignal.concat(list(reversed(o_down)))
        aligned = Deskew(clk=clk, d_in=bottom, instance_name="deskew_c").d_out
        ow = count_width(rows)
        ocnt = NamedReg(ow, clk, rst, 0, name="out_cnt")
        o_running = ocnt.q != Bits(ow)(0)
        ocnt_dec = (ocnt.q.as_uint() - 1).as_bits(ow)
        ocnt.next(Mux(d[rows + cols - 1 + extra], Mux(o_running, Bits(ow)(0), ocnt_dec),
                        Bits(ow)(rows)))
        row_last = ocnt.q == Bits(ow)(1)
        # the push flag as a register of its own (== out_cnt != 0), not logic
        push = NamedReg(1, clk, rst, 0, name="out_push")
        push_next = d[rows + cols - 1 + extra] | (o_running & ~row_last)
        push.next(push_next)

        # -- output FIFO: a RAM, registered pointers and a head register (depth a power of
        # two, so the pointers wrap by themselves; no full check: the credits make overflow
        # impossible). C leaves from ``fifo_head``, a register that always holds the entry at
        # the read pointer while the FIFO is not empty, so the C bus starts at flops, not at
        # the RAM's read mux: the LUT-RAM read -> the matmul unit's C slice was the placed
        # 8x8's worst path on four seeds (7a06fda seed 4, ec24c65 seeds 1-3, 8.4-9.1 ns with
        # 7.2-8.0 of routing). The head loads on an edge where it is empty or taken: the
        # entry after it (the RAM read at the next read address), or the row being written
        # when that row becomes the head (``fifo_few``: at most one entry held). The RAM is
        # ``FIFO_CHUNK``-bit chunks, each with its own kept copies of the write enable, both
        # pointers and ``fifo_few``, so a chunk's cells, its addresses and its part of the
        # head can sit together: one address net over the 257-bit RAM spread its cells
        # across the die (ec24c65 seed 1: the read address -> a 5.57 ns route -> a cell).
        # Same cycles as reading the RAM at the read pointer.
        fw = addr_width(depth)
        wr = NamedReg(fw, clk, rst, 0, ce=push.q, name="fifo_wr")
        wr.next(inc(wr.q))
        # the occupancy as a thermometer code (bit k: more than k entries held), shifted up on
        # a push alone and down on a pop alone, so ``c_valid`` (bit 0) and the flags below are
        # bits of it, not compares of pointers: fifo_nonempty -> the pointer compares (five
        # LUTs) -> a 2.20 ns route -> a ``fifo_few`` copy was the placed 8x8's critical path
        # on seed 1 at 3ea0699 (7.97 ns)
        occ = NamedReg(depth, clk, rst, 0, name="fifo_occ")
        nonempty = occ.q[0]
        pop = nonempty & ports.c_ready
        up, down = push.q & ~pop, pop & ~push.q
        occ_next = thermometer_step([occ.q[k] for k in range(depth)], up, down)
        occ.next(BitsSignal.concat(occ_next[::-1]) if depth > 1 else occ_next[0])
        # fifo_few: at most one entry held (after the edge)
        few_next = ~occ_next[1] if depth > 1 else one
        W = cols * aw + 1
        n_ch = -(-W // FIFO_CHUNK)
        cw_ = -(-W // n_ch)                # every chunk one width: one Lutram parameter set
        wdata = BitsSignal.concat([Bits(n_ch * cw_ - W)(0), row_last, aligned]) \
            if n_ch * cw_ > W else BitsSignal.concat([row_last, aligned])
        we_c = replicated(clk, rst, push_next, n_ch, "fifo_we")
        few_c = replicated(clk, rst, few_next, n_ch, "fifo_few", init=1)
        head_in = []
        for c in range(n_ch):
            wa = kept_counter(clk, rst, we_c[c], fw, 0, f"fifo_wr_c{c}")
            ra = kept_counter(clk, rst, pop, fw, 1 % (1 << fw), f"fifo_rd_c{c}")
            wd = wdata[c * cw_:(c + 1) * cw_]
            ram = Lutram(cw_, depth, fw)(clk=clk, we=we_c[c], waddr=wa, wdata=wd, raddr=ra,
                                         instance_name=f"fifo_ram_{c}")
            head_in.append(Mux(few_c[c], ram.rdata, wd))
        head = NamedReg(n_ch * cw_, clk, None, None, ce=~nonempty | ports.c_ready,
                        name="fifo_head")
        head.next(BitsSignal.concat(list(reversed(head_in))))
        ports.c_data = head.q[0:cols * aw]
        ports.c_last = head.q[cols * aw]
        ports.c_valid = nonempty

        if adm is not None:
            adm.update(last_fire, pop)

    return module(f"systolic_core_{rows}x{cols}_d{dw}_a{aw}" + ("_dw" if dwm else "")
                  + ("_fed" if fed else ""), io, build)
