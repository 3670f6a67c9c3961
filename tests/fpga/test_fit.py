import re
from dataclasses import replace as dataclasses_replace

import pytest

from pycde_accel.config import AccelConfig
from pycde_accel.errors import UserError
from pycde_accel.fpga import check_fit, estimate, get_device, synthesize
from pycde_accel.fpga.devices import ECP5_EBR_SHAPES
from pycde_accel.fpga.fit import KERNEL_DSP, blocks_for, dsp_per_mac, memories


def test_default_config_fits_the_big_ecp5():
    """The whole accelerator with one store lane: 8x8 PEs + the kernels' 13 multipliers;
    16 + 16 operand lane memories (256 x 64 bits: 2 DP16KD each), 3 parameter memories and the
    X buffer (2): what the placed accelerator has (77 MULT18X18D, 37 DP16KD). The default
    (4 store lanes) adds 3 requantize kernels (4 each) and 3 x 3 parameter memories."""
    est = check_fit(AccelConfig(store_lanes=1), get_device("ecp5-85f"))
    assert est.dsp == 64 + KERNEL_DSP == 77
    assert est.bram == 37
    est = check_fit(AccelConfig(), get_device("ecp5-85f"))
    assert AccelConfig().lanes == 4
    assert est.dsp == 77 + 3 * 4 and est.bram == 37 + 9


def test_default_lanes_keep_16x8_on_the_big_ecp5():
    """16x8 (141 MULT18X18D with one lane, placed) still fits the 156 with the default lanes."""
    est = check_fit(AccelConfig(rows=16, cols=8), get_device("ecp5-85f"))
    assert est.dsp == 128 + KERNEL_DSP + 3 * 4 <= 156
    with pytest.raises(UserError, match="DSP"):
        check_fit(AccelConfig(rows=16, cols=8, store_lanes=8), get_device("ecp5-85f"))


def test_oversized_config_is_refused_with_the_numbers():
    cfg = AccelConfig(rows=16, cols=16)
    with pytest.raises(UserError) as e:
        check_fit(cfg, get_device("ecp5-25f"))
    msg = str(e.value)
    assert "\n" not in msg
    assert "281 DSP" in msg and "has 28" in msg and "16x16" in msg and "ecp5-25f" in msg


def test_bram_and_lut_refusals_name_their_numbers():
    cfg = AccelConfig(rows=2, cols=2, spad_a_depth=1 << 16, spad_b_depth=1 << 16)
    with pytest.raises(UserError, match=r"block RAMs .* but it has 56 \(1008 kbit\)"):
        check_fit(cfg, get_device("ecp5-25f"))
    cfg = AccelConfig(rows=64, cols=64, spad_a_depth=2, spad_b_depth=2, spad_c_depth=2)
    with pytest.raises(UserError) as e:
        check_fit(cfg, get_device("ecp5-85f"))
    assert re.search(r"about \d+ LUTs but it has 83640", str(e.value))
    assert "4121 DSP" in str(e.value)


def test_block_and_dsp_arithmetic():
    assert blocks_for(1024, 18, ECP5_EBR_SHAPES) == 1
    assert blocks_for(1024, 32, ECP5_EBR_SHAPES) == 2     # 512x36 twice, or 1024x18 twice
    assert blocks_for(256, 128, ECP5_EBR_SHAPES) == 4     # 512x36 x4
    assert dsp_per_mac(8, get_device("ecp5-85f")) == 1
    assert dsp_per_mac(18, get_device("ecp5-85f")) == 1
    assert dsp_per_mac(20, get_device("ecp5-85f")) == 4
    assert dsp_per_mac(17, get_device("ice40-up5k")) == 4
    assert estimate(AccelConfig(rows=8, cols=8, store_lanes=1),
                    get_device("ecp5-85f")).dsp == 64 + KERNEL_DSP


def test_memories_follow_the_config():
    cfg = AccelConfig(rows=4, cols=8, axi_data_width=32, spad_a_depth=512, spad_b_depth=256,
                      spad_c_depth=64)
    mems = memories(cfg)
    assert [m for m in mems if m[0].startswith("A")] == [(f"A{i}", 256, 32) for i in range(4)]
    assert [m for m in mems if m[0].startswith("B")] == [(f"B{j}", 128, 32) for j in range(8)]
    assert ("X", 64, 32) in mems and ("P_m0_3", 64, 32) in mems and len(mems) == 4 + 8 + 13
    assert ("P_m0", 64, 32) in memories(dataclasses_replace(cfg, store_lanes=1))


def test_synthesize_refuses_before_running_yosys(tmp_path):
    sv = tmp_path / "x.sv"
    sv.write_text("module x(input clk); endmodule\n")
    work = tmp_path / "work"
    with pytest.raises(UserError, match="does not fit ice40-up5k"):
        synthesize([sv], "x", "ice40-up5k", work, config=AccelConfig(rows=4, cols=4))
    assert not work.exists()


def test_fit_store_lanes_halves_until_the_dsps_fit():
    from pycde_accel.fpga.fit import fit_store_lanes
    small = get_device("ecp5-25f")
    cfg = AccelConfig(rows=2, cols=4, axi_data_width=32)
    assert cfg.lanes == 4 and estimate(cfg, small).dsp > small.dsp
    fitted = fit_store_lanes(cfg, small)
    assert fitted.store_lanes < cfg.store_lanes and estimate(fitted, small).dsp <= small.dsp
    assert fit_store_lanes(fitted.replace(store_lanes=2), small).store_lanes == fitted.store_lanes
    big = get_device("ecp5-85f")
    assert fit_store_lanes(AccelConfig(), big) == AccelConfig()          # 4 lanes fit there
    # nothing helps a config whose array alone is too big: it ends at one lane, still refused
    assert fit_store_lanes(AccelConfig(rows=16, cols=16), small).store_lanes == 1
