// Verilator-native harness for accel_sim_top (pycde_accel.sim.fast): the clock, the AXI4-Lite
// CSR accesses and the host driver's sequence in C++, the DRAM and the watchdog in the RTL.
//
// The CSR offsets and fields, the performance counters (in the host driver's read order) and
// the error/event bits come from accel_contract.h, generated from pycde_accel.contract at build
// time (contract.harness_header; fast.build_native puts it on the include path).
//
// usage: accel_native SCRIPT +DRAM_IN=<file> +DRAM_OUT=<file>   (sim/axi_mem.sv: binary)
//        [+MEM_BW_NUM=<num> +MEM_BW_DEN=<den>]   the board memory's bytes per cycle, num/den
//        (sim/axi_mem.sv's throttle; Verilated::commandArgs hands every plusarg to the RTL)
// SCRIPT (written by fast.native_script), one command a line:
//   limits <stall_cycles> <idle_cycles> <layer_timeout_cycles>
//   hw <rows> <cols> <axi_bytes>        read hw_info; stop when it differs
//   run <cmd_addr> <cmd_count> <layers> host.Driver.run_group's CSR sequence (one start for
//                                       <layers> layers, FENCEs between them: their stamps
//                                       are read; 1: run_layer's); stop on error
//   dump <lo> <hi>                      write words lo..hi to +DRAM_OUT (the image bytes)
// Output (stdout), one line per event, replayed by fast.run_native through host.Driver:
//   r <value>             a CSR read, in the driver's order
//   t <cycle>             the clock before a run's ctrl.start write and when its irq is seen
//   irq | timeout <n> | trip <kind> <stream> <count> <cycle> <last_stream> <last_cycle>
//                            <moved> <valid> <ready> <beats...>
//   dumped <words>, cycles <total>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "Vtop.h"
#include "accel_contract.h"
#include "verilated.h"

static Vtop *top;
static uint64_t cycles = 0;
static uint64_t main_time = 0;
double sc_time_stamp() { return (double)main_time; }

#define ACCEL_FIELD(v, F) ((v) >> ACCEL_##F##_LSB & ((1u << ACCEL_##F##_WIDTH) - 1u))
static const uint32_t perf_off[ACCEL_NUM_PERF] = ACCEL_PERF_OFFSETS;
static const uint32_t stamp_off[ACCEL_NUM_PERF] = ACCEL_STAMP_OFFSETS;
static const unsigned AXIL_BYTES = sizeof(top->s_axil_wdata) >= 8 ? 8 : 4;

// One rising edge: inputs were set (and evaluated) while clk was low.
static inline void tick() {
    top->clk = 1;
    top->eval();
    main_time += 5;
    top->clk = 0;
    top->eval();
    main_time += 5;
    ++cycles;
}

static void write_csr(uint32_t a, uint32_t v) {
    unsigned sh = (a % AXIL_BYTES) * 8;
    top->s_axil_awaddr = a;
    top->s_axil_awprot = 0;
    top->s_axil_awvalid = 1;
    top->s_axil_wdata = (uint64_t)v << sh;
    top->s_axil_wstrb = 0xFu << (a % AXIL_BYTES);
    top->s_axil_wvalid = 1;
    top->s_axil_bready = 1;
    bool aw = false, w = false, b = false;
    while (!b) {
        top->eval();
        bool aw_fire = top->s_axil_awvalid && top->s_axil_awready;
        bool w_fire = top->s_axil_wvalid && top->s_axil_wready;
        bool b_fire = top->s_axil_bvalid && top->s_axil_bready;
        tick();
        if (aw_fire) { aw = true; top->s_axil_awvalid = 0; }
        if (w_fire) { w = true; top->s_axil_wvalid = 0; }
        if (b_fire) b = true;
    }
    (void)aw; (void)w;
    top->s_axil_bready = 0;
    top->eval();
}

static uint32_t read_csr(uint32_t a) {
    unsigned sh = (a % AXIL_BYTES) * 8;
    top->s_axil_araddr = a;
    top->s_axil_arprot = 0;
    top->s_axil_arvalid = 1;
    top->s_axil_rready = 1;
    uint64_t data = 0;
    bool r = false;
    while (!r) {
        top->eval();
        bool ar_fire = top->s_axil_arvalid && top->s_axil_arready;
        bool r_fire = top->s_axil_rvalid && top->s_axil_rready;
        if (r_fire) data = (uint64_t)top->s_axil_rdata;
        tick();
        if (ar_fire) top->s_axil_arvalid = 0;
        if (r_fire) r = true;
    }
    top->s_axil_rready = 0;
    top->eval();
    uint32_t v = (uint32_t)(data >> sh);
    printf("r %u\n", v);
    return v;
}

