"""Contract tests of the Pydantic AI adapter with a scripted ``FunctionModel`` (no key), on a real engine.

Every wait is on committed values."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from pydantic_ai import Agent, ModelRetry, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, DeltaToolCall, FunctionModel

from dex_agents.adapters.pydantic_ai import DEX_EFFECT_METADATA_KEY, create_pydantic_ai_session_flow
from dex_agents.demo.support_agent import DEMO_TURNS, REFUNDS_LOG
from dex_agents.pure.texts import FAILED_PREFIX, OUTCOME_UNKNOWN_PREFIX
from dex_agents.pure.values import MessageRole
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.testing import FileGate, completed_step_types, read_step_history
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory

Script = Callable[[str, AgentInfo], ModelResponse]


def _respond(script: Script) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """Answer a tool return by echoing every return; otherwise follow ``script`` for the user's text."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returns = [part for part in last.parts if isinstance(part, ToolReturnPart)]
        if returns:
            return ModelResponse(parts=[TextPart(" | ".join(str(part.content) for part in returns))])
        prompts = [part.content for part in last.parts if isinstance(part, UserPromptPart)]
        return script(str(prompts[-1]) if prompts else "", info)

    return respond


def scripted_model(script: Script) -> FunctionModel:
    respond = _respond(script)

    def function(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return respond(messages, info)

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[object]:
        for index, part in enumerate(respond(messages, info).parts):
            if isinstance(part, TextPart):
                middle = len(part.content) // 2
                yield part.content[:middle]
                yield part.content[middle:]
            elif isinstance(part, ThinkingPart):
                yield {index: DeltaThinkingPart(content=part.content)}
            elif isinstance(part, ToolCallPart):
                yield {index: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(),
                                            tool_call_id=part.tool_call_id)}

    return FunctionModel(function, stream_function=stream)  # type: ignore[arg-type]


async def lookup_order(order_id: int) -> str:
    """Look up an order."""
    if order_id < 0:
        raise ModelRetry("order numbers are positive")
    return f"order {order_id} shipped"


async def cancel_order(order_id: int) -> str:
    """Cancel an order."""
    return f"order {order_id} cancelled"


TOOLS = [Tool(lookup_order, metadata={DEX_EFFECT_METADATA_KEY: "read"}),
         Tool(cancel_order, metadata={DEX_EFFECT_METADATA_KEY: "non_idempotent_write"})]


def flow_of(agent: Agent[None, object]) -> AgentSessionFlow:
    return create_pydantic_ai_session_flow(agent, f"PydanticAI{uuid.uuid4().hex[:8]}")


def call(name: str, args: str, call_id: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=call_id)])


def run_one_turn(agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
                 script: Script, *, output_type: object = str) -> tuple[list[str], list[object], list[str]]:
    agent: Agent[None, object] = Agent(scripted_model(script), tools=TOOLS, output_type=output_type)  # type: ignore[call-overload]
    flow = flow_of(agent)
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = f"s-{uuid.uuid4().hex}"
    sessions.start_session(session_id, "go")
    sessions.wait_for_completed_turns(session_id, 1)
    steps = completed_step_types(read_step_history(environment.server_address, session_id))
    messages: list[object] = list(sessions.snapshot(session_id).messages)
    events = [event.type for event in sessions.events(session_id)]
    return steps, messages, events


def test_bad_arguments_and_model_retry_become_errors_the_model_sees(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    _, messages, _ = run_one_turn(agent_environment, agent_sessions, lambda text, info: ModelResponse(parts=[
        ToolCallPart("lookup_order", '{"order_id": "abc"}', tool_call_id="bad"),
        ToolCallPart("lookup_order", '{"order_id": -1}', tool_call_id="retry")]))
    bad, retry = messages[-1].text.split(" | ")  # type: ignore[attr-defined]
    assert bad.startswith(FAILED_PREFIX) and "Invalid arguments" in bad
    assert retry == FAILED_PREFIX + "order numbers are positive"


def test_a_crash_during_a_refund_records_outcome_unknown_and_the_model_is_told(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path) -> None:
    from dex_agents.demo.support_agent import build_support_flow

    flow_type = f"CrashDemo{uuid.uuid4().hex[:8]}"
    flow = build_support_flow(state_directory=tmp_path, flow_type=flow_type)
    sessions = agent_sessions(agent_environment([flow], is_worker_in_process=False), flow)
    environment = {"TEST_STATE_DIR": str(tmp_path), "TEST_FLOW_TYPE": flow_type}
    worker = killable_worker("tests.adapters.crash_worker",
                             environment={**environment, "DEX_AGENTS_DEMO_CRASH_GATE": "1"})
    session_id = f"s-{uuid.uuid4().hex}"
    sessions.start_session(session_id, DEMO_TURNS[1])
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund_order")
    sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True)
    gate = FileGate(tmp_path, "refund")
    gate.wait_until_reached()
    worker.kill()
    gate.release()
    killable_worker("tests.adapters.crash_worker", environment={**environment, "DEX_AGENTS_DEMO_CRASH_GATE": "0"})
    sessions.wait_for_completed_turns(session_id, 1)
    snapshot = sessions.snapshot(session_id)
    tool_message = [m for m in snapshot.messages if m.role == MessageRole.TOOL][0]
    assert (tool_message.tool_output or "").startswith(OUTCOME_UNKNOWN_PREFIX)
    assert "cannot tell whether the refund" in (snapshot.messages[-1].text or "")
    assert (tmp_path / REFUNDS_LOG).read_text().splitlines() == ["order=42 amount=19.99"]  # ran exactly once
    assert [c.status for c in sessions.snapshot(session_id).tool_calls] == []
