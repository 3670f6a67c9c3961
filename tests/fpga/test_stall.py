"""A tool that stops printing is stopped (fpga.tools' idle timeout), and a nextpnr run whose
router1 stalls is routed again with router2 (fpga.nextpnr)."""

import json
import time

import pytest

from pycde_accel.errors import UserError
from pycde_accel.fpga import get_device, nextpnr, tools
from pycde_accel.fpga.tools import ToolStalled, run_tool

SILENT_TOOL = '''
import sys, time

def main(argv):
    print("Info: Routing..", flush=True)
    time.sleep(120)
    return 0
'''


def test_a_tool_silent_for_the_idle_timeout_is_stopped(tmp_path, monkeypatch):
    (tmp_path / "silent_tool.py").write_text(SILENT_TOOL)   # importable from the tool's cwd
    monkeypatch.setitem(tools._ENTRY, "silent", ("silent_tool", "main"))
    t0 = time.monotonic()
    with pytest.raises(ToolStalled) as e:
        run_tool("silent", [], tmp_path, "silent.log", idle_timeout=2)
    assert time.monotonic() - t0 < 30                        # not the tool's 120 s
    msg = str(e.value)
    assert isinstance(e.value, UserError) and "\n" not in msg
    assert msg.startswith("silent: no progress for") and "Info: Routing.." in msg
    assert "Info: Routing.." in (tmp_path / "silent.log").read_text()


def test_the_log_holds_each_line_as_soon_as_the_tool_prints_it(tmp_path, monkeypatch):
    """A user tailing a placement's log sees its last line, not the last full buffer."""
    (tmp_path / "silent_tool.py").write_text(SILENT_TOOL)
    monkeypatch.setitem(tools._ENTRY, "silent", ("silent_tool", "main"))
    seen = []

    def progress(msg):
        seen.append((msg, (tmp_path / "silent.log").read_text()))

    with pytest.raises(ToolStalled):
        run_tool("silent", [], tmp_path, "silent.log", {"Info: Routing..": "routing"}, progress,
                 idle_timeout=2)
    assert seen == [("silent: routing", "Info: Routing..\n")]


CHATTY_TOOL = '''
import time

def main(argv):
    while True:
        print("Info: iteration", flush=True)
        time.sleep(0.01)
'''


def test_a_tool_past_its_time_limit_is_stopped_even_while_it_prints(tmp_path, monkeypatch):
    (tmp_path / "chatty_tool.py").write_text(CHATTY_TOOL)
    monkeypatch.setitem(tools._ENTRY, "chatty", ("chatty_tool", "main"))
    t0 = time.monotonic()
    with pytest.raises(ToolStalled, match="still running after"):
        run_tool("chatty", [], tmp_path, "chatty.log", idle_timeout=60, time_limit=2)
    assert time.monotonic() - t0 < 30


def _fake_nextpnr(stall_with: set, calls: list):
    """A run_tool stand-in: stalls for the routers in ``stall_with``, else writes a report."""
    def run(tool, args, cwd, log_name, phases=None, progress=None, idle_timeout=None,
            time_limit=None):
        router = args[args.index("--router") + 1] if "--router" in args else "router1"
        calls.append((router, idle_timeout, time_limit))
        (cwd / log_name).write_text(f"Info: Routing.. ({router})\n")
        if router in stall_with:
            raise ToolStalled(f"{tool}: no progress")
        (cwd / nextpnr.REPORT).write_text(json.dumps(
            {"fmax": {"clk": {"achieved": 123.4, "constraint": 150}}, "utilization": {},
             "critical_paths": []}))
        return cwd / log_name
    return run


def test_a_stalled_router1_is_routed_again_with_router2(tmp_path, monkeypatch):
    calls, seen = [], []
    monkeypatch.setattr(nextpnr, "run_tool", _fake_nextpnr({"router1"}, calls))
    res = nextpnr.run_nextpnr(get_device("ecp5-85f"), tmp_path, 1, 150, seen.append,
                              stall_minutes=0.5)
    assert [c[0] for c in calls] == ["router1", "router2"] and calls[0][1:] == (30, None)
    assert calls[1][2] == nextpnr.RETRY_MINUTES * 60       # router2's rerun has a time limit
    assert res.router == "router2" and res.clocks["clk"]["achieved_mhz"] == 123.4
    assert any("router1 made no progress for 0.5 minutes" in s for s in seen)
    assert "(router1)" in (tmp_path / nextpnr.STALLED_LOG).read_text()
    assert "(router2)" in (tmp_path / nextpnr.LOG).read_text()
    # the report read again later (a cache hit) still says which router made it
    assert nextpnr.parse_report(tmp_path / nextpnr.REPORT).router == "router2"
    # a later run in the same folder that routes with router1 is not taken for router2's
    calls.clear()
    monkeypatch.setattr(nextpnr, "run_tool", _fake_nextpnr(set(), calls))
    assert nextpnr.run_nextpnr(get_device("ecp5-85f"), tmp_path, 1, 150).router == "router1"


def test_both_routers_stalled_is_one_user_error(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(nextpnr, "run_tool", _fake_nextpnr({"router1", "router2"}, calls))
    with pytest.raises(ToolStalled):
        nextpnr.run_nextpnr(get_device("ecp5-85f"), tmp_path, 1, 150)
    assert [c[0] for c in calls] == ["router1", "router2"]
