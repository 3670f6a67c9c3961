// Simulation-only stream watchdog (the RTL twin of sim/watchdog.py's Watchdog): watches N
// valid/ready streams on every rising edge, so no Python runs per cycle; the testbench awaits
// `trip` (one edge trigger) or, natively, tests it after each cycle.
//
// On each rising edge out of reset, while `stall_limit` or `idle_limit` is non-zero:
// * waiting[k] = 0 if stream k moved (valid & ready), else waiting[k] + valid[k] (cycles offered
//   and refused since its last beat); beats[k] counts its beats;
// * idle = 0 if any stream moved, else idle + 1; `cycle` counts the watched edges;
// * trip (sticky) with kind 1 when some waiting[k] reaches stall_limit (stream = the one
//   waiting longest, count = its waiting), else kind 2 when idle reaches idle_limit (count =
//   idle). A limit of 0 turns its check off. last_stream / last_cycle: the last stream that
//   moved (of several on one edge the highest index, as Python's loop order gives) and the
//   edge it moved on; moved_ever says whether any did. `beats` holds beats[k] (32 bits each).
//   Python's max() picks the first of equal waits; so does this (strictly greater wins).
module sim_watchdog #(
  parameter int N = 1
) (
  input  logic            clk,
  input  logic            rst,
  input  logic [31:0]     stall_limit,
  input  logic [31:0]     idle_limit,
  input  logic [N-1:0]    valid,
  input  logic [N-1:0]    ready,
  output logic            trip,
  output logic [1:0]      trip_kind,
  output logic [7:0]      trip_stream,
  output logic [31:0]     trip_count,
  output logic [31:0]     cycle,
  output logic [7:0]      last_stream,
  output logic [31:0]     last_cycle,
  output logic            moved_ever,
  output logic [32*N-1:0] beats
);
  logic [31:0] waiting [0:N-1];
  logic [31:0] idle;
  logic [31:0] wnext [0:N-1];
  logic [31:0] inext;
  logic [31:0] wmax;
  logic [7:0]  kmax;
  logic [7:0]  klast;
  logic        any;
  wire on = (stall_limit != 0) | (idle_limit != 0);

  always_comb begin
    any = 1'b0;
    klast = 8'd0;
    wmax = 32'd0;
    kmax = 8'd0;
    for (int k = 0; k < N; k++) begin
      wnext[k] = (valid[k] & ready[k]) ? 32'd0 : waiting[k] + {31'd0, valid[k]};
      if (valid[k] & ready[k]) begin
        any = 1'b1;
        klast = k[7:0];
      end
      if (wnext[k] > wmax) begin
        wmax = wnext[k];
        kmax = k[7:0];
      end
    end
    inext = any ? 32'd0 : idle + 32'd1;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      for (int k = 0; k < N; k++) waiting[k] <= 32'd0;
      beats <= '0;
      idle <= 32'd0;
      cycle <= 32'd0;
      trip <= 1'b0;
      trip_kind <= 2'd0;
      trip_stream <= 8'd0;
      trip_count <= 32'd0;
      last_stream <= 8'd0;
      last_cycle <= 32'd0;
      moved_ever <= 1'b0;
    end else if (on & ~trip) begin
      for (int k = 0; k < N; k++) begin
        waiting[k] <= wnext[k];
        if (valid[k] & ready[k]) beats[32 * k +: 32] <= beats[32 * k +: 32] + 32'd1;
      end
      idle <= inext;
      cycle <= cycle + 32'd1;
      if (any) begin
        last_stream <= klast;
        last_cycle <= cycle + 32'd1;
        moved_ever <= 1'b1;
      end
      if (stall_limit != 0 && wmax >= stall_limit) begin
        trip <= 1'b1;
        trip_kind <= 2'd1;
        trip_stream <= kmax;
        trip_count <= wmax;
      end else if (idle_limit != 0 && inext >= idle_limit) begin
        trip <= 1'b1;
        trip_kind <= 2'd2;
        trip_count <= inext;
      end
    end
  end
endmodule
