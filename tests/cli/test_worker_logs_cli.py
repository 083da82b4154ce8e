"""Issue 29, "Logs", from the command line: ``dex-agents worker --log-format json`` writes log lines
that parse; while the engine is down the Worker says so once (not a block every 1.5 s), and once more
when it is registered again."""

from __future__ import annotations

import contextlib
import json
import signal
import time
from pathlib import Path

from dex_agents.engine import start_engine
from tests.cli.support import background_cli
from tests.shell.agents import worker_environment

AGENT = "tests.shell.agents:support_flow_from_environment"


def test_the_worker_logs_the_engine_going_away_once_and_coming_back_once_as_json(tmp_path: Path) -> None:
    database = tmp_path / "engine.sqlite3"
    environment = {"TMPDIR": str(tmp_path), **worker_environment(tmp_path, "LogsEngineDown")}
    with contextlib.ExitStack() as stack:
        with start_engine(database) as engine:
            address, port = engine.address, engine.port
            worker = stack.enter_context(background_cli("worker", "--agent", AGENT, "--server", address,
                                                        "--log-format", "json", environment=environment))
            worker.wait_for_line("dex-agents worker ready")
        worker.wait_for_line('{"time"', timeout=30)  # the engine is gone: the first log line
        time.sleep(4)  # the SDK reconnects every 1.5 s or so: each try used to log a block
        with start_engine(database, port=port):
            back = worker.wait_for_line('{"time"', timeout=1)
            deadline = time.monotonic() + 30
            while "reachable again" not in back and time.monotonic() < deadline:
                with contextlib.suppress(AssertionError):
                    worker.wait_for_line("~never~", timeout=0.5)
                back = next((line for line in worker.lines if "reachable again" in line), back)
            assert worker.stop(signal.SIGTERM) == 0
    records = [json.loads(line) for line in worker.lines if line.startswith("{")]
    assert all(line.startswith(("{", "dex-agents worker")) for line in worker.lines), worker.lines
    messages = [record["message"] for record in records]
    assert sum("is unreachable; the Worker retries: UNAVAILABLE: " in message for message in messages) == 1, messages
    assert sum("reachable again" in message for message in messages) == 1, messages
    assert all(set(record) >= {"time", "level", "logger", "message", "session_id", "turn_id", "step"}
               for record in records)


def test_the_engine_logs_through_the_same_setup_and_its_json_lines_parse(tmp_path: Path) -> None:
    with background_cli("engine", "--port", "0", "--db", str(tmp_path / "engine.sqlite3"), "--log-format", "json",
                        "--log-level", "info") as engine:
        engine.wait_for_line("dex-agents engine ready on ")
        assert engine.stop(signal.SIGTERM) == 0
    records = [json.loads(line) for line in engine.lines if not line.startswith("dex-agents engine")]
    assert records and all(record["level"] in ("INFO", "WARNING") and "session_id" in record for record in records)
    assert "stopping" in [record["message"] for record in records]
