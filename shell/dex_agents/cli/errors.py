"""``CliError``: a failure the command line reports as one line with a hint, without a traceback."""

from __future__ import annotations


class CliError(Exception):
    """A failure shown as ``error: <message>`` plus an optional ``hint: <hint>``; exits ``exit_code``."""

    def __init__(self, message: str, *, hint: str | None = None, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code

    def one_line(self) -> str:
        """The error and its hint on one line."""
        return self.message if self.hint is None else f"{self.message} (hint: {self.hint})"
