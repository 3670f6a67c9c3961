"""The one error type a user sees.

Anything the user can fix (a bad model file, an unsupported op, a config that cannot be built)
raises :class:`UserError`. The CLI prints its message as one line on stderr and exits non-zero;
every other exception is a bug and shows a traceback only under ``--debug``.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem in the user's input, stated in one line.

    ``exit_code`` is what the CLI exits with (2: bad input or usage, 1: a failed check such as
    a simulation mismatch).
    """

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code


class ConfigError(UserError):
    """An accelerator configuration that cannot be built."""
