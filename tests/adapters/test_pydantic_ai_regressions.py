"""Regression tests of defects of the Pydantic AI adapter seen in the field, on a real engine.

Each test drives a session only through the public API (``create_pydantic_ai_session_flow``, the
session test client, the snapshot, the events, the Step history) with a scripted ``FunctionModel``
(no key). The model functions and the tools run on the in-process Worker, so they record what they
receive and how often they run into lists of the test. Every wait is on committed values.

A model call that keeps raising fails its ``RunModel`` Step after 3 attempts; Dex's back-off (1 s,
then 2 s) makes that about 3 s of real time, so the waits that span one allow ``RETRIES_SECONDS``.
Scripts that could loop without end stop at ``MODEL_CALL_CAP`` model calls, so a loop fails fast.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel
from pydantic_ai import Agent, Tool, ToolOutput
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaThinkingCalls, DeltaToolCalls, FunctionModel

from dex_agents.adapters.pydantic_ai import DEX_EFFECT_METADATA_KEY, create_pydantic_ai_session_flow
from dex_agents.pure.values.session import AgentEvent, AgentState, MessageRole
from dex_agents.testing import poll_until
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from dex_agents.testing.session_client import AgentSessionTestClient
from tests.adapters.pydantic_ai_support import streamed_parts

RETRIES_SECONDS: Final = 45.0
"""Timeout of a wait that spans a model call failing all 3 attempts (about 3 s of back-off)."""
TURN_SECONDS: Final = 20.0
"""Timeout of a wait for a turn that should complete without any failed attempt."""
SESSIONS_SECONDS: Final = 30.0
"""Timeout of the other waits of a session client (the ``agent_sessions`` default)."""
MODEL_CALL_CAP: Final = 8
"""Model calls after which a script answers ``CAP_TEXT`` instead of following its script."""
CAP_TEXT: Final = "model call cap reached"
FAILING_TEXT: Final = "please fail"
"""A user text for which every scripted model call raises ``ScriptedModelFailure``."""

Part = tuple[str, ...]
"""One request or response part as a model call sees it: ``(kind, ...)``, see ``part_trace``."""
Script = Callable[[list[ModelMessage], AgentInfo], ModelResponse]


class ScriptedModelFailure(RuntimeError):
    """Raised by a scripted model call for ``FAILING_TEXT``."""


def part_trace(messages: Sequence[ModelMessage]) -> list[Part]:
    """The user prompts, tool calls, tool returns, retry prompts and texts of ``messages``, in order."""
    trace: list[Part] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                trace.append(("user", str(part.content)))
            elif isinstance(part, ToolCallPart):
                trace.append(("call", part.tool_name, part.tool_call_id))
            elif isinstance(part, ToolReturnPart):
                trace.append(("return", part.tool_name, part.tool_call_id, str(part.content)))
            elif isinstance(part, RetryPromptPart):
                trace.append(("retry", str(part.tool_name), part.tool_call_id))
            elif isinstance(part, TextPart):
                trace.append(("text", part.content))
    return trace


def last_request_parts(messages: Sequence[ModelMessage]) -> list[Part]:
    last = messages[-1]
    assert isinstance(last, ModelRequest), f"a model call must end with a request, got {last!r}"
    return part_trace([last])


def last_user_text(messages: Sequence[ModelMessage]) -> str:
    users = [part[1] for part in part_trace(messages) if part[0] == "user"]
    return users[-1] if users else ""


@dataclass
class ModelCalls:
    """What each call of a scripted model received (its messages as a ``part_trace``), thread-safe."""

    received: list[list[Part]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, messages: Sequence[ModelMessage]) -> int:
        """Record one call; returns how many calls were made, this one included."""
        with self._lock:
            self.received.append(part_trace(messages))
            return len(self.received)

    def count(self) -> int:
        with self._lock:
            return len(self.received)

    def snapshot(self) -> list[list[Part]]:
        with self._lock:
            return list(self.received)


def scripted_function(script: Script, calls: ModelCalls) -> Script:
    """``script`` behind the recorder, the cap and the failure text (the last user text ``FAILING_TEXT``)."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        count = calls.record(messages)
        if count > MODEL_CALL_CAP:
            return ModelResponse(parts=[TextPart(CAP_TEXT)])
        if not [part for part in last_request_parts(messages) if part[0] == "return"] \
                and last_user_text(messages) == FAILING_TEXT:
            raise ScriptedModelFailure("scripted model failure")
        return script(messages, info)

    return respond


