"""The support agent's sessions served by a Worker child the test SIGKILLs (see ``tests.shell.agents``).

``CrashLab`` holds what one crash test needs: the Flow (built in the test process for its Client, and
in each Worker child from the same environment), the session test client, the gates and the
cross-process tool log in the test's state directory, and the session's Step history. Every wait is
on committed values, a gate or the Worker child's exit, never on elapsed time.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import grpc
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.values.session import AgentEvent
from dex_agents.shell import AgentSessionFlow
from dex_agents.testing import (
    EXECUTE_COMPLETED,
    EXECUTE_FAILED,
    AgentSessionTestClient,
    FileGate,
    InvocationLog,
    KillableWorkerProcess,
    StepHistoryEntry,
    poll_until,
    read_step_history,
)
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory
from tests.shell.agents import WORKER_MODULE, build_support_flow, tool_invocations, unique_flow_type, worker_environment

CRASH_TIMEOUT: Final = 30.0
"""Seconds for each wait of a crash test. The local engine sees a SIGKILLed Worker at once (its
stream closes) and a crashed attempt with output is retried after Dex's 1 s first backoff, so a
wait that needs more than a few seconds is a failure, not a slow machine."""

Execution = tuple[str, str, int]
"""One ``execute`` outcome in Step history: (Step type, ``EXECUTE_COMPLETED`` or ``EXECUTE_FAILED``, attempt)."""


def new_session_id() -> str:
    return f"session-{uuid.uuid4().hex[:12]}"


def tool_key(session_id: str, tool_name: str, tool_call_id: str, turn_id: str = "turn-1") -> str:
    """The tool log's entry for one real run: ``<tool>:<idempotency key>``."""
    return f"{tool_name}:{session_id}/{turn_id}/{tool_call_id}"


def executions(history: Sequence[StepHistoryEntry]) -> list[Execution]:
    """Every ``execute`` completion and failure, in history order."""
    return [(entry.step_type, entry.event_type, entry.attempt) for entry in history
            if entry.event_type in (EXECUTE_COMPLETED, EXECUTE_FAILED)]


def completed(step_type: StepType, attempt: int = 1) -> Execution:
    return (step_type.value, EXECUTE_COMPLETED, attempt)


def failed(step_type: StepType, attempt: int = 1) -> Execution:
    return (step_type.value, EXECUTE_FAILED, attempt)


def texts_by_attempt(events: Sequence[AgentEvent], step_execution_id: str) -> dict[int, str]:
    """The ``text_delta`` text one Step execution streamed, joined per attempt."""
    texts: dict[int, str] = {}
    for event in events:
        if event.type == "text_delta" and event.step_execution_id == step_execution_id:
            texts[event.attempt] = texts.get(event.attempt, "") + str(event.payload["text"])
    return texts


def live_text(events: Sequence[AgentEvent], turn_id: str) -> str:
    """A turn's live text as the spec tells a UI to group it: by ``(turn_id, step_execution_id,
    attempt)``, keeping within one ``step_execution_id`` only the highest attempt seen."""
    order: list[str] = []
    for event in events:
        if event.type == "text_delta" and event.turn_id == turn_id and event.step_execution_id not in order:
            order.append(event.step_execution_id)
    parts = []
    for step_execution_id in order:
        texts = texts_by_attempt(events, step_execution_id)
        parts.append(texts[max(texts)])
    return "".join(parts)


def raw_history(server_address: str, session_id: str) -> list[pb.FlowHistoryEvent]:
    """The session's history events as Dex sends them (``read_step_history`` flattens away the
    failure text, the durability and the Flow config), oldest first."""
    events: list[pb.FlowHistoryEvent] = []
    with grpc.insecure_channel(server_address) as channel:
        stub = dex_pb2_grpc.FlowServiceStub(channel)
        page_token = b""
        while True:
            response = stub.GetHistoryEvents(
                pb.GetHistoryEventsRequest(flow_id=session_id, next_page_token=page_token), timeout=CRASH_TIMEOUT)
            events.extend(response.events)
            if not response.next_page_token:
                return events
            page_token = response.next_page_token


def execute_failure_details(events: Sequence[pb.FlowHistoryEvent], step_type: StepType) -> list[str]:
    """The failure text Dex recorded for each failed ``execute`` of ``step_type``, in order."""
    return [event.step_execute_failed.output.failure.details.detail for event in events
            if event.WhichOneof("payload") == EXECUTE_FAILED
            and event.step_execute_failed.context.step_type == step_type.value]


def step_method_durabilities(events: Sequence[pb.FlowHistoryEvent]) -> set[int]:
    """The durability (a ``pb.StepDurability`` value) of every Step method event."""
    durabilities: set[int] = set()
    for event in events:
        payload = event.WhichOneof("payload")
        if payload is not None and payload.startswith("step_"):
            durabilities.add(getattr(event, payload).context.durability)
    return durabilities


@dataclass(frozen=True, slots=True, kw_only=True)
class CrashLab:
    """One crash test's Flow, session client, Worker children, gates and tool log."""

    state_directory: Path
    flow_type: str
    flow: AgentSessionFlow
    sessions: AgentSessionTestClient
    server_address: str
    start_child: Callable[[], KillableWorkerProcess]

    @classmethod
    def open(cls, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
             killable_worker: KillableWorkerFactory, tmp_path: Path) -> CrashLab:
        """A Client in this process (no Worker) for a fresh Flow type; Workers come from ``start_worker``."""
        state_directory = tmp_path / "state"
        flow_type = unique_flow_type()
        flow = build_support_flow(state_directory, flow_type=flow_type)
        environment = agent_environment([flow], is_worker_in_process=False)
        sessions = agent_sessions(environment, flow, timeout=CRASH_TIMEOUT)
        child_environment = worker_environment(state_directory, flow_type)
        return cls(state_directory=state_directory, flow_type=flow_type, flow=flow, sessions=sessions,
                   server_address=environment.server_address,
                   start_child=lambda: killable_worker(WORKER_MODULE, environment=child_environment))

    def start_worker(self) -> KillableWorkerProcess:
        """A new Worker child serving this Flow type, registered with the engine."""
        return self.start_child()

    def gate(self, name: str) -> FileGate:
        return FileGate(self.state_directory, name)

    @property
    def tools(self) -> InvocationLog:
        """Real tool runs, across every Worker child."""
        return tool_invocations(self.state_directory)

    def history(self, session_id: str) -> list[StepHistoryEntry]:
        return read_step_history(self.server_address, session_id, timeout=CRASH_TIMEOUT)

    def executions(self, session_id: str) -> list[Execution]:
        return executions(self.history(session_id))

    def events(self, session_id: str) -> list[AgentEvent]:
        return self.sessions.events(session_id)

    def wait_for_event(self, session_id: str, accept: Callable[[AgentEvent], bool], description: str, *,
                       timeout: float = CRASH_TIMEOUT) -> AgentEvent:
        """Wait until the session's ``AgentEvents`` Stream holds a committed event ``accept`` takes."""
        return poll_until(lambda: next((event for event in self.events(session_id) if accept(event)), None),
                          timeout=timeout, description=f"session {session_id!r}: {description}")

    def kill_at(self, worker: KillableWorkerProcess, gate: FileGate) -> KillableWorkerProcess:
        """SIGKILL ``worker`` (held at ``gate``), then release the gate for the rerun and start a new
        Worker child; the killed attempt can never pass the gate."""
        worker.kill()
        assert worker.returncode == -9
        gate.release()
        return self.start_worker()
