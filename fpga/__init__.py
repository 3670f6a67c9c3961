"""fpga (see DESIGN.md, Layout)."""
