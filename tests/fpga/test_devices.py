import pytest

from pycde_accel.errors import UserError
from pycde_accel.fpga import DEVICES, get_device, known_targets


def test_unknown_target_is_one_line_listing_the_known_ones():
    with pytest.raises(UserError) as e:
        get_device("virtex2")
    msg = str(e.value)
    assert "\n" not in msg and "virtex2" in msg
    for name in known_targets():
        assert name in msg


def test_names_are_case_insensitive_and_part_numbers_work():
    assert get_device("ECP5-85F") is DEVICES["ecp5-85f"]
    assert get_device("xc7a100tcsg324-1").name == "xc7a100t"


def test_presets_hold_the_datasheet_counts():
    e85, e25, up5k = get_device("ecp5-85f"), get_device("ecp5-25f"), get_device("ice40-up5k")
    assert (e85.dsp, e85.bram, e85.lut) == (156, 208, 83640)
    assert (e25.dsp, e25.bram, e25.lut) == (28, 56, 24288)
    assert (up5k.dsp, up5k.bram, up5k.lut, up5k.spram_kbit) == (8, 30, 5280, 1024)
    assert {d.flow for d in DEVICES.values()} == {"open", "vivado", "quartus"}
    for d in DEVICES.values():
        assert d.open_flow == bool(d.nextpnr) == bool(d.yosys_synth)