def streaming_model(script: Script, calls: ModelCalls) -> FunctionModel:
    """A ``FunctionModel`` with a ``stream_function`` (text in two chunks, tool calls whole)."""
    respond = scripted_function(script, calls)

    async def stream(messages: list[ModelMessage],
                     info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls | DeltaThinkingCalls]:
        for delta in streamed_parts(respond(messages, info).parts):
            yield delta

    return FunctionModel(respond, stream_function=stream)


def non_streaming_model(script: Script, calls: ModelCalls) -> FunctionModel:
    """A ``FunctionModel`` without a ``stream_function``: it can only answer whole requests."""
    return FunctionModel(scripted_function(script, calls))


@dataclass
class ToolRuns:
    """Arguments of every real run of a tool, thread-safe."""

    runs: list[int] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, order_id: int) -> None:
        with self._lock:
            self.runs.append(order_id)

    def snapshot(self) -> list[int]:
        with self._lock:
            return list(self.runs)


def lookup_tool(runs: ToolRuns) -> Tool[None]:
    async def lookup_order(order_id: int) -> str:
        """Look up an order."""
        runs.add(order_id)
        return f"order {order_id} shipped"

    return Tool(lookup_order, metadata={DEX_EFFECT_METADATA_KEY: "read"})


def cancel_tool(runs: ToolRuns) -> Tool[None]:
    async def cancel_order(order_id: int) -> str:
        """Cancel an order."""
        runs.add(order_id)
        return f"order {order_id} cancelled"

    return Tool(cancel_order, metadata={DEX_EFFECT_METADATA_KEY: "non_idempotent_write"})


def tool_call(name: str, args: str, call_id: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=call_id)])


def open_session(agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
                 agent: Agent[None, Any], prefix: str, *,
                 timeout: float = SESSIONS_SECONDS) -> tuple[AgentSessionTestClient, str]:
    """A session client of ``agent``'s Flow (type ``<prefix><random>``) on an environment of its own, and a
    new session ID."""
    flow = create_pydantic_ai_session_flow(agent, f"{prefix}{uuid.uuid4().hex[:12]}")
    return agent_sessions(agent_environment([flow]), flow, timeout=timeout), f"s-{uuid.uuid4().hex}"


def of_type(events: Sequence[AgentEvent], event_type: str) -> list[AgentEvent]:
    return [event for event in events if event.type == event_type]


def turn_completed_counts(sessions: AgentSessionTestClient, session_id: str) -> dict[str, object]:
    """``message_count`` of every ``turn_completed`` event, by turn ID."""
    return {str(event.turn_id): event.payload["message_count"]
            for event in of_type(sessions.events(session_id), "turn_completed")}


def roles_and_texts(sessions: AgentSessionTestClient, session_id: str) -> list[tuple[MessageRole, str | None]]:
    return [(m.role, m.text if m.role is not MessageRole.TOOL else m.tool_output)
            for m in sessions.snapshot(session_id).messages]


def fail_first_turn(sessions: AgentSessionTestClient, session_id: str) -> None:
    """Start the session with ``FAILING_TEXT`` and wait until that turn failed (3 attempts of RunModel)."""
    sessions.start_session(session_id, FAILING_TEXT)
    state = sessions.wait_for_turns(session_id, 1, timeout=RETRIES_SECONDS)
    assert (state.completed_turn_count, state.failed_turn_count) == (0, 1), state
    assert "scripted model failure" in (state.last_turn_error or ""), state


