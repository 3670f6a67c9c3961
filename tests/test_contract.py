"""The hardware/software contract: one definition, read by every side, documented in docs/."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from pycde_accel import contract, hostgen
from pycde_accel.backend import encoding
from pycde_accel.config import AccelConfig
from pycde_accel.errors import ConfigError

DOC = Path(__file__).resolve().parents[1] / "docs" / "accelerator-contract.md"


def test_doc_tables_are_the_contracts():
    text = DOC.read_text()
    for name in contract.markdown_tables():
        assert f"<!-- contract:{name} -->" in text, name
    assert contract.render_doc(text) == text, \
        "docs/accelerator-contract.md is stale: python -m pycde_accel.contract " \
        "docs/accelerator-contract.md"


def test_render_doc_replaces_a_stale_table():
    stale = "x\n<!-- contract:errors -->\n| old |\n<!-- /contract -->\ny\n"
    out = contract.render_doc(stale)
    assert "| old |" not in out and "unknown command opcode" in out
    assert out.startswith("x\n") and out.endswith("\ny\n")


def test_the_contract_and_its_readers_import_no_pycde():
    code = ("import sys, pycde_accel.contract, pycde_accel.backend.encoding, pycde_accel.host, "
            "pycde_accel.hostgen, pycde_accel.perfmodel, pycde_accel.sim.fast; "
            "print(sorted(m for m in sys.modules if m == 'pycde' or m.startswith('pycde.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_command_specs_are_consistent():
    assert len({c.op for c in contract.COMMANDS}) == len(contract.COMMANDS)
    assert all(0 < c.op < 256 for c in contract.COMMANDS)
    for c in contract.COMMANDS:
        words = [f.word for f in c.fields]
        assert len(set(words)) == len(words) and all(1 <= w < contract.CMD_WORDS for w in words)
        masks = [f.value for f in c.flags]
        assert all(m & (m - 1) == 0 and 0 < m < 256 for m in masks)
        assert len(set(masks)) == len(masks)
        cls = encoding.COMMANDS[c.op]
        assert cls.SPEC is c and cls.KIND == c.kind
    assert contract.DST_CMD not in contract.DST_NAMES
    assert contract.CMD_BYTES * 8 == contract.CMD_BITS


def test_encoding_puts_every_field_in_its_word():
    for c in contract.COMMANDS:
        cls = encoding.COMMANDS[c.op]
        for i, f in enumerate(c.fields):
            v = -(i + 2) if f.signed else 0x1000 + i
            fl = c.flags[-1].value if c.flags else 0
            w = cls(**{f.name: v, "flags": fl}).words()
            assert w[f.word] == v & 0xFFFFFFFF
            assert w[0] & 0xFF == c.op and w[0] >> 8 & 0xFF == fl
    assert encoding.Fence().words() == [contract.OP_FENCE] + [0] * (contract.CMD_WORDS - 1)
    assert encoding.decode(encoding.Fence().words()) == encoding.Fence()
    assert encoding.Load(dst=contract.DST_S).words()[0] >> 16 == contract.DST_S
    assert encoding.Vec(dst=0x1234).words()[0] >> 16 == 0           # VEC's dst is word 3


def test_csr_map_is_the_rtls_and_the_counters_are_its_perf_registers():
    from pycde_accel.rtl_lib.axil_csr import default_csr_map
    assert default_csr_map(24, 32) == contract.csr_map(24, 32)
    m = contract.csr_map()
    assert contract.PERF_COUNTERS == tuple(r.name for r in m.regs if r.name.startswith("perf_"))
    assert all(m.by_name(n).access == "ro" for n in contract.PERF_COUNTERS)
    assert contract.PERF_COUNTERS[-1] == contract.PERF_CMDS
    assert contract.CsrMap.from_dict(m.to_dict()) == m


def test_stamp_registers_follow_the_perf_counters():
    """Each FENCE stamps every performance counter: one stamp_* register per counter, in the
    same order, and the stamp memory's depth is the contract's (header and docs)."""
    m = contract.csr_map()
    assert contract.STAMP_REGS == tuple("stamp_" + n.removeprefix("perf_")
                                        for n in contract.PERF_COUNTERS)
    offs = [m.by_name(n).offset for n in contract.STAMP_REGS]
    assert offs == [contract.STAMP_OFFSET + 4 * i for i in range(len(offs))]
    assert all(m.by_name(n).access == "ro" for n in contract.STAMP_REGS + ("stamp_count",))
    assert m.by_name("stamp_sel").access == "rw"
    assert 1 << m.by_name("stamp_sel").width >= contract.STAMP_DEPTH
    assert f"#define ACCEL_STAMP_DEPTH {contract.STAMP_DEPTH}" in contract.harness_header()
    assert "| STAMP_DEPTH |" in contract.markdown_tables()["depths"]
    assert contract.OP_FENCE not in {c.op for c in contract.ENGINE_COMMANDS}


def test_hw_info_round_trips():
    cfg = AccelConfig(rows=4, cols=16, axi_data_width=128)
    v = contract.hw_info(cfg)
    assert v == 4 | 16 << 8 | 16 << 16 == hostgen.hw_info(cfg)
    assert contract.decode_hw_info(v) == (4, 16, 16)


def test_errors():
    assert contract.describe_error(contract.ERR_BAD_OP | contract.ERR_DMA_RD) == \
        "AXI read error response, unknown command opcode"
    assert contract.describe_error(0x40) == "code 0x40"
    vals = [e.value for e in contract.ERRORS]
    assert all(v & (v - 1) == 0 for v in vals)
    assert max(vals) < 1 << contract.STATUS_ERR_CODE.width


def test_one_beat_rule_everywhere():
    """cols % AB: the back end, the accelerator top and both engines that need it refuse the
    same config with the contract's message."""
    from pycde_accel.backend.compile import check_config as backend_check
    from pycde_accel.rtl_lib.accel import check_config as accel_check
    from pycde_accel.rtl_lib.matmul_unit import make_matmul_unit
    from pycde_accel.rtl_lib.store_engine import check_config as store_check

    bad = AccelConfig(rows=4, cols=12, axi_data_width=64)
    for check in (backend_check, accel_check, make_matmul_unit, store_check):
        with pytest.raises(ConfigError, match=r"cols=12 is not a multiple of the AXI beat "
                                              r"\(8 bytes.*cols % \(axi_data_width/8\) == 0"):
            check(bad)
    contract.check_config(AccelConfig(rows=4, cols=16, axi_data_width=128))
    with pytest.raises(ConfigError, match="<= 255"):
        contract.check_config(AccelConfig(rows=256, cols=8))


