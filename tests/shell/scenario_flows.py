"""Shared builders of the session integration tests (``test_session_*.py``): scripted Flows with a
unique Flow type, a runner wrapper that records and reshapes model calls, an injectable clock, and
readers of what a session committed (Step history with failure texts, events by type).

Every Flow here runs on the in-process Worker of ``agent_environment``; tool and model gates live in
the test's ``tmp_path``, so nothing outlives the test.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import grpc
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc
from dex_agents.client import SessionClient
from dex_agents.client.values import PendingApproval
from dex_agents.pure.values.runner import AgentTurnOutcome, ToolPolicy
from dex_agents.pure.values.session import AgentEvent, FrameworkMessage, MessageRole, ToolEffect
from dex_agents.shell import (
    AgentFrameworkRunner,
    AgentSessionFlow,
    AgentTurnContext,
    DeferredToolExecution,
    SessionTiming,
    ToolExecutionResult,
    create_agent_session_flow,
)
from dex_agents.testing import (
    EXECUTE_COMPLETED,
    InvocationLog,
    ScriptedAgentRunner,
    ScriptedModelCall,
    ScriptedTool,
    ScriptedToolCall,
    StepHistoryEntry,
    completed_step_types,
    poll_until,
    read_step_history,
)

from tests.pure.golden_fixtures import SESSION_EVENT_PAYLOAD_KEYS
from tests.shell.agents import unique_flow_type

TOOL_LOG: Final = "tool-runs"
"""Name of the ``InvocationLog`` every scenario runner records real tool runs in."""

READ_POLICY: Final = ToolPolicy(effect=ToolEffect.READ)
IDEMPOTENT_WRITE_POLICY: Final = ToolPolicy(effect=ToolEffect.IDEMPOTENT_WRITE)
WRITE_POLICY: Final = ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE)

EVENT_PAYLOAD_KEYS: Final[Mapping[str, frozenset[str]]] = SESSION_EVENT_PAYLOAD_KEYS
"""Payload keys by type of every event the session writes: the spec's events table and ours (one copy,
in the golden fixtures)."""


def new_session_id() -> str:
    return f"session-{uuid.uuid4().hex[:12]}"


def call(tool_call_id: str, tool_name: str, **arguments: object) -> ScriptedToolCall:
    """A scripted tool call whose arguments are compact, key-sorted JSON."""
    return ScriptedToolCall(tool_call_id=tool_call_id, tool_name=tool_name,
                            arguments=json.dumps(arguments, sort_keys=True, separators=(",", ":")))


def answer_tool(text: str) -> ScriptedTool:
    """A tool that answers ``text``."""
    async def tool(_call: DeferredToolExecution) -> str:
        return text

    return tool


def tool_log(directory: Path) -> InvocationLog:
    """The log of real tool runs (``<tool>:<idempotency key>`` per run) of a scenario runner."""
    return InvocationLog(directory, TOOL_LOG)


def scripted_runner(directory: Path, script: Mapping[str, Sequence[ScriptedModelCall]],
                    tools: Mapping[str, ScriptedTool] | None = None) -> ScriptedAgentRunner:
    """A scripted runner with its gates and tool log in ``directory``."""
    return ScriptedAgentRunner(script=script, tools=tools or {}, gate_directory=directory,
                               invocation_log=tool_log(directory))


def session_flow(runner: AgentFrameworkRunner, *, prefix: str, tool_policies: Mapping[str, ToolPolicy] | None = None,
                 interrupt_deadline_ms: int | None = None, timing: SessionTiming | None = None) -> AgentSessionFlow:
    """A session Flow of a Flow type no other test uses."""
    return create_agent_session_flow(runner, unique_flow_type(prefix),
                                     tool_policies=tool_policies, interrupt_deadline_ms=interrupt_deadline_ms,
                                     timing=timing)


LOST_REFUND: Final = "Refund order 9"
"""The user message whose turn in ``lost_refund_flow`` calls ``refund`` (as ``call-lost``, order 9)."""


def lost_refund_flow(directory: Path, *, prefix: str, policy: ToolPolicy | None = None) -> AgentSessionFlow:
    """A Flow whose turn for ``LOST_REFUND`` calls ``refund``, then answers ``Done.``; the write's one
    attempt fails with a connection reset, so its outcome is unknown unless ``policy`` (by default a
    ``non_idempotent_write`` without approval) reconciles it."""
    async def lost_refund(_call: DeferredToolExecution) -> str:
        raise ConnectionError("connection reset after the request was sent")

    script = {LOST_REFUND: (ScriptedModelCall(tool_calls=(call("call-lost", "refund", order_id=9),)),
                            ScriptedModelCall(text="Done."))}
    unknown = ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False)
    return session_flow(scripted_runner(directory, script, {"refund": lost_refund}), prefix=prefix,
                        tool_policies={"refund": policy or unknown})


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallSeen:
    """One ``run_model_step`` call as the runner received it."""

    flow_id: str
    turn_id: str
    attempt: int
    is_resuming: bool
    framework_items: tuple[str, ...]


OutcomeHook = Callable[[AgentTurnContext], Awaitable[AgentTurnOutcome | None]]
"""Runs before the inner runner: returns an outcome to use instead, ``None`` to delegate, or raises."""


@dataclass(slots=True, kw_only=True)
class RecordingRunner:
    """Wraps a ``ScriptedAgentRunner``: records every model call it receives, and lets a test replace
    (``before_model``) or shape (``user_message``) what the runner answers. Thread-safe records; the
    wrapper itself keeps no session state."""

    inner: ScriptedAgentRunner
    before_model: OutcomeHook | None = None
    user_message: Callable[[str, FrameworkMessage], FrameworkMessage] | None = None
    seen: list[ModelCallSeen] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def build_user_message(self, text: str) -> FrameworkMessage:
        message = self.inner.build_user_message(text)
        return message if self.user_message is None else self.user_message(text, message)

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        with self._lock:
            self.seen.append(ModelCallSeen(flow_id=turn.flow_id, turn_id=turn.turn_id, attempt=turn.attempt,
                                           is_resuming=turn.is_resuming,
                                           framework_items=tuple(m.framework_item for m in turn.messages)))
        if self.before_model is not None:
            replaced = await self.before_model(turn)
            if replaced is not None:
                return replaced
        return await self.inner.run_model_step(turn)

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        return await self.inner.execute_deferred_tool_call(call)

    def calls_of(self, turn_id: str, flow_id: str | None = None) -> list[ModelCallSeen]:
        """The model calls of ``turn_id`` (of session ``flow_id`` when given), in the order received."""
        with self._lock:
            return [seen for seen in self.seen
                    if seen.turn_id == turn_id and (flow_id is None or seen.flow_id == flow_id)]


def user_text_of(turn: AgentTurnContext) -> str:
    """The text of the running turn's user message."""
    return next((m.text or "" for m in turn.messages if m.turn_id == turn.turn_id and m.role is MessageRole.USER), "")


