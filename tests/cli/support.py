"""Running ``dex-agents`` as a user would: ``python -m dex_agents.cli`` in a child process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["cli_environment", "run_cli"]


def cli_environment(environment: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without ``DEX_SERVER_ADDRESS``, plus plain wide output and ``environment``."""
    child_environment = {key: value for key, value in os.environ.items() if key != "DEX_SERVER_ADDRESS"}
    child_environment.update({"COLUMNS": "200", "NO_COLOR": "1", **(environment or {})})
    return child_environment


def run_cli(*arguments: str, environment: Mapping[str, str] | None = None, timeout: float = 120.0,
            cwd: Path | None = None, stdin_text: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``dex-agents <arguments>`` with no terminal on stdin (``stdin_text`` piped, else nothing);
    returns its exit status and output."""
    child_environment = cli_environment(environment)
    return subprocess.run([sys.executable, "-m", "dex_agents.cli", *arguments], input=stdin_text or "",
                          capture_output=True, text=True, env=child_environment, timeout=timeout, cwd=cwd)
