// One flip-flop that synthesis keeps (Yosys `keep` on its process): copies of one register
// that feed disjoint parts of a wide load enable are not merged back into one high-fanout
// net (Yosys opt_merge merges identical flip-flops; nextpnr does not replicate).
// Synchronous active-high reset to 0. Used by rtl_lib/keep_ff.py; a synthesis and
// simulation source (filelist.f).
module pycde_accel_keep_ff (
  input      clk,
  input      rst,
  input      d,
  output reg q
);
  (* keep *)
  always @(posedge clk)
    q <= rst ? 1'b0 : d;
endmodule

// The same flip-flop with a synchronous reset to 1 (keep_ff.py's ``init=1`` copies).
module pycde_accel_keep_ff_set (
  input      clk,
  input      rst,
  input      d,
  output reg q
);
  (* keep *)
  always @(posedge clk)
    q <= rst ? 1'b1 : d;
endmodule
