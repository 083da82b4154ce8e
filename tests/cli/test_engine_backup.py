"""``dex-agents engine backup``: SQLite's online backup of a running engine's database.

The end-to-end test backs up the database three times while sessions keep taking turns (a thread
drives them; the backups run as the command, in child processes), then opens each copy with an engine
of its own and reads every session's committed state through a session client (no Worker: the copy is only read): each copy holds every turn that had
completed before its backup began. Waits are on committed turns, never on time.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Final

import pytest

from dex_agents.testing.environment import AgentTestEnvironment
from dex_agents.testing.private_engine import PrivateDexEngine
from tests.cli.support import run_cli
from tests.shell.agents import LOOKUP_MESSAGE, build_support_flow, unique_flow_type

SESSIONS: Final = 3
MAX_TURNS: Final = 40
"""Turns per session at most: the driver stops once the backups are done, or here."""
BACKUPS: Final = 3
DATABASE_NAME: Final = "engine.sqlite3"  # PrivateDexEngine's database in its state directory
WAIT: Final = 60.0


class TurnDriver:
    """Sessions taking lookup turns one after another on a thread; ``committed`` is each session's
    completed turns, raised only after the client saw the turn completed."""

    def __init__(self, environment: AgentTestEnvironment, flow_type_flow: object, session_ids: list[str]) -> None:
        self.committed: dict[str, int] = dict.fromkeys(session_ids, 0)
        self.changed = threading.Condition()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self._environment = environment
        self._flow = flow_type_flow
        self._thread = threading.Thread(target=self._run, name="turn-driver", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        from dex_agents.shell import AgentSessionFlow

        assert isinstance(self._flow, AgentSessionFlow)
        sessions = self._environment.sessions(self._flow, timeout=WAIT)
        try:
            for turn in range(1, MAX_TURNS + 1):
                for session_id in self.committed:
                    if turn == 1:
                        sessions.start_session(session_id, LOOKUP_MESSAGE)
                    else:
                        sessions.send_user_message(session_id, LOOKUP_MESSAGE)
                for session_id in self.committed:
                    sessions.wait_for_completed_turns(session_id, turn, timeout=WAIT)
                    with self.changed:
                        self.committed[session_id] = turn
                        self.changed.notify_all()
                if self.stop.is_set():
                    return
        except BaseException as error:  # noqa: BLE001 - handed to the test thread
            self.error = error
        finally:
            with self.changed:
                self.stop.set()
                self.changed.notify_all()
            sessions.close()

    def wait_for_more_than(self, total: int) -> dict[str, int]:
        """The committed turns once their sum exceeds ``total`` (or the driver ended)."""
        with self.changed:
            assert self.changed.wait_for(lambda: sum(self.committed.values()) > total or self.stop.is_set(), WAIT)
            return dict(self.committed)

    def finish(self) -> None:
        self.stop.set()
        self._thread.join(WAIT * 2)
        assert not self._thread.is_alive(), "the turn driver did not stop"
        if self.error is not None:
            raise self.error


@pytest.mark.slow
def test_a_backup_taken_while_sessions_run_opens_and_holds_every_committed_turn(tmp_path: Path) -> None:
    flow = build_support_flow(tmp_path / "state", flow_type=unique_flow_type("Backup"))
    engine = PrivateDexEngine.start(tmp_path / "engine")
    copies: list[tuple[Path, dict[str, int]]] = []
    try:
        environment = AgentTestEnvironment.start(server_address=engine.server_address, flows=[flow])
        try:
            session_ids = [f"backup-{index}" for index in range(SESSIONS)]
            driver = TurnDriver(environment, flow, session_ids)
            driver.start()
            try:
                seen = 0
                for index in range(BACKUPS):
                    before = driver.wait_for_more_than(seen)  # turns keep committing between backups
                    assert not driver.stop.is_set() or driver.error is None, driver.error
                    target = tmp_path / f"backup-{index}.sqlite3"
                    result = run_cli("engine", "backup", str(target), "--db", str(tmp_path / "engine" / DATABASE_NAME))
                    assert result.returncode == 0, result.stderr
                    assert result.stdout.startswith(f"backed up {tmp_path / 'engine' / DATABASE_NAME} to {target}:")
                    copies.append((target, before))
                    seen = sum(before.values())
            finally:
                driver.finish()
            assert driver.error is None
            final = dict(driver.committed)
        finally:
            environment.close()
    finally:
        engine.stop()
    assert sum(final.values()) > sum(copies[-1][1].values()), "no turn committed after the last backup began"

    for target, before in copies:
        assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith(target.name)) == [target.name], \
            "the copy is one self-contained file (no -wal, -shm or partial file beside it)"
        with sqlite3.connect(target) as check:
            assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        restored = tmp_path / f"restored-{target.stem}"
        restored.mkdir()
        target.rename(restored / DATABASE_NAME)
        copy_engine = PrivateDexEngine.start(restored)
        try:
            reader = AgentTestEnvironment.start(server_address=copy_engine.server_address, flows=[flow],
                                                is_worker_in_process=False)
            try:
                sessions = reader.sessions(flow)
                for session_id, committed in before.items():
                    state = sessions.read_agent_state(session_id)
                    assert state is not None, f"{session_id} is missing from {target.name}"
                    assert state.completed_turn_count >= committed, (target.name, session_id, state, committed)
                    assert state.message_count >= 4 * committed  # user, tool call, tool result, answer per turn
            finally:
                reader.close()
        finally:
            copy_engine.stop()


def test_a_backup_of_a_stopped_engines_database_is_a_copy_the_engine_opens(tmp_path: Path) -> None:
    engine = PrivateDexEngine.start(tmp_path / "engine")
    engine.stop()
    target = tmp_path / "copy.sqlite3"
    result = run_cli("engine", "backup", str(target), "--db", str(tmp_path / "engine" / DATABASE_NAME))
    assert result.returncode == 0, result.stderr
    assert "0 runs, 0 Step executions" in result.stdout
    assert sorted(path.name for path in tmp_path.iterdir()) == ["copy.sqlite3", "engine"]


def test_backup_refuses_a_missing_database_a_missing_directory_and_the_database_itself(tmp_path: Path) -> None:
    missing = run_cli("engine", "backup", str(tmp_path / "copy.sqlite3"), "--db", str(tmp_path / "none.sqlite3"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr and missing.stdout == ""
    nowhere = run_cli("engine", "backup", str(tmp_path / "no" / "copy.sqlite3"), "--db", str(tmp_path / "x"))
    assert nowhere.returncode == 2 and "directory" in nowhere.stderr
    database = tmp_path / "engine.sqlite3"
    sqlite3.connect(database).close()
    itself = run_cli("engine", "backup", str(database), "--db", str(database))
    assert itself.returncode == 2 and "the database itself" in itself.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["engine.sqlite3"]