def test_program_header_and_driver_carry_the_contract():
    L = hostgen._command_defines()
    for c in contract.COMMANDS:
        line = next(x for x in L if x.startswith(f"#define ACCEL_OP_{c.kind.upper()} "))
        assert line.split()[2] == f"{c.op}u"
        assert all(f"w{f.word} {f.name}" in line for f in c.fields)
        for f in c.flags:
            assert f"#define ACCEL_{c.kind.upper()}_{f.name.upper()} {f.value}u" in L
    perf = hostgen._py_literal("PERF", [f'"{n}"' for n in contract.PERF_COUNTERS], "(", ")")
    assert ast.literal_eval(perf.split("=", 1)[1].strip()) == contract.PERF_COUNTERS
    assert max(len(x) for x in perf.splitlines()) <= 100


def test_harness_header_compiles_with_the_contracts_values(tmp_path):
    (tmp_path / "accel_contract.h").write_text(contract.harness_header())
    (tmp_path / "t.cpp").write_text(
        '#include <cstdio>\n#include "accel_contract.h"\n'
        "static const unsigned perf[ACCEL_NUM_PERF] = ACCEL_PERF_OFFSETS;\n"
        'int main() { printf("%u %u %u %u %u", ACCEL_CMD_BASE_OFFSET, perf[ACCEL_PERF_CMDS_INDEX], '
        "ACCEL_STATUS_ERR_CODE_LSB, ACCEL_EVENTS_ERROR, ACCEL_ERR_BAD_OP); }\n")
    subprocess.run(["g++", "-o", str(tmp_path / "t"), str(tmp_path / "t.cpp")], check=True)
    out = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, check=True).stdout
    m = contract.csr_map()
    assert out.split() == [str(v) for v in (m.by_name("cmd_base").offset,
                                            m.by_name(contract.PERF_CMDS).offset,
                                            contract.STATUS_ERR_CODE.lsb, contract.EVENTS_ERROR,
                                            contract.ERR_BAD_OP)]


def test_native_script_refuses_a_foreign_csr_map():
    from pycde_accel.errors import UserError
    from pycde_accel.sim import fast

    m = contract.csr_map().to_dict()
    m["regs"][0] = {**m["regs"][0], "offset": 0x20}
    plan = {"csr_map": m, "hw": {"rows": 8, "cols": 8, "axi_bytes": 8}, "layers": [], "reads": []}
    with pytest.raises(UserError, match="contract"):
        fast.native_script(plan)
    plan["csr_map"] = contract.csr_map().to_dict()
    assert fast.native_script(plan).startswith("limits ")
