// SIMULATION ONLY: behavioral model of the Lattice ECP5 MULT18X18D in the configurations
// that pycde_accel instantiates (rtl_lib.ecp5's PE multiply, lowering's
// pycde-accel-ecp5-dsp-mul kernel multiplies). Never give this file to synthesis: there the
// hard block (Yosys blackbox, cells_bb.v) must stay; the synthesis filelist (filelist.f)
// does not list it, filelist_sim.f does.
//
// Modeled configuration (anything else is refused at elaboration):
//   REG_INPUTA_CLK = REG_INPUTB_CLK = REG_OUTPUT_CLK = "CLK0", REG_PIPELINE_CLK = "NONE",
//   the registers' clock enables: REG_INPUTA_CE = REG_INPUTB_CE = "CE0", REG_OUTPUT_CE =
//   "CE0" or "CE1"; synchronous reset RST0 (RESETMODE "SYNC"),
//   SIGNEDA/SIGNEDB static (tied to 1 by the PE; the model reads them as they are, without
//   registering them, which is only the same while they do not change: registered, they cost
//   the simulation two registers and a sign-extension per PE per cycle), SOURCEA = SOURCEB = 0
//   (parallel A/B inputs).
// Not modeled: the C input, the shift/cascade ports (SRI*, SRO*, RO*), SIGNEDP, GSR, the
// pipeline register, the other clocks.
//
// Cycle by cycle (every edge of CLK0; the input registers load when CE0 = 1, the output
// register when its enable, CE0 or CE1 by REG_OUTPUT_CE, is 1):
//   edge t:     a_q <= A, b_q <= B               (input registers)
//   edge t + 1: p_q <= a_q * b_q                 (output register; P = p_q)
// i.e. P after edge t + 1 is the product of the A and B present before edge t (latency 2).
// RST0 = 1 on an edge clears all three registers instead.
module MULT18X18D #(
  parameter REG_INPUTA_CLK = "NONE",
  parameter REG_INPUTB_CLK = "NONE",
  parameter REG_OUTPUT_CLK = "NONE",
  parameter REG_PIPELINE_CLK = "NONE",
  parameter REG_INPUTA_CE = "CE0",
  parameter REG_INPUTB_CE = "CE0",
  parameter REG_OUTPUT_CE = "CE0"
) (
  input A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17,
  input B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13, B14, B15, B16, B17,
  input SIGNEDA, SIGNEDB, SOURCEA, SOURCEB, CLK0, CE0, CE1, RST0,
  output P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14, P15, P16, P17,
  output P18, P19, P20, P21, P22, P23, P24, P25, P26, P27, P28, P29, P30, P31, P32, P33, P34,
  output P35
);
  initial begin
    if (REG_INPUTA_CLK != "CLK0" || REG_INPUTB_CLK != "CLK0" || REG_OUTPUT_CLK != "CLK0"
        || REG_PIPELINE_CLK != "NONE")
      $fatal(1, "MULT18X18D_sim.sv models only REG_INPUTA/B/OUTPUT_CLK=CLK0, no pipeline reg");
    if (REG_INPUTA_CE != "CE0" || REG_INPUTB_CE != "CE0"
        || (REG_OUTPUT_CE != "CE0" && REG_OUTPUT_CE != "CE1"))
      $fatal(1, "MULT18X18D_sim.sv models only REG_INPUTA/B_CE=CE0, REG_OUTPUT_CE=CE0/CE1");
  end
  wire ce_out = (REG_OUTPUT_CE == "CE1") ? CE1 : CE0;

  wire [17:0] a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
  wire [17:0] b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};
  reg  [17:0] a_q, b_q;
  reg  [35:0] p_q;
  // operands extended to 36 bits by their signedness, product modulo 2^36
  wire [35:0] a_x = {{18{SIGNEDA & a_q[17]}}, a_q};
  wire [35:0] b_x = {{18{SIGNEDB & b_q[17]}}, b_q};
  wire [35:0] prod = a_x * b_x;

  always @(posedge CLK0) begin
    if (RST0) begin
      a_q <= 18'b0;
      b_q <= 18'b0;
      p_q <= 36'b0;
    end else begin
      if (CE0) begin
        a_q <= a;
        b_q <= b;
      end
      if (ce_out) p_q <= prod;
    end
  end

  assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19,
          P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1,
          P0} = p_q;

  wire _unused = &{1'b0, SOURCEA, SOURCEB};
endmodule
