// Simulation-only stream watchdog (the RTL twin of sim/watchdog.py's Watchdog): watches N
// valid/ready streams on every rising edge, so no Python runs per cycle; the testbench awaits
// `trip` (one edge trigger) or, natively, tests it after each cycle.
//
// Each rising edge out of reset, while `stall_limit` or `idle_limit` is non-zero, is a watched
// edge: its samples are valid[k] and valid[k] & ready[k] (a beat), as that edge takes them.
// The counting runs one edge later, on those samples held in registers (so the watchdog has no
// combinational logic: Verilator evaluates it once per cycle instead of with every change of
// the wrapper's inputs, which had made it ~8% of the native harness's time). For watched edge
// e, counted on edge e + 1:
// * waiting[k] = 0 if stream k moved, else waiting[k] + valid[k] (edges offered and refused
//   since its last beat); beats[k] counts its beats;
// * idle = 0 if any stream moved, else idle + 1; `cycle` = e (watched edges counted);
// * trip (sticky) with kind 1 when some waiting[k] reaches stall_limit (stream = the lowest k
//   that reached it, count = its waiting; every counter grows by at most 1 per edge and the
//   check runs on every edge, so that stream is the one waiting longest, and of equal waits
//   the first, as Python's max() picks), else kind 2 when idle reaches idle_limit (count =
//   idle). A limit of 0 turns its check off. last_stream / last_cycle: the last stream that
//   moved (of several on one edge the highest index, as Python's loop order gives) and the
//   edge it moved on; moved_ever says whether any did. `beats` holds beats[k] (32 bits each).
// The figures are those of the watched edges, so they do not depend on the one-edge delay;
// only `trip` rises one edge after the edge that tripped.
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
  logic [31:0]  waiting [0:N-1];
  logic [31:0]  idle;
  // the samples of the last edge and whether it was watched
  logic         s_on;
  logic [N-1:0] s_valid;
  logic [N-1:0] s_moved;

  always_ff @(posedge clk) begin
    automatic logic [31:0] w;
    automatic logic        stalled;
    automatic logic [7:0]  k_stall;
    automatic logic [31:0] w_stall;
    automatic logic [7:0]  k_last;
    if (rst) begin
      s_on <= 1'b0;
      s_valid <= '0;
      s_moved <= '0;
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
    end else begin
      s_on <= ((stall_limit != 0) | (idle_limit != 0)) & ~trip;
      s_valid <= valid;
      s_moved <= valid & ready;
      if (s_on & ~trip) begin
        stalled = 1'b0;
        k_stall = 8'd0;
        w_stall = 32'd0;
        k_last = 8'd0;
        for (int k = 0; k < N; k++) begin
          if (s_moved[k]) begin
            waiting[k] <= 32'd0;
            beats[32 * k +: 32] <= beats[32 * k +: 32] + 32'd1;
            k_last = k[7:0];
          end else if (s_valid[k]) begin
            w = waiting[k] + 32'd1;
            waiting[k] <= w;
            if (!stalled && stall_limit != 0 && w >= stall_limit) begin
              stalled = 1'b1;
              k_stall = k[7:0];
              w_stall = w;
            end
          end
        end
        cycle <= cycle + 32'd1;
        if (s_moved != '0) begin
          idle <= 32'd0;
          last_stream <= k_last;
          last_cycle <= cycle + 32'd1;
          moved_ever <= 1'b1;
        end else begin
          idle <= idle + 32'd1;
        end
        if (stalled) begin
          trip <= 1'b1;
          trip_kind <= 2'd1;
          trip_stream <= k_stall;
          trip_count <= w_stall;
        end else if (idle_limit != 0 && s_moved == '0 && idle + 32'd1 >= idle_limit) begin
          trip <= 1'b1;
          trip_kind <= 2'd2;
          trip_count <= idle + 32'd1;
        end
      end
    end
  end
endmodule
