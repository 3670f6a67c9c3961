// Simple dual-port RAM: one synchronous write port, one asynchronous read port.
// Used by the systolic core's output FIFO (rtl_lib/systolic.py, rtl_lib/lutram.py); a
// synthesis and simulation source (filelist.f). Yosys maps it to distributed RAM
// (ECP5: TRELLIS_DPR16X4), like the memory of PyCDE's seq.FIFO; ram_style says so, for
// without it Yosys put the 16x8 core's 64-deep output FIFO in DP16KD blocks whose read
// (5.83 ns clock-to-out, no output register) was that design's second path at 222f7a9.
module pycde_accel_lutram #(
  parameter WIDTH = 1,
  parameter DEPTH = 2,
  parameter ADDR_WIDTH = 1
) (
  input                   clk,
  input                   we,
  input  [ADDR_WIDTH-1:0] waddr,
  input  [WIDTH-1:0]      wdata,
  input  [ADDR_WIDTH-1:0] raddr,
  output [WIDTH-1:0]      rdata
);
  (* ram_style = "distributed" *)
  reg [WIDTH-1:0] mem [0:DEPTH-1];
  always @(posedge clk)
    if (we)
      mem[waddr] <= wdata;
  assign rdata = mem[raddr];
endmodule
