"""lowering (see DESIGN.md, Layout)."""
