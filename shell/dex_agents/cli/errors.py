"""``CliError``: a failure the command line reports as one line with a hint, without a traceback;
and ``install_hint``: how to install an extra, from the checkout this command line runs from.

Invariant: every install command a hint names works from a checkout of dex-agents (the package
index has no ``dex-agents``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

__all__ = ["EXTRA_OF_MODULE", "CliError", "install_hint"]

EXTRA_OF_MODULE: Final = {"pydantic_ai": "pydantic-ai", "agents": "openai-agents", "langchain_core": "langchain",
                          "openai": "openai"}
"""The extra that installs each framework module an adapter or demo agent imports."""


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


def _checkout() -> Path | None:
    """The checkout this package runs from (an editable install), if it is one."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "pyproject.toml").is_file() and (root / "shell" / "dex_agents").is_dir() else None


def install_hint(extra: str) -> str:
    """How to install ``extra`` into this interpreter from the dex-agents checkout."""
    checkout = _checkout()
    if checkout is None:
        return f'install the {extra} extra from your dex-agents checkout: pip install "<checkout>[{extra}]"'
    return f'install the {extra} extra: {sys.executable} -m pip install -e "{checkout}[{extra}]"'
