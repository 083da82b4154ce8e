"""Regenerate the golden sessions: ``python -m tests.golden_sessions.generate``, then review the diff.

Runs each scenario of ``SCENARIOS`` on a fresh local engine with the golden agent (``agent``) served
by a Worker child, and writes each session's export (``dex-agents sessions export``) to
``tests/golden_sessions/<name>.json``. A changed golden file means the session a user would export
today differs from the one stored: regenerate only on purpose (a new export version, a new scenario).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

from dex_agents.client import SessionClient
from dex_agents.pure.offline.export_document import render_export
from dex_agents.testing import FileGate, KillableWorkerProcess, PrivateDexEngine
from dex_agents.testing.environment import AgentTestEnvironment
from tests.golden_sessions.agent import (
    CHECK_WAREHOUSE,
    REFUND_8_CAREFULLY,
    REFUND_9,
    REFUND_GATE,
    WORKER_MODULE,
    build_golden_flow,
    worker_environment,
)

GOLDEN_DIRECTORY: Final = Path(__file__).resolve().parent
REPO_ROOT: Final = GOLDEN_DIRECTORY.parents[1]
FLOW_TYPE: Final = "GoldenAgent"


class Lab:
    """The engine, the session client and the Worker child of one generation run."""

    def __init__(self, engine: PrivateDexEngine, sessions: SessionClient, state_directory: Path) -> None:
        self.engine = engine
        self.sessions = sessions
        self.state_directory = state_directory
        self.worker = self.start_worker()

    def start_worker(self) -> KillableWorkerProcess:
        return KillableWorkerProcess.start(
            entry_module=WORKER_MODULE, server_address=self.engine.server_address,
            log_path=self.state_directory / "worker.log", environment=worker_environment(self.state_directory, FLOW_TYPE),
            working_directory=REPO_ROOT)


def failed_turn(lab: Lab, session_id: str) -> None:
    """A read runs, then the turn's second model call fails all three attempts: the turn fails with
    its note; the next turn answers."""
    lab.sessions.start(session_id, CHECK_WAREHOUSE)
    lab.sessions.wait_for_turns(session_id, 1, timeout=60)
    lab.sessions.send(session_id, "thanks", message_id="thanks-1")
    lab.sessions.wait_for_turns(session_id, 2)


def rejection(lab: Lab, session_id: str) -> None:
    """An approval rejected with a message the model reads."""
    lab.sessions.start(session_id, REFUND_9)
    interrupt = lab.sessions.wait_for_pending_interrupt(session_id, "refund")
    lab.sessions.reject(session_id, interrupt.interrupt_id, "not today")
    lab.sessions.wait_for_completed_turns(session_id, 1)


def outcome_unknown(lab: Lab, session_id: str) -> None:
    """An approved single-attempt refund whose Worker is SIGKILLed inside the tool: outcome_unknown."""
    lab.sessions.start(session_id, REFUND_8_CAREFULLY)
    lab.sessions.approve(session_id, lab.sessions.wait_for_pending_interrupt(session_id, "refund").interrupt_id)
    gate = FileGate(lab.state_directory, REFUND_GATE)
    gate.wait_until_reached()
    lab.worker.kill()
    gate.release()
    gate.reset()
    lab.worker = lab.start_worker()
    lab.sessions.wait_for_completed_turns(session_id, 1)


def long_session(lab: Lab, session_id: str) -> None:
    """Ten echo turns; two messages are sent twice with their IDs (each queued once)."""
    lab.sessions.start(session_id, "message 1")
    lab.sessions.wait_for_completed_turns(session_id, 1)
    for number in range(2, 11):
        lab.sessions.send(session_id, f"message {number}", message_id=f"m-{number}")
        if number in (4, 9):
            lab.sessions.send(session_id, f"message {number}", message_id=f"m-{number}")
        lab.sessions.wait_for_completed_turns(session_id, number)


SCENARIOS: Final[dict[str, Callable[[Lab, str], None]]] = {
    "failed_turn": failed_turn,
    "rejection": rejection,
    "outcome_unknown": outcome_unknown,
    "long_session": long_session,
}


def main() -> int:
    with PrivateDexEngine.start() as engine, tempfile.TemporaryDirectory(prefix="golden-") as state:
        state_directory = Path(state)
        flow = build_golden_flow(state_directory, FLOW_TYPE)
        with AgentTestEnvironment.start(server_address=engine.server_address, flows=[flow],
                                        is_worker_in_process=False) as environment, \
                SessionClient(environment.client, flow, timeout=60) as sessions:
            lab = Lab(engine, sessions, state_directory)
            try:
                for name, scenario in SCENARIOS.items():
                    session_id = f"golden-{name.replace('_', '-')}"
                    scenario(lab, session_id)
                    sessions.stop(session_id)
                    path = GOLDEN_DIRECTORY / f"{name}.json"
                    path.write_text(render_export(sessions.export(session_id)), encoding="utf-8")
                    print(f"wrote {path.relative_to(REPO_ROOT)} ({path.stat().st_size} bytes)")
            finally:
                lab.worker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
