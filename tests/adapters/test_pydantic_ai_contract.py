"""Contract tests of the Pydantic AI adapter with a scripted ``FunctionModel`` (no key), on a real engine.

Every wait is on committed values."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

from pydantic_ai import Agent, ModelRetry, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from dex_agents.adapters.pydantic_ai import DEX_EFFECT_METADATA_KEY, create_pydantic_ai_session_flow
from dex_agents.pure.machine.texts import FAILED_PREFIX
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.testing import completed_step_types, read_step_history
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.adapters.pydantic_ai_support import streamed_parts

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
        for delta in streamed_parts(respond(messages, info).parts):
            yield delta

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
