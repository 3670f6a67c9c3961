"""Frontend tests write nothing into the repo or cwd: hypothesis's storage folder (its example
database is off in these tests, but it also caches constants at collection and writes patches)
is a temporary folder that is removed when the test process exits."""

import tempfile

from hypothesis import configuration

_HOME = tempfile.TemporaryDirectory(prefix="pycde-accel-hypothesis-")
configuration.set_hypothesis_home_dir(_HOME.name)
