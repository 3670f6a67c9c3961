"""Fixtures for the fpga tests: one tiny design, synthesized once per session per device.

The first YoWASP Yosys call on a machine compiles its WebAssembly (~30-50 s, cached after), so
every synthesis the tests look at comes from a session-scoped fixture.
"""

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def make_tiny(out: Path, acc_width: int = 16) -> list[Path]:
    subprocess.run([sys.executable, str(HERE / "tiny_design.py"), str(out), str(acc_width)],
                   check=True, capture_output=True)
    return [out / n for n in (out / "filelist.f").read_text().split()]


@pytest.fixture(scope="session")
def tiny_maker():
    """``make_tiny(out, acc_width)`` for tests that need a variant of the tiny design."""
    return make_tiny


@pytest.fixture(scope="session")
def tiny_sv(tmp_path_factory) -> list[Path]:
    """SV files of TinyMac (top) + TinyMul, in compile order."""
    return make_tiny(tmp_path_factory.mktemp("tiny_sv"))


@pytest.fixture(scope="session")
def ecp5_progress() -> list[str]:
    """The progress messages of the ``ecp5_run`` synthesis."""
    return []


@pytest.fixture(scope="session")
def ecp5_run(tiny_sv, tmp_path_factory, ecp5_progress):
    """The tools really run (the synthesis cache is off), so their progress is seen."""
    from pycde_accel.fpga import synthesize
    work = tmp_path_factory.mktemp("ecp5_work")
    with pytest.MonkeyPatch.context() as m:
        m.setenv("PYCDE_ACCEL_SYNTH_CACHE", "off")
        rep = synthesize(tiny_sv, "TinyMac", "ecp5-85f", work, seed=1, freq_mhz=100,
                         progress=ecp5_progress.append)
    return rep, work


@pytest.fixture(scope="session")
def ice40_run(tiny_sv, tmp_path_factory):
    from pycde_accel.fpga import synthesize
    work = tmp_path_factory.mktemp("ice40_work")
    return synthesize(tiny_sv, "TinyMac", "ice40-up5k", work, seed=1, freq_mhz=30), work
