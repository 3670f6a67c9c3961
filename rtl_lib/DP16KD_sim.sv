// SIMULATION ONLY: behavioral model of the Lattice ECP5 DP16KD block RAM in the configuration
// that pycde_accel instantiates (rtl_lib.ecp5_ebr: the operand scratchpads' lane memories).
// Never give this file to synthesis: there the hard block (Yosys blackbox, cells_bb_ecp5.v)
// must stay; the synthesis filelist (filelist.f) does not list it, filelist_sim.f does.
//
// Modeled configuration (anything else is refused at elaboration):
//   a simple dual-port RAM: port A writes, port B reads, one clock on both (CLKA = CLKB);
//   DATA_WIDTH_A = DATA_WIDTH_B = W in {36, 18, 9, 4, 2, 1}. W = 36 is the pseudo-dual-port
//   mode: the written word is {DIB[17:0], DIA[17:0]} and the read word {DOB[17:0], DOA[17:0]};
//   else the written word is DIA[W-1:0] and the read word DOB[W-1:0].
//   Addresses: the word address is AD[13:L] with L = 5, 4, 3, 2, 1, 0 for W = 36 .. 1;
//   for W = 36 ADA[3:0] are the write's byte enables (9 bits each), for W = 18 ADA[1:0].
//   REGMODE_B = "OUTREG" or "NOREG" (for W = 36, REGMODE_A must equal it: DOA is the low half).
// Not modeled: reads on port A and writes on port B, the chip selects (tied 0 with CSDECODE
// "0b000"), WRITEMODE, GSR, asynchronous reset, a read of the word written on the same edge
// (undefined on the device; the callers never do it), initial contents (0 here).
//
// Cycle by cycle (every edge of CLKB):
//   edge e:     rd_q  <= mem[ADB]          if CEB      (the read's address register)
//   edge e + 1: out_q <= rd_q              if OCEB     (the output register, OUTREG only)
// so with OUTREG the data of a read presented before edge e is on DO after edge e + 1
// (latency 2, as a block RAM read followed by one fabric register); with NOREG after edge e.
// A write presented before an edge of CLKA with CEA & WEA (and its byte enables) lands on it.
// RSTB = 1 on an edge clears rd_q and out_q instead.
module DP16KD #(
  parameter integer DATA_WIDTH_A = 18,
  parameter integer DATA_WIDTH_B = 18,
  parameter REGMODE_A = "NOREG",
  parameter REGMODE_B = "NOREG",
  parameter RESETMODE = "SYNC",
  parameter ASYNC_RESET_RELEASE = "SYNC",
  parameter CSDECODE_A = "0b000",
  parameter CSDECODE_B = "0b000",
  parameter WRITEMODE_A = "NORMAL",
  parameter WRITEMODE_B = "NORMAL",
  parameter GSR = "ENABLED"
) (
  input DIA0, DIA1, DIA2, DIA3, DIA4, DIA5, DIA6, DIA7, DIA8, DIA9, DIA10, DIA11, DIA12,
  input DIA13, DIA14, DIA15, DIA16, DIA17,
  input DIB0, DIB1, DIB2, DIB3, DIB4, DIB5, DIB6, DIB7, DIB8, DIB9, DIB10, DIB11, DIB12,
  input DIB13, DIB14, DIB15, DIB16, DIB17,
  input ADA0, ADA1, ADA2, ADA3, ADA4, ADA5, ADA6, ADA7, ADA8, ADA9, ADA10, ADA11, ADA12, ADA13,
  input ADB0, ADB1, ADB2, ADB3, ADB4, ADB5, ADB6, ADB7, ADB8, ADB9, ADB10, ADB11, ADB12, ADB13,
  input CEA, OCEA, CLKA, WEA, RSTA, CSA0, CSA1, CSA2,
  input CEB, OCEB, CLKB, WEB, RSTB, CSB0, CSB1, CSB2,
  output DOA0, DOA1, DOA2, DOA3, DOA4, DOA5, DOA6, DOA7, DOA8, DOA9, DOA10, DOA11, DOA12,
  output DOA13, DOA14, DOA15, DOA16, DOA17,
  output DOB0, DOB1, DOB2, DOB3, DOB4, DOB5, DOB6, DOB7, DOB8, DOB9, DOB10, DOB11, DOB12,
  output DOB13, DOB14, DOB15, DOB16, DOB17
);
  localparam integer W = DATA_WIDTH_B;
  localparam integer L = W == 36 ? 5 : W == 18 ? 4 : W == 9 ? 3 : W == 4 ? 2 : W == 2 ? 1 : 0;
  localparam integer DEPTH = 1 << (14 - L);
  // byte lanes of a write: 4 x 9 bits (W = 36), 2 x 9 (W = 18), else one of W bits
  localparam integer NBE = W == 36 ? 4 : W == 18 ? 2 : 1;
  localparam integer BEW = W / NBE;

  initial begin
    if (DATA_WIDTH_A != DATA_WIDTH_B || !(W == 36 || W == 18 || W == 9 || W == 4 || W == 2
                                          || W == 1))
      $fatal(1, "DP16KD_sim.sv models DATA_WIDTH_A = DATA_WIDTH_B in {36,18,9,4,2,1} only");
    if (REGMODE_B != "OUTREG" && REGMODE_B != "NOREG")
      $fatal(1, "DP16KD_sim.sv: REGMODE_B must be OUTREG or NOREG");
    if (W == 36 && REGMODE_A != REGMODE_B)
      $fatal(1, "DP16KD_sim.sv: the 36-bit mode needs REGMODE_A = REGMODE_B");
  end

  wire [17:0] dia = {DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7,
                     DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
  wire [17:0] dib = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7,
                     DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0};
  wire [13:0] ada = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3,
                     ADA2, ADA1, ADA0};
  wire [13:0] adb = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3,
                     ADB2, ADB1, ADB0};
  wire [35:0] di = W == 36 ? {dib, dia} : {18'b0, dia};
  wire [3:0] be = W == 36 ? ada[3:0] : W == 18 ? {2'b0, ada[1:0]} : 4'b0001;

  reg [W-1:0] mem [0:DEPTH-1];
  reg [W-1:0] rd_q, out_q;
  integer i;
  initial begin
    for (i = 0; i < DEPTH; i = i + 1) mem[i] = {W{1'b0}};
    rd_q = {W{1'b0}};
    out_q = {W{1'b0}};
  end

  always @(posedge CLKA) begin
    if (CEA && WEA) begin
      for (i = 0; i < NBE; i = i + 1)
        if (be[i]) mem[ada[13:L]][i * BEW +: BEW] <= di[i * BEW +: BEW];
    end
  end

  always @(posedge CLKB) begin
    if (RSTB) begin
      rd_q <= {W{1'b0}};
      out_q <= {W{1'b0}};
    end else begin
      if (CEB) rd_q <= mem[adb[13:L]];
      if (OCEB) out_q <= rd_q;
    end
  end

  wire [W-1:0] dout = REGMODE_B == "OUTREG" ? out_q : rd_q;
  wire [35:0] do36 = 36'(dout);
  assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6,
          DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} = W == 36 ? do36[17:0] : 18'b0;
  assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6,
          DOB5, DOB4, DOB3, DOB2, DOB1, DOB0} = W == 36 ? do36[35:18] : do36[17:0];

  wire _unused = &{1'b0, OCEA, RSTA, CSA0, CSA1, CSA2, WEB, CSB0, CSB1, CSB2};
endmodule
