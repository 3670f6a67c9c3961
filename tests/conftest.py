"""Tests write nothing into the repo or the current folder.

Hypothesis keeps a storage folder (example database, constants cache, patches) that defaults to
``./.hypothesis``; every test process points it at a temporary folder removed at exit.
"""

import tempfile

from hypothesis import configuration

_HYPOTHESIS_HOME = tempfile.TemporaryDirectory(prefix="pycde-accel-hypothesis-")
configuration.set_hypothesis_home_dir(_HYPOTHESIS_HOME.name)