def echo_returns(messages: list[ModelMessage]) -> ModelResponse | None:
    """A text echoing the tool returns of the last request, if it holds any."""
    returns = [part for part in last_request_parts(messages) if part[0] == "return"]
    if returns:
        return ModelResponse(parts=[TextPart("answer: " + " | ".join(part[3] for part in returns))])
    return None


def lookup_then_echo(order_id: int, calls: ModelCalls) -> Script:
    """A script that calls ``lookup_order(order_id)`` (call ID ``lookup-<calls so far>``), then echoes its return."""

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answer = echo_returns(messages)
        if answer is not None:
            return answer
        return tool_call("lookup_order", json.dumps({"order_id": order_id}), f"lookup-{calls.count()}")

    return script


# Defect 1: a failed turn poisons the session.


def test_after_a_failed_turn_a_text_reply_is_stored(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    """Defect 1a: after a turn that failed in RunModel the next turn's history holds two adjacent user
    requests; Pydantic AI merges them and the adapter's index arithmetic over ``run.all_messages()``
    dropped the model's text reply (``turn_completed`` with ``message_count`` 0, nothing stored)."""
    calls = ModelCalls()

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(f"you said: {last_user_text(messages)}")])

    agent = Agent(streaming_model(script, calls))
    sessions, session_id = open_session(agent_environment, agent_sessions, agent, "FailedThenText")
    fail_first_turn(sessions, session_id)

    assert sessions.send_user_message(session_id, "hello") is True
    state = sessions.wait_for_turns(session_id, 2, timeout=TURN_SECONDS)
    assert (state.completed_turn_count, state.failed_turn_count) == (1, 1), state
    assert turn_completed_counts(sessions, session_id) == {"turn-2": 1}
    messages = roles_and_texts(sessions, session_id)
    assert messages[0] == (MessageRole.USER, FAILING_TEXT), messages
    assert messages[-2:] == [(MessageRole.USER, "hello"), (MessageRole.ASSISTANT, "you said: hello")], messages


