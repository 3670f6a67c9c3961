import pytest

from pycde_accel.errors import UserError
from pycde_accel.fpga import vendor_files, write_vendor_project
from pycde_accel.fpga.vendor import find_clock_port


def _check_lists_everything(texts, files, top):
    joined = "\n".join(texts)
    for f in files:
        assert f"/{f.name}" in joined, f.name
    assert top in joined


def test_vivado_script_lists_every_file_the_top_and_a_clock(tiny_sv, tmp_path):
    written = write_vendor_project(tiny_sv, "TinyMac", "xc7a100t", tmp_path, clock_mhz=125)
    names = sorted(p.relative_to(tmp_path).as_posix() for p in written)
    assert names == ["vivado/build.tcl", "vivado/clocks.xdc"]
    tcl = (tmp_path / "vivado/build.tcl").read_text()
    xdc = (tmp_path / "vivado/clocks.xdc").read_text()
    for f in tiny_sv:
        assert any(line.startswith("read_verilog -sv") and line.rstrip("]").endswith("/" + f.name)
                   for line in tcl.splitlines()), f.name
    assert "synth_design -top TinyMac -part xc7a100tcsg324-1" in tcl
    for step in ("opt_design", "place_design", "route_design", "report_utilization", "report_timing"):
        assert step in tcl
    assert "create_clock -period 8.000 -name clk [get_ports clk]" in xdc
    assert str(tmp_path) not in tcl   # relative paths only


def test_quartus_project_lists_every_file_the_top_and_a_clock(tiny_sv, tmp_path):
    files = vendor_files(tiny_sv, "TinyMac", "5ceba4", tmp_path, clock_mhz=100)
    qsf = files[tmp_path / "quartus/TinyMac.qsf"]
    sdc = files[tmp_path / "quartus/TinyMac.sdc"]
    sv_lines = [l for l in qsf.splitlines() if l.startswith("set_global_assignment -name SYSTEMVERILOG_FILE")]
    assert [l.rsplit("/", 1)[1] for l in sv_lines] == [f.name for f in tiny_sv]
    assert 'set_global_assignment -name FAMILY "Cyclone V"' in qsf
    assert "set_global_assignment -name DEVICE 5CEBA4F23C7" in qsf
    assert "set_global_assignment -name TOP_LEVEL_ENTITY TinyMac" in qsf
    assert "set_global_assignment -name SDC_FILE TinyMac.sdc" in qsf
    assert "create_clock -name clk -period 10.000 [get_ports {clk}]" in sdc
    _check_lists_everything(files.values(), tiny_sv, "TinyMac")
    assert not (tmp_path / "quartus").exists()   # vendor_files writes nothing


def test_vendor_scripts_are_refused_for_open_flow_targets(tiny_sv, tmp_path):
    with pytest.raises(UserError, match="open flow"):
        vendor_files(tiny_sv, "TinyMac", "ecp5-85f", tmp_path)


def test_clock_port_is_found_in_the_top_header(tmp_path):
    f = tmp_path / "t.sv"
    f.write_text("module other(input clock); endmodule\n"
                 "module t(\n  input rst,\n        aclk,\n  output y\n);\nendmodule\n")
    assert find_clock_port([f], "t") == "aclk"
    assert find_clock_port([f], "other") == "clock"
