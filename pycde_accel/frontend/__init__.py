"""pycde_accel/frontend (see DESIGN.md, Layout)."""