def test_after_a_failed_turn_a_tool_call_runs_once_and_the_model_sees_its_result(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    """Defect 1b: after a turn that failed in RunModel, the merged user requests made the adapter drop
    the model's tool call from the run state, so the resumed model call never saw the tool's result and
    asked for the tool again, without end. The tool must run once and the second call see its result."""
    calls = ModelCalls()
    runs = ToolRuns()

    script = lookup_then_echo(7, calls)
    agent = Agent(streaming_model(script, calls), tools=[lookup_tool(runs)])
    sessions, session_id = open_session(agent_environment, agent_sessions, agent, "FailedThenTool")
    fail_first_turn(sessions, session_id)
    failed_turn_calls = calls.count()

    assert sessions.send_user_message(session_id, "where is order 7?") is True
    state = sessions.wait_for_turns(session_id, 2, timeout=TURN_SECONDS)
    tool_turn_calls = calls.snapshot()[failed_turn_calls:]
    assert runs.snapshot() == [7], f"the tool ran {runs.snapshot()}; the model received {tool_turn_calls}"
    assert len(tool_turn_calls) == 2, tool_turn_calls
    first, second = tool_turn_calls
    call_id = f"lookup-{failed_turn_calls + 1}"
    assert first[-1] == ("user", "where is order 7?") and ("user", FAILING_TEXT) in first, first
    assert second == [*first, ("call", "lookup_order", call_id),
                      ("return", "lookup_order", call_id, "order 7 shipped")]
    assert (state.completed_turn_count, state.failed_turn_count) == (1, 1), state
    assert turn_completed_counts(sessions, session_id) == {"turn-2": 3}  # the tool call, its result and the answer
    messages = roles_and_texts(sessions, session_id)
    assert messages[0] == (MessageRole.USER, FAILING_TEXT), messages
    assert messages[-4:] == [
        (MessageRole.USER, "where is order 7?"), (MessageRole.ASSISTANT, None),
        (MessageRole.TOOL, "order 7 shipped"), (MessageRole.ASSISTANT, "answer: order 7 shipped")], messages


# Defect 2: a second tool round in one turn re-sends the first round's results.


def test_a_second_tool_round_sends_each_tool_result_once(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    """Defect 2: on the resume after a second tool round the adapter fed back every tool call record of
    the turn, so the third model call saw the first round's result twice (once after its call, once
    next to the second result) and 7 messages were stored instead of 6."""
    calls = ModelCalls()
    runs = ToolRuns()

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [part for part in part_trace(messages) if part[0] == "return"]
        if not returns:
            return tool_call("lookup_order", '{"order_id": 1}', "round-1")
        if returns[-1][2] == "round-1":
            return tool_call("lookup_order", '{"order_id": 2}', "round-2")
        return ModelResponse(parts=[TextPart("both orders shipped")])

    agent = Agent(streaming_model(script, calls), tools=[lookup_tool(runs)])
    sessions, session_id = open_session(agent_environment, agent_sessions, agent, "TwoToolRounds")
    sessions.start_session(session_id, "look up orders 1 and 2")
    state = sessions.wait_for_turns(session_id, 1, timeout=TURN_SECONDS)
    assert state.completed_turn_count == 1, state

    received = calls.snapshot()
    assert len(received) == 3, received
    assert received[2] == [
        ("user", "look up orders 1 and 2"),
        ("call", "lookup_order", "round-1"),
        ("return", "lookup_order", "round-1", "order 1 shipped"),
        ("call", "lookup_order", "round-2"),
        ("return", "lookup_order", "round-2", "order 2 shipped"),
    ]
    assert runs.snapshot() == [1, 2]
    assert roles_and_texts(sessions, session_id) == [
        (MessageRole.USER, "look up orders 1 and 2"),
        (MessageRole.ASSISTANT, None), (MessageRole.TOOL, "order 1 shipped"),
        (MessageRole.ASSISTANT, None), (MessageRole.TOOL, "order 2 shipped"),
        (MessageRole.ASSISTANT, "both orders shipped"),
    ]


# Defect 3: an approval-required tool called next to the output tool runs inside RunModel.


class CancelResult(BaseModel):
    status: str


def pending_or_ended(sessions: AgentSessionTestClient, session_id: str, tool_name: str) -> None:
    """Wait until a ``tool_name`` interrupt is pending or the first turn ended, whichever comes first."""

    def probe() -> AgentState | bool | None:
        if any(i.tool_name == tool_name for i in sessions.read_pending_interrupts(session_id)):
            return True
        state = sessions.read_agent_state(session_id)
        if state is not None and state.completed_turn_count + state.failed_turn_count >= 1:
            return state
        return None

    poll_until(probe, timeout=RETRIES_SECONDS, description=f"a pending {tool_name} interrupt or an ended turn")


def test_a_write_called_with_the_output_tool_waits_for_approval(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    """Defect 3: a response that calls a ``non_idempotent_write`` function tool and the output tool
    together was left to Pydantic AI (it holds an output tool call), which ran the write inside RunModel,
    without approval. The write must be deferred and await approval, then run exactly once."""
    calls = ModelCalls()
    runs = ToolRuns()

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        output_tool = info.output_tools[0].name
        if any(part[0] == "return" and part[1] == "cancel_order" for part in part_trace(messages)):
            return tool_call(output_tool, '{"status": "cancelled"}', f"output-{calls.count()}")
        return ModelResponse(parts=[ToolCallPart("cancel_order", '{"order_id": 5}', tool_call_id="cancel-5"),
                                    ToolCallPart(output_tool, '{"status": "cancelling"}', tool_call_id="output-1")])

    agent: Agent[None, CancelResult] = Agent(streaming_model(script, calls), tools=[cancel_tool(runs)],
                                             output_type=ToolOutput(CancelResult))
    sessions, session_id = open_session(agent_environment, agent_sessions, agent, "WriteWithOutput")
    sessions.start_session(session_id, "cancel order 5")
    pending_or_ended(sessions, session_id, "cancel_order")

    assert runs.snapshot() == [], "cancel_order ran inside RunModel, before any approval"
    pending = [i for i in sessions.read_pending_interrupts(session_id) if i.tool_name == "cancel_order"]
    assert len(pending) == 1, f"no pending cancel_order interrupt; state {sessions.read_agent_state(session_id)}"
    assert sessions.resolve_interrupt(session_id, pending[0].interrupt_id, approved=True) is True
    state = sessions.wait_for_turns(session_id, 1, timeout=TURN_SECONDS)
    assert state.completed_turn_count == 1, state
    assert runs.snapshot() == [5]


# Defect 4: models that do not stream fail every turn.


def test_a_model_without_a_stream_function_completes_a_text_turn(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    """Defect 4 (text): ``RunModel`` always streamed the model call, so ``FunctionModel(function)``
    without a ``stream_function`` failed every attempt, though ``agent.run()`` answers with it."""
    calls = ModelCalls()

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(f"you said: {last_user_text(messages)}")])

    agent = Agent(non_streaming_model(script, calls))
    assert agent.run_sync("ping").output == "you said: ping"  # the agent itself works without streaming

    sessions, session_id = open_session(agent_environment, agent_sessions, agent, "NoStreamText")
    sessions.start_session(session_id, "hello")
    state = sessions.wait_for_turns(session_id, 1, timeout=RETRIES_SECONDS)
    assert (state.completed_turn_count, state.failed_turn_count, state.last_turn_error) == (1, 0, None), state
    assert roles_and_texts(sessions, session_id) == [
        (MessageRole.USER, "hello"), (MessageRole.ASSISTANT, "you said: hello")]


def test_a_model_without_a_stream_function_completes_a_tool_turn(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    """Defect 4 (tools): a tool turn with ``FunctionModel(function)`` and no ``stream_function`` failed
    in its first ``RunModel``; it must run the tool once and answer with its result."""
    calls = ModelCalls()
    runs = ToolRuns()

    script = lookup_then_echo(3, calls)
    agent = Agent(non_streaming_model(script, calls), tools=[lookup_tool(runs)])
    assert agent.run_sync("where is order 3?").output == "answer: order 3 shipped"
    assert runs.snapshot() == [3]

    sessions, session_id = open_session(agent_environment, agent_sessions, agent, "NoStreamTool")
    sessions.start_session(session_id, "where is order 3?")
    state = sessions.wait_for_turns(session_id, 1, timeout=RETRIES_SECONDS)
    assert (state.completed_turn_count, state.failed_turn_count, state.last_turn_error) == (1, 0, None), state
    assert runs.snapshot() == [3, 3]  # once by agent.run_sync above, once by the session
    assert roles_and_texts(sessions, session_id) == [
        (MessageRole.USER, "where is order 3?"), (MessageRole.ASSISTANT, None),
        (MessageRole.TOOL, "order 3 shipped"), (MessageRole.ASSISTANT, "answer: order 3 shipped")]


# Defect 5: a lone surrogate must not poison the session.

SURROGATE_TEXT: Final = "bad \ud800 text"


def has_surrogate(text: str | None) -> bool:
    return text is not None and any(0xD800 <= ord(char) <= 0xDFFF for char in text)


def refused(rpc: Callable[[], bool]) -> object:
    """The RPC's result, or the exception it raised (a refusal may be either ``False`` or an error)."""
    try:
        return rpc()
    except Exception as error:  # noqa: BLE001 - any clear refusal is accepted here
        return error


def assert_nothing_has_a_surrogate(sessions: AgentSessionTestClient, session_id: str) -> None:
    snapshot = sessions.snapshot(session_id)
    for message in snapshot.messages:
        for value in (message.text, message.tool_output, message.framework_item):
            assert not has_surrogate(value) and "\\ud800" not in (value or ""), message
    for record in snapshot.tool_calls:
        assert not has_surrogate(record.rejection_message) and "\\ud800" not in (record.rejection_message or "")


def test_a_user_message_with_a_lone_surrogate_is_refused_and_the_session_goes_on(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    """Defect 5 (user message): ``send_user_message`` with a lone surrogate was accepted, and the
    message could then never be encoded, which poisoned the session. The RPC must refuse it (an error
    naming the surrogate, or ``False``), store and queue nothing, and the next message's turn complete."""
    calls = ModelCalls()

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(f"you said: {last_user_text(messages)}")])

    agent = Agent(streaming_model(script, calls))
    sessions, session_id = open_session(agent_environment, agent_sessions, agent, "SurrogateMessage",
                                        timeout=TURN_SECONDS)
    sessions.start_session(session_id)
    sessions.wait_for_state(session_id, lambda state: True, description="the session started")

    result = refused(lambda: sessions.send_user_message(session_id, SURROGATE_TEXT))
    assert result is not True, "send_user_message accepted a lone surrogate"
    if isinstance(result, Exception):
        assert "surrogate" in str(result).lower(), repr(result)
    snapshot = sessions.snapshot(session_id)
    assert snapshot.queued_message_count == 0 and len(snapshot.messages) == 0, snapshot
    assert snapshot.state is not None and snapshot.state.turn_count == 0, snapshot.state

    assert sessions.send_user_message(session_id, "hello") is True
    state = sessions.wait_for_turns(session_id, 1, timeout=TURN_SECONDS)
    assert (state.completed_turn_count, state.failed_turn_count) == (1, 0), state
    assert roles_and_texts(sessions, session_id) == [
        (MessageRole.USER, "hello"), (MessageRole.ASSISTANT, "you said: hello")]
    assert_nothing_has_a_surrogate(sessions, session_id)


def test_a_rejection_message_with_a_lone_surrogate_is_refused_and_the_session_goes_on(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    """Defect 5 (rejection message): ``resolve_interrupt`` with a rejection message holding a lone
    surrogate was accepted and poisoned the session. The RPC must refuse it (an error naming the
    surrogate, or ``False``), leave the interrupt pending, and a normal rejection must then end the turn."""
    calls = ModelCalls()
    runs = ToolRuns()

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answer = echo_returns(messages)
        if answer is not None:
            return answer
        return tool_call("cancel_order", '{"order_id": 9}', "cancel-9")

    agent = Agent(streaming_model(script, calls), tools=[cancel_tool(runs)])
    sessions, session_id = open_session(agent_environment, agent_sessions, agent, "SurrogateRejection",
                                        timeout=TURN_SECONDS)
    sessions.start_session(session_id, "cancel order 9")
    interrupt = sessions.wait_for_pending_interrupt(session_id, "cancel_order")

    result = refused(lambda: sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=False,
                                                        rejection_message=SURROGATE_TEXT))
    assert result is not True, "resolve_interrupt accepted a rejection message with a lone surrogate"
    if isinstance(result, Exception):
        assert "surrogate" in str(result).lower(), repr(result)
    assert [i.interrupt_id for i in sessions.read_pending_interrupts(session_id)] == [interrupt.interrupt_id]

    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=False,
                                      rejection_message="not allowed") is True
    state = sessions.wait_for_turns(session_id, 1, timeout=TURN_SECONDS)
    assert (state.completed_turn_count, state.failed_turn_count) == (1, 0), state
    assert runs.snapshot() == []
    messages = roles_and_texts(sessions, session_id)
    assert messages[-1][0] is MessageRole.ASSISTANT and "not allowed" in (messages[-1][1] or ""), messages
    assert_nothing_has_a_surrogate(sessions, session_id)
