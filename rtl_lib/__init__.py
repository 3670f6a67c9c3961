"""rtl_lib (see DESIGN.md, Layout)."""
