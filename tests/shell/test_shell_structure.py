"""The shell's structure, checked on its source: the runner is called from one module
(``dex_agents.shell.requests``, which performs the core's requests) and nowhere else."""

from __future__ import annotations

import re
from pathlib import Path

SHELL = Path(__file__).resolve().parents[2] / "shell" / "dex_agents" / "shell"
RUNNER_CALL = re.compile(r"\brunner\.(build_user_message|run_model_step|execute_deferred_tool_call)\(")


def test_only_the_requests_module_calls_the_runner() -> None:
    calling = sorted(path.name for path in SHELL.glob("*.py") if RUNNER_CALL.search(path.read_text(encoding="utf-8")))
    assert calling == ["requests.py"]
