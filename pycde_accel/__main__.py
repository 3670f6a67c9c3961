"""``python -m pycde_accel``: see :mod:`pycde_accel.cli`."""

from .cli import main

raise SystemExit(main())