@dataclass(slots=True)
class OffsetClock:
    """The Worker clock of a session under test: wall time plus an offset the test advances."""

    offset_ms: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self) -> int:
        with self._lock:
            return time.time_ns() // 1_000_000 + self.offset_ms

    def advance(self, milliseconds: int) -> None:
        with self._lock:
            self.offset_ms += milliseconds


@dataclass(frozen=True, slots=True, kw_only=True)
class StepFailure:
    """One ``step_execute_failed`` history event: the Step ran out of attempts."""

    step_type: str
    step_execution_id: str
    attempt: int
    error: str


def raw_history(server_address: str, flow_id: str) -> list[pb.FlowHistoryEvent]:
    """Every history event of the session, oldest first, as the server sends it."""
    events: list[pb.FlowHistoryEvent] = []
    with grpc.insecure_channel(server_address) as channel:
        stub = dex_pb2_grpc.FlowServiceStub(channel)
        page_token = b""
        while True:
            response = stub.GetHistoryEvents(
                pb.GetHistoryEventsRequest(flow_id=flow_id, next_page_token=page_token), timeout=30)
            events.extend(response.events)
            if not response.next_page_token:
                return events
            page_token = response.next_page_token


def step_failures(server_address: str, flow_id: str) -> list[StepFailure]:
    """Every ``step_execute_failed`` event of the session (a Step out of attempts), with its error text."""
    failures: list[StepFailure] = []
    for event in raw_history(server_address, flow_id):
        if event.WhichOneof("payload") == "step_execute_failed":
            failed = event.step_execute_failed
            failures.append(StepFailure(step_type=failed.context.step_type,
                                        step_execution_id=failed.context.step_execution_id,
                                        attempt=failed.output.failure.attempt,
                                        error=failed.output.failure.details.detail))
    return failures


