"""sim (see DESIGN.md, Layout)."""
