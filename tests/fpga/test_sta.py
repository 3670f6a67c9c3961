"""fpga.sta: the design timed from nextpnr's SDF, every (start, end) register pair's worst path."""

import subprocess
import sys

import pytest

from pycde_accel.fpga import nextpnr, sta

#: two 2-bit registers a, b into c through a LUT each (b's bit 1 through two), and a RAM
#: whose write data is an endpoint; delays in ps as nextpnr writes them (min:typ:max)
SDF = r"""(DELAYFILE
  (SDFVERSION "3.0")
  (TIMESCALE 1ps)
  (CELL
    (CELLTYPE "top")
    (INSTANCE )
    (DELAY
      (ABSOLUTE
        (INTERCONNECT clkbuf/O a_TRELLIS_FF_Q/CLK (0:0:0) (0:0:0))
        (INTERCONNECT a_TRELLIS_FF_Q/Q l0/A (100:200:300) (100:200:300))
        (INTERCONNECT a_TRELLIS_FF_Q_1/Q l1/A (100:200:400) (100:200:400))
        (INTERCONNECT b_TRELLIS_FF_Q_1/Q l2/A (1000:1500:2000) (1000:1500:2000))
        (INTERCONNECT l2/F l1/B (10:20:30) (10:20:30))
        (INTERCONNECT l0/F c_TRELLIS_FF_Q/DI (50:60:70) (50:60:70))
        (INTERCONNECT l1/F c_TRELLIS_FF_Q_1/DI (50:60:70) (50:60:70))
        (INTERCONNECT l1/F \$ram\$c\[3\]/WD0 (900:950:1000) (900:950:1000))
      )
    )
  )
  (CELL (CELLTYPE "TRELLIS_FF") (INSTANCE a_TRELLIS_FF_Q)
    (DELAY (ABSOLUTE (IOPATH CLK Q (400:450:500) (400:450:500)))))
  (CELL
    (CELLTYPE "TRELLIS_FF")
    (INSTANCE a_TRELLIS_FF_Q_1)
    (DELAY
      (ABSOLUTE
        (IOPATH CLK Q (400:450:500) (400:450:500))
      )
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_FF")
    (INSTANCE b_TRELLIS_FF_Q_1)
    (DELAY
      (ABSOLUTE
        (IOPATH (posedge CLK) Q (400:450:500) (400:450:500))
      )
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_COMB")
    (INSTANCE l0)
    (DELAY
      (ABSOLUTE
        (IOPATH A F (200:220:240) (200:220:240))
      )
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_COMB")
    (INSTANCE l1)
    (DELAY
      (ABSOLUTE
        (IOPATH A F (200:220:240) (200:220:240))
        (IOPATH B F (200:220:250) (200:220:250))
      )
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_COMB")
    (INSTANCE l2)
    (DELAY
      (ABSOLUTE
        (IOPATH A F (200:220:240) (200:220:240))
      )
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_FF")
    (INSTANCE c_TRELLIS_FF_Q)
    (TIMINGCHECK
      (SETUPHOLD (posedge DI) (posedge CLK) (0:0:10) (267:285:303))
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_FF")
    (INSTANCE c_TRELLIS_FF_Q_1)
    (TIMINGCHECK
      (SETUPHOLD (posedge DI) (posedge CLK) (0:0:10) (267:285:303))
      (SETUPHOLD (negedge DI) (posedge CLK) (0:0:20) (267:285:303))
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_RAMW")
    (INSTANCE \$ram\$c\[3\])
    (TIMINGCHECK
      (SETUPHOLD (posedge WD0) (posedge CLK) (0:0:100) (0:0:0))
    )
  )
)
"""


def test_each_register_pair_keeps_its_worst_path_with_nextpnrs_max_delays(tmp_path):
    (tmp_path / "t.sdf").write_text(SDF)
    paths = sta.near_critical(tmp_path / "t.sdf", period_ns=5.0)
    by_pair = {(p.start, p.end): p for p in paths}
    # c's bit 1: b -> l2 -> l1 -> c (500 + 2000 + 240 + 30 + 250 + 70 + setup 20) beats a's bit 1
    worst = paths[0]
    assert (worst.start, worst.end) == ("b", "$ram$c")       # + 1000 of route, setup 100
    assert worst.delay_ns == pytest.approx((500 + 2000 + 240 + 30 + 250 + 1000 + 100) / 1000)
    assert worst.slack_ns == pytest.approx(5.0 - worst.delay_ns)
    c = by_pair[("b", "c")]
    assert c.delay_ns == pytest.approx((500 + 2000 + 240 + 30 + 250 + 70 + 20) / 1000)
    assert [s.pin for s in c.steps] == ["b_TRELLIS_FF_Q_1/Q", "l2/A", "l2/F", "l1/B", "l1/F",
                                       "c_TRELLIS_FF_Q_1/DI", "c_TRELLIS_FF_Q_1/DI"]
    assert [s.kind for s in c.steps] == ["clk-to-q", "routing", "logic", "routing", "logic",
                                        "routing", "setup"]
    assert c.routing_ns == pytest.approx(2.1) and c.luts == 2
    # a reaches c only on bit 0, where it is the worst (and only) start: one line per pair
    assert by_pair[("a", "c")].delay_ns == pytest.approx((500 + 300 + 240 + 70 + 10) / 1000)
    assert len(paths) == 3
    text = sta.format_paths(paths, 5.0)
    assert "b -> $ram$c" in text.splitlines()[2] and "200.00 MHz" in text


def test_a_real_placement_agrees_with_nextpnrs_critical_path(ecp5_run):
    rep, work = ecp5_run
    text = (work / nextpnr.PATHS).read_text()
    paths = sta.near_critical(work / nextpnr.SDF, 1000.0 / rep.clocks["clk"]["constraint_mhz"])
    cp = rep.critical_path
    assert paths[0].delay_ns == pytest.approx(cp.delay_ns, abs=0.002)
    assert paths[0].steps[0].pin == f"{cp.start_cell}/Q"
    assert paths[0].end_pin.startswith(cp.end_cell + "/")
    assert f"{paths[0].delay_ns:6.3f} ns" in text.splitlines()[2]
    assert len(paths) > 1 and all(a.delay_ns >= b.delay_ns for a, b in zip(paths, paths[1:]))


def test_ice40_placements_are_timed_too(ice40_run):
    rep, work = ice40_run
    if not rep.placed:
        pytest.fail(f"the tiny design did not place on ice40: {rep.note}")
    # the IO paths (the package's pins: ice40 has no out-of-context mode) are not timed
    # here: the register-to-register path is the one to agree with
    cp = [c for c in rep.critical_paths if c.src_clock == c.dst_clock]
    assert cp, rep.critical_paths
    paths = sta.near_critical(work / nextpnr.SDF, 1000.0 / 30)
    assert paths[0].delay_ns == pytest.approx(cp[0].delay_ns, abs=0.002)


def test_the_command_line_names_a_missing_file_in_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pycde_accel.fpga.sta", str(tmp_path / "no.sdf"),
                        "--mhz", "100"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "no.sdf" in r.stderr


def test_the_command_line_prints_the_paths(tmp_path):
    (tmp_path / "t.sdf").write_text(SDF)
    r = subprocess.run([sys.executable, "-m", "pycde_accel.fpga.sta", str(tmp_path / "t.sdf"),
                        "--mhz", "200", "--top", "2"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(" -> ") == 2 and "b -> $ram$c" in r.stdout
