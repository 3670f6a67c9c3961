"""AccelConfig: validation messages, the overflow bound, JSON round trip, --array parsing."""

import pytest

from pycde_accel.config import AccelConfig, max_k_for, parse_array, required_acc_width
from pycde_accel.errors import ConfigError


def test_default_config_is_valid_and_round_trips():
    cfg = AccelConfig().validate()
    assert AccelConfig.from_json(cfg.to_json()) == cfg


@pytest.mark.parametrize("w", [2, 4, 8, 12, 16])
@pytest.mark.parametrize("k", [1, 2, 3, 255, 256, 4096, 10_000])
def test_required_acc_width_is_tight(w, k):
    """The bound holds for the worst case and is one bit too many for one less."""
    worst = k * (-(1 << (w - 1))) ** 2          # all operands at the most negative value
    bits = required_acc_width(w, k)
    assert -(1 << (bits - 1)) <= worst <= (1 << (bits - 1)) - 1
    assert not worst <= (1 << (bits - 2)) - 1    # one bit fewer would overflow


def test_max_k_for_is_the_largest_safe_k():
    k = max_k_for(8, 32)
    assert required_acc_width(8, k) <= 32 < required_acc_width(8, k + 1)


@pytest.mark.parametrize("changes, field", [
    ({"rows": 0}, "rows"), ({"cols": 0}, "cols"), ({"rows": -1}, "rows"),
    ({"data_width": 1}, "data_width"), ({"acc_width": 1}, "acc_width"),
    ({"max_k": 0}, "max_k"), ({"spad_a_depth": 1000}, "spad_a_depth"),
    ({"axi_data_width": 48}, "axi_data_width"), ({"dataflow": "row_stationary"}, "dataflow"),
])
def test_invalid_fields_are_named(changes, field):
    with pytest.raises(ConfigError, match=field):
        AccelConfig(**changes).validate()


def test_overflowing_accumulator_is_refused_with_the_fix():
    with pytest.raises(ConfigError) as e:
        AccelConfig(acc_width=16, max_k=256).validate()
    msg = str(e.value)
    assert "overflow" in msg and "need 24 bits" in msg and "max_k to 1" in msg


def test_unknown_json_field_is_refused():
    with pytest.raises(ConfigError, match="bogus"):
        AccelConfig.from_dict({"rows": 2, "bogus": 1})


@pytest.mark.parametrize("text, expect", [("8x8", (8, 8)), ("4X16", (4, 16)), (" 2 x 3 ", (2, 3))])
def test_parse_array(text, expect):
    assert parse_array(text) == expect


@pytest.mark.parametrize("text", ["0x8", "8x0", "8", "axb", "", "8x8x8"])
def test_parse_array_refuses(text):
    with pytest.raises(ConfigError, match="--array"):
        parse_array(text)
