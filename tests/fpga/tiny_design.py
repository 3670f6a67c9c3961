"""A tiny PyCDE design for the fpga tests: ``python tiny_design.py OUT_DIR [ACC_WIDTH]``.

``TinyMac`` (top) instantiates ``TinyMul``: int8 a, b registered, their product registered
(one hard multiplier), accumulated, and the sum registered once more into ``acc``.
With ACC_WIDTH=16 the top has 34 port bits, few enough for the iCE40 SG48 package's 39 pins.
Writes OUT_DIR/*.sv and OUT_DIR/filelist.f with the options docs/toolchain.md names for Yosys-clean SV.
Runs in its own process so that its PyCDE System cannot meet another test's.
"""

import shutil
import sys
import tempfile
from pathlib import Path

from pycde import Clock, Input, Module, Output, Reset, System, generator
from pycde.circt import ir
from pycde.constructs import Reg
from pycde.types import SInt

ACC = int(sys.argv[2]) if len(sys.argv) > 2 else 16


class TinyMul(Module):
    clk = Clock()
    a = Input(SInt(8))
    b = Input(SInt(8))
    p = Output(SInt(16))

    @generator
    def build(ports):
        ar = ports.a.reg(ports.clk, name="a_r")
        br = ports.b.reg(ports.clk, name="b_r")
        ports.p = (ar * br).as_sint(16).reg(ports.clk, name="p_r")


class TinyMac(Module):
    clk = Clock()
    rst = Reset()
    a = Input(SInt(8))
    b = Input(SInt(8))
    acc = Output(SInt(ACC))

    @generator
    def build(ports):
        m = TinyMul(clk=ports.clk, a=ports.a, b=ports.b)
        acc = Reg(SInt(ACC), clk=ports.clk, rst=ports.rst, rst_value=0, name="acc_r")
        acc.assign((acc + m.p.as_sint(ACC)).as_sint(ACC))
        # one more register in the fabric, so that even where the whole MAC packs into one DSP
        # block (iCE40 SB_MAC16) there is an interior path to time
        ports.acc = acc.reg(ports.clk, name="acc_q")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        s = System([TinyMac], name="TinyMac", output_directory=tmp)
        with s.mod.context:
            s.mod.operation.attributes["circt.loweringOptions"] = ir.StringAttr.get(
                "disallowLocalVariables,locationInfoStyle=none,omitVersionComment")
        s.compile()
        names = []
        for f in sorted((Path(tmp) / "hw").glob("*.sv"), key=lambda p: (p.name == "TinyMac.sv", p.name)):
            shutil.copyfile(f, out / f.name)
            names.append(f.name)
    (out / "filelist.f").write_text("".join(n + "\n" for n in names))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