def step_inputs(server_address: str, flow_id: str) -> dict[str, pb.Value]:
    """The input of every Step execution of the session that completed ``execute``, by execution ID
    (a tool Step's input is its tool call ID, ``ResumeTurn``'s its expected result count)."""
    inputs: dict[str, pb.Value] = {}
    for event in raw_history(server_address, flow_id):
        if event.WhichOneof("payload") == "step_execute_completed":
            completed = event.step_execute_completed
            inputs[completed.context.step_execution_id] = completed.input.step_input
    return inputs


def completed_steps(server_address: str, flow_id: str) -> list[str]:
    """The Step types of the session's completed ``execute`` methods, in order."""
    return completed_step_types(read_step_history(server_address, flow_id))


def completed_executions(server_address: str, flow_id: str) -> list[StepHistoryEntry]:
    """The session's completed ``execute`` history entries, in order."""
    return [entry for entry in read_step_history(server_address, flow_id) if entry.event_type == EXECUTE_COMPLETED]


def wait_for_history(server_address: str, flow_id: str, event_type: str, step_execution_id: str,
                     timeout: float = 30.0) -> StepHistoryEntry:
    """Wait until the session's history holds ``event_type`` of ``step_execution_id``."""
    def probe() -> StepHistoryEntry | None:
        return next((entry for entry in read_step_history(server_address, flow_id)
                     if entry.event_type == event_type and entry.step_execution_id == step_execution_id), None)

    return poll_until(probe, timeout=timeout, description=f"{event_type} of {step_execution_id} in {flow_id}")


def wait_for_pending_approval(client: SessionClient, session_id: str) -> PendingApproval:
    """The first approval the session or one of its sub-agents' child sessions waits for (the demo's
    billing agent's refund), waiting until there is one."""
    return poll_until(lambda: next(iter(client.pending_approvals(session_id)), None), timeout=60.0,
                      description="the billing agent's refund approval")


def of_type(events: Sequence[AgentEvent], event_type: str) -> list[AgentEvent]:
    return [event for event in events if event.type == event_type]


def without_deltas(events: Sequence[AgentEvent]) -> list[str]:
    """Event types in order, with each run of consecutive ``text_delta`` events shown once."""
    types: list[str] = []
    for event in events:
        if not (event.type == "text_delta" and types and types[-1] == "text_delta"):
            types.append(event.type)
    return types


def assert_payload_keys(events: Sequence[AgentEvent]) -> None:
    """Every session event has exactly the spec's payload keys for its type."""
    for event in events:
        assert set(event.payload) == EVENT_PAYLOAD_KEYS[event.type], event


def live_text(events: Sequence[AgentEvent], turn_id: str) -> dict[str, str]:
    """The spec's grouping of live text: by ``step_execution_id`` of ``turn_id``, keeping only the
    highest ``attempt`` seen, the concatenated ``text_delta`` text."""
    highest: dict[str, int] = {}
    for event in events:
        if event.turn_id == turn_id:
            highest[event.step_execution_id] = max(highest.get(event.step_execution_id, 0), event.attempt)
    text: dict[str, str] = {}
    for event in events:
        if (event.turn_id == turn_id and event.type == "text_delta"
                and event.attempt == highest[event.step_execution_id]):
            text[event.step_execution_id] = text.get(event.step_execution_id, "") + str(event.payload["text"])
    return text
