"""Unit checks of the Pydantic AI adapter and the demo agent that need no engine."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.exceptions import ModelHTTPError, UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from dex_agents.adapters.pydantic_ai import DEX_EFFECT_METADATA_KEY, PydanticAIRunner, create_pydantic_ai_session_flow
from dex_agents.adapters.pydantic_ai.runner import is_non_retryable
from dex_agents.demo.support_agent import MissingModelKeyError, build_support_flow
from dex_agents.pure.runner_values import DeferredToolCall, ResolvedToolPolicy, ToolCallsRequested
from dex_agents.pure.values import AgentMessage, AgentToolCall, MessageRole, ToolCallStatus, ToolEffect
from dex_agents.shell.runner import (
    AgentTurnContext,
    DeferredToolExecution,
    NonRetryableModelError,
    ToolExecutionError,
)


def test_build_user_message_is_deterministic_and_valid_pydantic_ai_json() -> None:
    runner: PydanticAIRunner[None] = PydanticAIRunner(Agent(TestModel()))
    first, second = runner.build_user_message("hi"), runner.build_user_message("hi")
    assert first == second and first.role == MessageRole.USER and first.text == "hi"
    (message,) = ModelMessagesTypeAdapter.validate_json(first.framework_item)
    assert isinstance(message, ModelRequest)
    assert isinstance(message.parts[0], UserPromptPart) and message.parts[0].content == "hi"


def test_a_real_model_without_its_key_names_the_missing_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingModelKeyError, match="OPENAI_API_KEY"):
        build_support_flow(model="openai:gpt-4o", state_directory=tmp_path)
    with pytest.raises(ValueError, match="provider:name"):
        build_support_flow(model="gpt-4o", state_directory=tmp_path)


class _Events:
    """An ``AgentEventWriter`` that keeps what it is given."""

    turn_id = "turn-1"
    attempt = 1

    def __init__(self) -> None:
        self.deltas: list[tuple[str, str]] = []

    def write_text_delta(self, text: str) -> None:
        self.deltas.append(("text", text))

    def write_reasoning_delta(self, text: str) -> None:
        self.deltas.append(("reasoning", text))

    def write_tool_call_started(self, tool_call_id: str, tool_name: str) -> None:
        pass

    def write_tool_call_finished(self, tool_call_id: str, tool_name: str, status: ToolCallStatus) -> None:
        pass

    def write_event(self, event_type: str, payload: Mapping[str, object]) -> None:
        pass


async def _no_heartbeat() -> None:
    pass


def _turn(runner: PydanticAIRunner[Any], run_state: str | None = None,
          records: tuple[AgentToolCall, ...] = ()) -> AgentTurnContext:
    user = runner.build_user_message("go")
    stored = AgentMessage(sequence=1, turn_id="turn-1", role=user.role, text=user.text, tool_call_id=None,
                          tool_name=None, tool_arguments=None, tool_output=None, framework_item=user.framework_item)
    return AgentTurnContext(
        flow_id="s", turn_id="turn-1", attempt=1, messages=(stored,), framework_run_state=run_state,
        tool_calls=records, events=_Events(), deadline=datetime.now(UTC),
        resolve_tool_policy=lambda name, effect: ResolvedToolPolicy(effect=effect or ToolEffect.UNCLASSIFIED,
                                                                   requires_approval=False),
        is_cancellation_requested=lambda: False, heartbeat=_no_heartbeat)


def _record(call: DeferredToolCall) -> AgentToolCall:
    return AgentToolCall(tool_call_id=call.tool_call_id, turn_id="turn-1", tool_name=call.tool_name,
                         arguments=call.arguments, effect=call.policy.effect, requires_approval=False,
                         deferral_order=0, idempotency_key=f"s/turn-1/{call.tool_call_id}",
                         status=ToolCallStatus.PENDING, interrupt_id=None, output=None, error=None,
                         rejection_message=None)


def _execution(record: AgentToolCall, run_state: str | None) -> DeferredToolExecution:
    return DeferredToolExecution(flow_id="s", tool_call=record, idempotency_key=record.idempotency_key, attempt=1,
                                 events=_Events(), deadline=datetime.now(UTC), is_cancellation_requested=lambda: False,
                                 heartbeat=_no_heartbeat, framework_run_state=run_state)


def test_an_agent_without_a_model_is_refused_at_creation() -> None:
    with pytest.raises(ValueError, match="the agent has no model"):
        create_pydantic_ai_session_flow(Agent(None), "NoModel")


def test_a_tool_whose_dex_effect_is_not_an_effect_is_refused_at_creation() -> None:
    async def refund(order_id: int) -> str:
        return "refunded"

    agent = Agent(TestModel(), tools=[Tool(refund, metadata={DEX_EFFECT_METADATA_KEY: "read_only"})])
    with pytest.raises(ValueError, match="tool 'refund' has dex_effect='read_only'"):
        create_pydantic_ai_session_flow(agent, "BadEffect")


@pytest.mark.parametrize(("error", "expected"), [
    (ModelHTTPError(400, "m", body="bad request"), True),
    (ModelHTTPError(401, "m", body="bad key"), True),
    (ModelHTTPError(404, "m", body="no such model"), True),
    (ModelHTTPError(429, "m", body="slow down"), False),
    (ModelHTTPError(408, "m", body="timeout"), False),
    (ModelHTTPError(500, "m", body="server"), False),
    (UserError("no key"), True),
    (RuntimeError("flaky"), False),
])
def test_model_errors_a_retry_cannot_fix_are_non_retryable(error: Exception, expected: bool) -> None:
    assert is_non_retryable(error) is expected


def test_a_model_that_cannot_be_built_fails_the_turn_at_once_naming_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    runner: PydanticAIRunner[None] = PydanticAIRunner(Agent("openai:gpt-4o", defer_model_check=True))
    with pytest.raises(NonRetryableModelError, match="OPENAI_API_KEY"):
        asyncio.run(runner.run_model_step(_turn(runner)))


def test_a_run_state_of_the_previous_format_fails_the_turn_at_once() -> None:
    runner: PydanticAIRunner[None] = PydanticAIRunner(Agent(TestModel()))
    with pytest.raises(NonRetryableModelError, match="not a dex-agents run-state envelope"):
        asyncio.run(runner.run_model_step(_turn(runner, run_state='{"v":1,"turn":"[]"}')))
    newer = '{"adapter":"pydantic_ai","round":["c"],"state":{},"version":99}'
    with pytest.raises(NonRetryableModelError, match="format version 99"):
        asyncio.run(runner.run_model_step(_turn(runner, run_state=newer)))


def test_a_deferred_tool_gets_the_run_context_its_run_would_have_given_it() -> None:
    seen: dict[str, object] = {}

    async def lookup(ctx: RunContext[int], order_id: int) -> str:
        seen.update(deps=ctx.deps, tool_call_id=ctx.tool_call_id, tool_name=ctx.tool_name, run_step=ctx.run_step,
                    requests=ctx.usage.requests)
        with pytest.raises(UserError, match="not available"):
            _ = ctx.model
        return f"order {order_id} shipped"

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("lookup", '{"order_id": 7}', tool_call_id="c-1")])

    agent = Agent(FunctionModel(model), tools=[Tool(lookup, metadata={DEX_EFFECT_METADATA_KEY: "read"})],
                  deps_type=int)
    runner = PydanticAIRunner(agent, deps=41)
    outcome = asyncio.run(runner.run_model_step(_turn(runner)))
    assert isinstance(outcome, ToolCallsRequested)
    (call,) = outcome.tool_calls
    result = asyncio.run(runner.execute_deferred_tool_call(_execution(_record(call), outcome.framework_run_state)))
    assert result.output == "order 7 shipped"
    assert seen == {"deps": 41, "tool_call_id": "c-1", "tool_name": "lookup", "run_step": 1, "requests": 1}


def test_a_tool_call_without_a_readable_run_state_fails_without_running() -> None:
    runs: list[int] = []

    async def lookup(order_id: int) -> str:
        runs.append(order_id)
        return "shipped"

    runner: PydanticAIRunner[None] = PydanticAIRunner(Agent(TestModel(), tools=[Tool(lookup)]))
    record = _record(DeferredToolCall(tool_call_id="c", tool_name="lookup", arguments='{"order_id": 1}',
                                      policy=ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False)))
    with pytest.raises(ToolExecutionError, match="format version 1"):
        asyncio.run(runner.execute_deferred_tool_call(_execution(
            record, '{"adapter":"pydantic_ai","round":["c"],"state":{},"version":1}')))
    assert runs == []
