"""Running ``dex-agents`` as a user would: ``python -m dex_agents.cli`` in a child process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["run_cli"]


def run_cli(*arguments: str, environment: Mapping[str, str] | None = None, timeout: float = 120.0,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``dex-agents <arguments>`` with no terminal on stdin; returns its exit status and output."""
    child_environment = {key: value for key, value in os.environ.items() if key != "DEX_SERVER_ADDRESS"}
    child_environment.update({"COLUMNS": "200", "NO_COLOR": "1", **(environment or {})})
    return subprocess.run([sys.executable, "-m", "dex_agents.cli", *arguments], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, env=child_environment, timeout=timeout, cwd=cwd)