static void print_trip() {
    printf("trip %u %u %u %u %u %u %u %llu %llu", (unsigned)top->wd_kind,
           (unsigned)top->wd_stream, (unsigned)top->wd_count, (unsigned)top->wd_cycle,
           (unsigned)top->wd_last_stream, (unsigned)top->wd_last_cycle, (unsigned)top->wd_moved,
           (unsigned long long)top->wd_valid, (unsigned long long)top->wd_ready);
    const int words = sizeof(top->wd_beats) / sizeof(uint32_t);
    const uint32_t *beats = reinterpret_cast<const uint32_t *>(&top->wd_beats);
    for (int k = 0; k < words; ++k) printf(" %u", beats[k]);
    printf("\n");
}

// Returns 0 on irq, 1 on a watchdog trip, 2 on the timeout.
static int wait_irq(uint64_t timeout) {
    top->eval();
    if (top->irq) { printf("irq\n"); return 0; }
    uint64_t end = cycles + timeout;
    while (cycles < end) {
        tick();
        if (top->wd_trip) { print_trip(); return 1; }
        if (top->irq) { printf("irq\n"); return 0; }
    }
    printf("timeout %llu\n", (unsigned long long)timeout);
    return 2;
}

int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    if (argc < 2) {
        fprintf(stderr, "usage: %s SCRIPT +DRAM_IN=<file> +DRAM_OUT=<file>\n", argv[0]);
        return 2;
    }
    std::ifstream in(argv[1]);
    if (!in) { fprintf(stderr, "cannot read %s\n", argv[1]); return 2; }
    top = new Vtop;
    uint64_t timeout = 10000000;
    top->clk = 0;
    top->rst = 1;
    top->mem_dump = 0;
    top->wd_stall_limit = 0;
    top->wd_idle_limit = 0;
    top->s_axil_awvalid = 0;
    top->s_axil_wvalid = 0;
    top->s_axil_bready = 0;
    top->s_axil_arvalid = 0;
    top->s_axil_rready = 0;
    top->eval();
    // reset as sim/tb.py's start(): 3 edges with rst high, then one edge out of reset
    for (int i = 0; i < 3; ++i) tick();
    top->rst = 0;
    top->eval();
    tick();
    int rc = 0;
    std::string line;
    while (rc == 0 && std::getline(in, line)) {
        std::istringstream ss(line);
        std::string cmd;
        if (!(ss >> cmd)) continue;
        if (cmd == "limits") {
            uint32_t stall, idle;
            ss >> stall >> idle >> timeout;
            top->wd_stall_limit = stall;
            top->wd_idle_limit = idle;
            top->eval();
        } else if (cmd == "hw") {
            unsigned rows, cols, ab;
            ss >> rows >> cols >> ab;
            uint32_t info = read_csr(ACCEL_HW_INFO_OFFSET);
            if (ACCEL_FIELD(info, HW_INFO_ROWS) != rows || ACCEL_FIELD(info, HW_INFO_COLS) != cols ||
                ACCEL_FIELD(info, HW_INFO_AXI_BYTES) != ab)
                rc = 3;
        } else if (cmd == "run") {
            uint32_t addr, count, layers;
            ss >> addr >> count >> layers;
            write_csr(ACCEL_CMD_BASE_OFFSET, addr);
            write_csr(ACCEL_CMD_COUNT_OFFSET, count);
            printf("t %llu\n", (unsigned long long)cycles);
            write_csr(ACCEL_CTRL_OFFSET, ACCEL_CTRL_START);
            int w = wait_irq(timeout);
            if (w) { rc = 4; break; }
            printf("t %llu\n", (unsigned long long)cycles);
            uint32_t events = read_csr(ACCEL_EVENTS_OFFSET);
            uint32_t status = read_csr(ACCEL_STATUS_OFFSET);
            uint32_t perf[ACCEL_NUM_PERF];
            for (int i = 0; i < ACCEL_NUM_PERF; ++i) perf[i] = read_csr(perf_off[i]);
            uint32_t stamps = 0;
            if (layers > 1) {
                stamps = read_csr(ACCEL_STAMP_COUNT_OFFSET);
                for (uint32_t k = 0; k < stamps && k < ACCEL_STAMP_DEPTH; ++k) {
                    write_csr(ACCEL_STAMP_SEL_OFFSET, k);
                    for (int i = 0; i < ACCEL_NUM_PERF; ++i) read_csr(stamp_off[i]);
                }
            }
            write_csr(ACCEL_EVENTS_OFFSET, events);
            uint32_t err = ACCEL_FIELD(status, STATUS_ERR_CODE);
            if (err || (events & ACCEL_EVENTS_ERROR) || perf[ACCEL_PERF_CMDS_INDEX] != count ||
                (layers > 1 && stamps != layers - 1))
                rc = 5;
        } else if (cmd == "dump") {
            uint32_t lo, hi;
            ss >> lo >> hi;
            top->mem_dump_lo = lo;
            top->mem_dump_hi = hi;
            top->mem_dump = 1;
            top->eval();
            tick();
            top->mem_dump = 0;
            top->eval();
            tick();
            printf("dumped %u\n", hi - lo + 1);
        }
    }
    printf("cycles %llu\n", (unsigned long long)cycles);
    top->final();
    delete top;
    return rc == 5 || rc == 3 ? 0 : rc;
}
