"""``ConformanceSession``: one session of a conformance test, and what the suite reads of it.

Invariants: every wait is on committed session values (never a sleep); every read goes through the
session's public surface (RPCs, committed Attributes, the event Stream, the Step history) or the
suite's own logs (model calls, tool runs) in the test's state directory.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Final, final

from dex_agents.adapters.kit import SessionFlowOptions
from dex_agents.pure.values.session import AgentEvent, AgentInterrupt, AgentMessage, AgentState
from dex_agents.testing.conformance.adapter import ConformanceAdapter, ConformanceSetup, adapter_path
from dex_agents.testing.conformance.model import SeenMessage, model_calls
from dex_agents.testing.conformance.tools import tool_runs
from dex_agents.testing.conformance.worker import SETUP_ENV
from dex_agents.testing.processes import KillableWorkerProcess
from dex_agents.testing.session_client import AgentSessionTestClient
from dex_agents.testing.step_history import completed_step_types, read_step_history

WORKER_MODULE: Final = "dex_agents.testing.conformance.worker"

StartWorker = Callable[[str, dict[str, str]], KillableWorkerProcess]


def turns_ended(count: int) -> Callable[[AgentState], bool]:
    """``count`` turns ended (completed or failed) and none runs."""
    return lambda state: (state.completed_turn_count + state.failed_turn_count >= count
                          and state.current_turn_id is None)


@final
class ConformanceSession:
    """A session of the Flow ``setup`` describes (see the module docstring)."""

    def __init__(self, setup: ConformanceSetup, sessions: AgentSessionTestClient, server_address: str,
                 start_worker: StartWorker | None) -> None:
        self.setup = setup
        self.sessions = sessions
        self.server_address = server_address
        self.session_id = f"conformance-{uuid.uuid4().hex}"
        self.state_directory = Path(setup.state_directory)
        self._start_worker = start_worker
        self.worker: KillableWorkerProcess | None = None

    # Worker children (crash tests)

    def start_worker(self) -> KillableWorkerProcess:
        """Start a Worker child serving this session's Flow."""
        if self._start_worker is None:
            raise RuntimeError("this session's Worker runs in the test process")
        self.worker = self._start_worker(WORKER_MODULE, {SETUP_ENV: self.setup.to_json()})
        return self.worker

    def kill_worker(self) -> None:
        """SIGKILL the Worker child."""
        if self.worker is None:
            raise RuntimeError("no Worker child runs")
        self.worker.kill()
        self.worker = None

    # Driving the session

    def start(self, text: str) -> None:
        self.sessions.start_session(self.session_id, text)

    def send(self, text: str) -> bool:
        return self.sessions.send_user_message(self.session_id, text)

    def compact(self) -> bool:
        """``compact_history``: the next model call compacts first (``True``: there is something to summarize)."""
        answer = self.sessions.client.invoke_rpc(self.sessions.flow.compact_history, self.session_id)
        return bool(answer)

    def wait_for_turns(self, count: int, timeout: float = 60.0) -> AgentState:
        """Wait until ``count`` turns ended (completed or failed)."""
        return self.sessions.wait_for_state(self.session_id, turns_ended(count),
                                            description=f"{count} ended turns", timeout=timeout)

    def wait_for_ended_turns(self, count: int, timeout: float = 60.0) -> AgentState:
        """Wait until ``count`` turns ended, a canceled one included (``ended_turn_count``)."""
        return self.sessions.wait_for_state(
            self.session_id, lambda state: state.ended_turn_count >= count and state.current_turn_id is None,
            description=f"{count} ended turns (canceled included)", timeout=timeout)

    def cancel_turn(self, reason: str) -> bool:
        """``cancel_turn`` of the running turn (its ID read from the committed state)."""
        turn_id = self.state().current_turn_id
        if turn_id is None:
            raise AssertionError(f"session {self.session_id} runs no turn to cancel")
        return self.sessions.sessions.cancel_turn(self.session_id, turn_id, reason)

    def cancel_tool_call(self, tool_call_id: str, reason: str) -> bool:
        """``cancel_tool_call``."""
        return self.sessions.sessions.cancel_tool_call(self.session_id, tool_call_id, reason)

    def wait_for_interrupt(self, tool_name: str) -> AgentInterrupt:
        return self.sessions.wait_for_pending_interrupt(self.session_id, tool_name)

    def resolve(self, interrupt: AgentInterrupt, approved: bool, rejection_message: str | None = None, *,
                edited_arguments: str | None = None, arguments_sha256: str | None = None,
                approver: str | None = None, reason: str | None = None) -> bool:
        """``resolve_interrupt`` (an edit, the hash the approver saw and the audit fields optional)."""
        return self.sessions.sessions.resolve_interrupt(
            self.session_id, interrupt.interrupt_id, approved, rejection_message, edited_arguments=edited_arguments,
            arguments_sha256=arguments_sha256, approver=approver, reason=reason)

    def pending_interrupts(self) -> list[AgentInterrupt]:
        """The committed pending interrupts."""
        return list(self.sessions.sessions.pending_interrupts(self.session_id))

    # What the suite asserts on

    def model_calls(self) -> list[list[SeenMessage]]:
        """What each model call received, in order (reruns included)."""
        return model_calls(self.state_directory)

    def tool_runs(self, tool_name: str) -> list[str]:
        """Each real run of ``tool_name`` (its arguments as JSON)."""
        return tool_runs(self.state_directory, tool_name)

    def messages(self) -> list[AgentMessage]:
        return list(self.sessions.snapshot(self.session_id).messages)

    def state(self) -> AgentState:
        state = self.sessions.read_agent_state(self.session_id)
        if state is None:
            raise AssertionError(f"session {self.session_id} has no AgentState")
        return state

    def events(self) -> list[AgentEvent]:
        return self.sessions.events(self.session_id)

    def steps(self) -> list[str]:
        """The session's completed Steps, in order."""
        return self.steps_of(self.session_id)

    def steps_of(self, session_id: str) -> list[str]:
        """The completed Steps of ``session_id`` (this session or a child session of it), in order."""
        return completed_step_types(read_step_history(self.server_address, session_id))


def new_setup(adapter: ConformanceAdapter, state_directory: Path, *, streaming: bool, structured_output: bool,
              options: SessionFlowOptions, heartbeat_interval_ms: int | None = None) -> ConformanceSetup:
    """A setup with a Flow type of its own (Flow types are unique on the engine)."""
    return ConformanceSetup(
        heartbeat_interval_ms=heartbeat_interval_ms,
        adapter=adapter_path(adapter),
        flow_type=f"Conformance-{adapter.name}-{uuid.uuid4().hex[:10]}",
        state_directory=str(state_directory),
        streaming=streaming,
        structured_output=structured_output,
        options=dict(options),  # type: ignore[arg-type]
    )


__all__ = ["WORKER_MODULE", "ConformanceSession", "new_setup", "turns_ended"]
