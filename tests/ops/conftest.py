"""Fixtures shared by the op tests."""

import pytest

from pycde_accel import frontend


@pytest.fixture(scope="session")
def frontend_of(tmp_path_factory):
    """``frontend_of(name, source, eval_batches=4)``: the frontend's result of the model file
    ``source`` (a ``build()`` module text), written as ``net.py`` into a fresh folder."""
    def run(name: str, source: str, eval_batches: int = 4):
        path = tmp_path_factory.mktemp(name) / "net.py"
        path.write_text(source)
        return frontend.run(str(path), eval_batches=eval_batches)
    return run
