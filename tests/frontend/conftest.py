"""Frontend fixtures come from tests/conftest.py (model files written under tmp_path)."""
