// Simulation-only AXI4 slave RAM for the fast accelerator testbenches (sim/fast.py): the whole
// DRAM in the simulator, so no Python runs while the accelerator moves data.
//
// Contract
// * One AXI4 slave port s_axi_* (INCR bursts of full-width beats; FIXED/WRAP are treated as
//   INCR, which the DMA never issues; IDs are echoed in order; responses are always OKAY).
// * Memory: 2**MEM_LOG2 bytes as DW-bit words; byte address a is byte a % (DW/8) of word
//   (a / (DW/8)) % words (addresses wrap). Starts zero.
// * Load: at time 0 the binary file named by plusarg +DRAM_IN=<file> (if given) is read with
//   $fread: word 0 first, each word's bytes most significant first (what $fread fills; the
//   image with every DW/8-byte word reversed, see sim/fast.py image_to_mem).
// * Read back: while `dump` is high on a rising edge, words dump_lo..dump_hi are written to
//   the binary file named by +DRAM_OUT=<file> with $fwrite "%u": each word least significant
//   byte first, i.e. exactly the image bytes. (Both are ~10x cheaper than $readmemh /
//   $writememh text, which cost a 256^3 GEMM's native run ~6% of its instructions.)
// * Timing (deterministic, no back-pressure of its own beyond queue space): AR and AW go into
//   queues of QDEPTH bursts (arready / awready = queue not full); a read burst starts the
//   edge after its AR is taken (first R beat offered the cycle after), then one beat per
//   cycle while rready, and the next queued burst starts on the edge that takes a burst's last
//   beat (back to back). W beats are taken (wready) while an accepted AW has beats left; the B
//   response of a burst is offered from the cycle after its last W beat, one per cycle.
// * Board bandwidth (plusargs +MEM_BW_NUM=<num> +MEM_BW_DEN=<den>: the board memory's bytes per
//   cycle as num/den, pycde_accel.perfmodel.memory.rate; without them no limit): R and W beats
//   draw on one credit counter in units of 1/den byte (DRAM has one data bus for both
//   directions). It starts full at CAP = 2 * NEED (NEED = DW/8 * den, one beat); every edge
//   credit <= min(credit - NEED * beats moved + num, CAP). R goes first, but W is not starved:
//   - rvalid = a beat is due & (it was offered last cycle and not taken | credit >= NEED, or
//     >= 2 * NEED when W wanted a beat last cycle and did not get it); an offered beat stays
//     offered until it is taken (AXI), and W leaves credit for it:
//   - wready = the W conditions above & credit - (rvalid ? NEED : 0) >= NEED.
//   No output depends on a master input combinationally. perfmodel.memory.Budget is the same.
module sim_axi_mem #(
  parameter int DW = 64,
  parameter int AW = 32,
  parameter int IDW = 1,
  parameter int MEM_LOG2 = 24,
  parameter int QDEPTH = 8
) (
  input  logic           clk,
  input  logic           rst,
  input  logic [IDW-1:0] s_axi_arid,
  input  logic [AW-1:0]  s_axi_araddr,
  input  logic [7:0]     s_axi_arlen,
  input  logic           s_axi_arvalid,
  output logic           s_axi_arready,
  output logic [IDW-1:0] s_axi_rid,
  output logic [DW-1:0]  s_axi_rdata,
  output logic [1:0]     s_axi_rresp,
  output logic           s_axi_rlast,
  output logic           s_axi_rvalid,
  input  logic           s_axi_rready,
  input  logic [IDW-1:0] s_axi_awid,
  input  logic [AW-1:0]  s_axi_awaddr,
  input  logic [7:0]     s_axi_awlen,
  input  logic           s_axi_awvalid,
  output logic           s_axi_awready,
  input  logic [DW-1:0]  s_axi_wdata,
  input  logic [DW/8-1:0] s_axi_wstrb,
  input  logic           s_axi_wlast,
  input  logic           s_axi_wvalid,
  output logic           s_axi_wready,
  output logic [IDW-1:0] s_axi_bid,
  output logic [1:0]     s_axi_bresp,
  output logic           s_axi_bvalid,
  input  logic           s_axi_bready,
  input  logic           dump,
  input  logic [31:0]    dump_lo,
  input  logic [31:0]    dump_hi
);
  localparam int AB = DW / 8;
  localparam int AL = $clog2(AB);
  localparam int WL = MEM_LOG2 - AL;          // word address bits
  localparam int QL = $clog2(QDEPTH);

  logic [DW-1:0] mem [0:(1 << WL) - 1];

  string in_file, out_file;
  integer in_fd, out_fd, got;
  initial begin
    if ($value$plusargs("DRAM_IN=%s", in_file)) begin
      in_fd = $fopen(in_file, "rb");
      if (in_fd == 0) $fatal(1, "sim_axi_mem: cannot open +DRAM_IN=%s", in_file);
      got = $fread(mem, in_fd);
      $fclose(in_fd);
    end
    if (!$value$plusargs("DRAM_OUT=%s", out_file)) out_file = "dram_out.bin";
  end
  always @(posedge clk) begin
    if (dump) begin
      out_fd = $fopen(out_file, "wb");
      if (out_fd == 0) $fatal(1, "sim_axi_mem: cannot write +DRAM_OUT=%s", out_file);
      for (longint i = dump_lo; i <= dump_hi; i++) $fwrite(out_fd, "%u", mem[i[WL-1:0]]);
      $fclose(out_fd);
    end
  end

  // ------------------------------------------------------------------ bandwidth
  longint bw_num, bw_den, bw_need, bw_cap;
  logic   bw_on;
  initial begin
    bw_on = 1'b0;
    bw_num = 0;
    bw_den = 1;
    if ($value$plusargs("MEM_BW_NUM=%d", bw_num) && $value$plusargs("MEM_BW_DEN=%d", bw_den))
      bw_on = bw_num < 2 * AB * bw_den;
    bw_need = AB * bw_den;
    bw_cap = 2 * bw_need;
  end
  longint credit, bw_left;
  logic   r_fire, w_fire, w_want, r_shown, w_starved;
  wire    r_credit = ~bw_on | r_shown | (credit >= (w_starved ? bw_cap : bw_need));
  wire    w_credit = ~bw_on | (credit - (s_axi_rvalid ? bw_need : 0) >= bw_need);
  assign bw_left = credit - (r_fire ? bw_need : 0) - (w_fire ? bw_need : 0) + bw_num;
  always_ff @(posedge clk) begin
    if (rst) begin
      credit <= bw_cap;
      r_shown <= 1'b0;
      w_starved <= 1'b0;
    end else if (bw_on) begin
      credit <= bw_left > bw_cap ? bw_cap : bw_left;
      r_shown <= s_axi_rvalid & ~s_axi_rready;
      w_starved <= w_want & ~w_fire;
    end
  end

  // ------------------------------------------------------------------ reads
  logic [WL-1:0]  arq_addr [0:QDEPTH-1];
  logic [7:0]     arq_len  [0:QDEPTH-1];
  logic [IDW-1:0] arq_id   [0:QDEPTH-1];
  logic [QL:0]    arq_wp, arq_rp;
  logic           r_active;
  logic [WL-1:0]  r_addr;
  logic [7:0]     r_left;
  logic [IDW-1:0] r_id;

  wire arq_empty = arq_wp == arq_rp;
  assign s_axi_arready = (arq_wp - arq_rp) != QDEPTH[QL:0];
  assign s_axi_rvalid = r_active & r_credit;
  assign s_axi_rdata = mem[r_addr];
  assign s_axi_rlast = r_left == 8'd0;
  assign s_axi_rid = r_id;
  assign s_axi_rresp = 2'b00;
  assign r_fire = r_active & r_credit & s_axi_rready;
  wire r_next = ~r_active | (r_fire & (r_left == 8'd0));

  always_ff @(posedge clk) begin
    if (rst) begin
      arq_wp <= '0;
      arq_rp <= '0;
      r_active <= 1'b0;
    end else begin
      if (s_axi_arvalid & s_axi_arready) begin
        arq_addr[arq_wp[QL-1:0]] <= s_axi_araddr[AL +: WL];
        arq_len[arq_wp[QL-1:0]] <= s_axi_arlen;
        arq_id[arq_wp[QL-1:0]] <= s_axi_arid;
        arq_wp <= arq_wp + 1'b1;
      end
      if (r_next) begin
        r_active <= ~arq_empty;
        if (!arq_empty) begin
          r_addr <= arq_addr[arq_rp[QL-1:0]];
          r_left <= arq_len[arq_rp[QL-1:0]];
          r_id <= arq_id[arq_rp[QL-1:0]];
          arq_rp <= arq_rp + 1'b1;
        end
      end else if (r_fire) begin
        r_addr <= r_addr + 1'b1;
        r_left <= r_left - 1'b1;
      end
    end
  end

  // ------------------------------------------------------------------ writes
  logic [WL-1:0]  awq_addr [0:QDEPTH-1];
  logic [IDW-1:0] awq_id   [0:QDEPTH-1];
  logic [QL:0]    awq_wp, awq_rp;
  logic [WL-1:0]  w_addr;
  logic           w_started;                // w_addr holds the head burst's next word
  logic [IDW-1:0] bq_id [0:QDEPTH-1];
  logic [QL:0]    bq_wp, bq_rp;

  wire awq_empty = awq_wp == awq_rp;
  // a W beat is taken only for an accepted AW and while the B queue has room for its response
  assign s_axi_awready = (awq_wp - awq_rp) != QDEPTH[QL:0];
  wire w_room = ~awq_empty & ((bq_wp - bq_rp) != QDEPTH[QL:0]);
  assign s_axi_wready = w_room & w_credit;
  assign w_want = s_axi_wvalid & w_room;
  assign s_axi_bvalid = bq_wp != bq_rp;
  assign s_axi_bid = bq_id[bq_rp[QL-1:0]];
  assign s_axi_bresp = 2'b00;
  wire [WL-1:0] w_cur = w_started ? w_addr : awq_addr[awq_rp[QL-1:0]];
  assign w_fire = s_axi_wvalid & s_axi_wready;

  always_ff @(posedge clk) begin
    if (rst) begin
      awq_wp <= '0;
      awq_rp <= '0;
      bq_wp <= '0;
      bq_rp <= '0;
      w_started <= 1'b0;
    end else begin
      if (s_axi_awvalid & s_axi_awready) begin
        awq_addr[awq_wp[QL-1:0]] <= s_axi_awaddr[AL +: WL];
        awq_id[awq_wp[QL-1:0]] <= s_axi_awid;
        awq_wp <= awq_wp + 1'b1;
      end
      if (w_fire) begin
        for (int i = 0; i < AB; i++)
          if (s_axi_wstrb[i]) mem[w_cur][8 * i +: 8] <= s_axi_wdata[8 * i +: 8];
        if (s_axi_wlast) begin
          w_started <= 1'b0;
          awq_rp <= awq_rp + 1'b1;
          bq_id[bq_wp[QL-1:0]] <= awq_id[awq_rp[QL-1:0]];
          bq_wp <= bq_wp + 1'b1;
        end else begin
          w_started <= 1'b1;
          w_addr <= w_cur + 1'b1;
        end
      end
      if (s_axi_bvalid & s_axi_bready) bq_rp <= bq_rp + 1'b1;
    end
  end
endmodule
