"""The SV sources of an output folder: ``sv/filelist.f`` and which module is the top.

``read_filelist(sv_dir)`` returns the files ``filelist.f`` lists (relative to ``sv_dir``), in
order; UserError if it is missing or names a file that does not exist. ``find_top(files)`` is
the one module that no other module instantiates (CIRCT's SV output is regular enough for a
scan); UserError when there is none or more than one, so the caller can name it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from pycde_accel.errors import UserError

_MODULE = re.compile(r"^\s*module\s+([A-Za-z_][A-Za-z0-9_$]*)", re.M)
_ENDMODULE = re.compile(r"^\s*endmodule\b", re.M)
# `Name [#(...)] inst (`  at the start of a statement
_INST = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_$]*)\s+(?:#\s*\(.*?\)\s*)?[A-Za-z_][A-Za-z0-9_$]*\s*\(",
                   re.M | re.S)


def read_filelist(sv_dir: Path) -> list[Path]:
    flist = Path(sv_dir) / "filelist.f"
    if not flist.is_file():
        raise UserError(f"no {flist}: generate the SV first")
    files = []
    for line in flist.read_text().splitlines():
        name = line.strip()
        if not name or name.startswith(("//", "#", "+", "-")):
            continue
        p = Path(sv_dir) / name
        if not p.is_file():
            raise UserError(f"{flist} lists {name}, which does not exist")
        files.append(p)
    if not files:
        raise UserError(f"{flist} lists no files")
    return files


def find_top(files: Sequence[Path]) -> str:
    defined: list[str] = []
    used: set[str] = set()
    for f in files:
        text = re.sub(r"//[^\n]*|/\*.*?\*/", "", Path(f).read_text(errors="replace"), flags=re.S)
        # split into module bodies so a module's own header is not taken as an instance
        for body in _ENDMODULE.split(text):
            m = _MODULE.search(body)
            if not m:
                continue
            defined.append(m.group(1))
            header_end = body.find(";", m.end())
            used.update(_INST.findall(body[header_end + 1:]))
    tops = sorted(set(defined) - used)
    if len(tops) != 1:
        raise UserError(f"cannot tell the top module from the SV files (candidates: "
                        f"{', '.join(tops) or 'none'}); name it explicitly")
    return tops[0]
