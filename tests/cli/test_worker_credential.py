"""Issue 29, finding 6: a Worker the engine refuses for its credential says so (not "SDK version
incompatible with Server version unknown"), and names ``--token-file``."""

from __future__ import annotations

from pathlib import Path

import pytest

from dex_agents.engine import start_engine
from tests.cli.support import run_cli
from tests.shell.agents import worker_environment

AGENT = "tests.shell.agents:support_flow_from_environment"


@pytest.mark.parametrize("token", [None, "not-the-engine-token"])
def test_a_worker_without_the_engines_token_says_the_credential_is_missing_or_wrong(
        tmp_path: Path, token: str | None) -> None:
    engine_token = tmp_path / "engine.token"
    engine_token.write_text("the-engine-token\n", encoding="utf-8")
    arguments: tuple[str, ...] = ()
    if token is not None:
        worker_token = tmp_path / "worker.token"
        worker_token.write_text(token, encoding="utf-8")
        arguments = ("--token-file", str(worker_token))
    with start_engine(token_file=engine_token) as engine:
        result = run_cli("worker", "--agent", AGENT, "--server", engine.address, *arguments,
                         environment={"TMPDIR": str(tmp_path), **worker_environment(tmp_path, "Credentials")},
                         timeout=60)
    assert result.returncode == 1, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"dex-agents: error: the Dex server at {engine.address} refused the Worker's "
                               f"credential: "), lines[0]
    assert "incompatible" not in lines[0] and "--token-file" in lines[0]
    assert ("missing" if token is None else "wrong") in lines[0]
