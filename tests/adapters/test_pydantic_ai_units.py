"""Unit checks of the Pydantic AI adapter that need no engine."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.exceptions import ModelContextWindowExceededError, ModelHTTPError, UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RequestUsage

from dex_agents.adapters.pydantic_ai import (
    DEX_EFFECT_METADATA_KEY,
    PydanticAIRunner,
    create_pydantic_ai_session_flow,
    is_non_retryable,
)
from dex_agents.adapters.pydantic_ai.binding import is_context_window_exceeded
from dex_agents.pure.values.runner import DeferredToolCall, ResolvedToolPolicy, ToolCallsRequested
from dex_agents.pure.values.session import AgentUsage, MessageRole, ToolEffect
from dex_agents.shell.runner import (
    ContextWindowExceededError,
    HistorySummaryResult,
    NonRetryableModelError,
    ToolExecutionError,
)
from tests.adapters import fakes


def test_build_user_message_is_deterministic_and_valid_pydantic_ai_json() -> None:
    runner = PydanticAIRunner(Agent(TestModel()))
    first, second = runner.build_user_message("hi"), runner.build_user_message("hi")
    assert first == second and first.role == MessageRole.USER and first.text == "hi"
    (message,) = ModelMessagesTypeAdapter.validate_json(first.framework_item)
    assert isinstance(message, ModelRequest)
    assert isinstance(message.parts[0], UserPromptPart) and message.parts[0].content == "hi"


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
    runner = PydanticAIRunner(Agent("openai:gpt-4o", defer_model_check=True))
    with pytest.raises(NonRetryableModelError, match="OPENAI_API_KEY"):
        asyncio.run(runner.run_model_step(fakes.turn(runner)))


def test_a_run_state_of_the_previous_format_fails_the_turn_at_once() -> None:
    runner = PydanticAIRunner(Agent(TestModel()))
    with pytest.raises(NonRetryableModelError, match="not a dex-agents run-state envelope"):
        asyncio.run(runner.run_model_step(fakes.turn(runner, run_state='{"v":1,"turn":"[]"}')))
    newer = '{"adapter":"pydantic_ai","round":["c"],"state":{},"version":99}'
    with pytest.raises(NonRetryableModelError, match="format version 99"):
        asyncio.run(runner.run_model_step(fakes.turn(runner, run_state=newer)))


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
    outcome = asyncio.run(runner.run_model_step(fakes.turn(runner)))
    assert isinstance(outcome, ToolCallsRequested)
    (call,) = outcome.tool_calls
    execution = fakes.execution(fakes.record(call), outcome.framework_run_state)
    result = asyncio.run(runner.execute_deferred_tool_call(execution))
    assert result.output == "order 7 shipped"
    assert seen == {"deps": 41, "tool_call_id": "c-1", "tool_name": "lookup", "run_step": 1, "requests": 1}


def test_a_tool_call_without_a_readable_run_state_fails_without_running() -> None:
    runs: list[int] = []

    async def lookup(order_id: int) -> str:
        runs.append(order_id)
        return "shipped"

    runner = PydanticAIRunner(Agent(TestModel(), tools=[Tool(lookup)]))
    record = fakes.record(DeferredToolCall(tool_call_id="c", tool_name="lookup", arguments='{"order_id": 1}',
                                      policy=ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False)))
    with pytest.raises(ToolExecutionError, match="format version 1"):
        asyncio.run(runner.execute_deferred_tool_call(fakes.execution(
            record, '{"adapter":"pydantic_ai","round":["c"],"state":{},"version":1}')))
    assert runs == []


@pytest.mark.parametrize(("error", "expected"), [
    (ModelHTTPError.for_category(ModelContextWindowExceededError, status_code=400, model_name="m"), True),
    (ModelContextWindowExceededError("m", "too long"), True),
    (ModelHTTPError(400, "m", body={"error": {"code": "context_length_exceeded"}}), True),
    (ModelHTTPError(400, "m", body={"code": "context_length_exceeded"}), True),
    (fakes.raised_from(fakes.openai_bad_request({"code": "context_length_exceeded"})), True),
    (ModelHTTPError(400, "m", body={"message": "prompt is too long: 210000 tokens > 200000 maximum"}), True),
    (ModelHTTPError(400, "m", body={"error": {"code": "invalid_value"}}), False),
    (fakes.openai_bad_request({"code": "invalid_value"}), False),
    (RuntimeError("flaky"), False),
], ids=["category", "pydantic_ai", "openai_body", "openai_code", "chained", "anthropic_text", "other_400",
        "other_openai_400", "other"])
def test_context_window_errors_are_recognised(error: BaseException, expected: bool) -> None:
    assert is_context_window_exceeded(error) is expected


def test_a_context_window_error_fails_the_model_step_as_context_window_exceeded() -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ModelHTTPError(400, "m", body={"error": {"code": "context_length_exceeded"}})

    runner = PydanticAIRunner(Agent(FunctionModel(model)))
    with pytest.raises(ContextWindowExceededError, match="context_length_exceeded"):
        asyncio.run(runner.run_model_step(fakes.turn(runner)))


def test_a_summary_is_one_plain_call_of_the_agents_model_without_tools() -> None:
    seen: list[tuple[list[ModelMessage], AgentInfo]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((messages, info))
        return ModelResponse(parts=[TextPart("The user asked about order 7.")],
                             usage=RequestUsage(input_tokens=30, output_tokens=8))

    async def lookup(order_id: int) -> str:
        return "shipped"

    runner = PydanticAIRunner(Agent(FunctionModel(model), tools=[Tool(lookup)], instructions="Be brief."))
    result = asyncio.run(runner.summarize_history(fakes.summary_request(runner)))
    assert result == HistorySummaryResult(text="The user asked about order 7.",
                                          usage=AgentUsage(requests=1, input_tokens=30, output_tokens=8))
    ((messages, info),) = seen
    assert info.function_tools == [] and info.output_tools == [] and info.instructions == "Summarize."
    (request,) = messages  # the agent's own instructions are not sent: the summary's are
    assert isinstance(request, ModelRequest) and not any(isinstance(p, SystemPromptPart) for p in request.parts)
    (prompt,) = request.parts
    assert isinstance(prompt, UserPromptPart) and "my order is 7" in str(prompt.content)


def test_a_blank_summary_or_a_context_window_error_fails_the_summary() -> None:
    replies: list[ModelResponse | Exception] = [
        ModelResponse(parts=[TextPart("  ")]),
        ModelHTTPError.for_category(ModelContextWindowExceededError, status_code=400, model_name="m")]

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        reply = replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    runner = PydanticAIRunner(Agent(FunctionModel(model)))
    with pytest.raises(RuntimeError, match="summary of the history is empty"):
        asyncio.run(runner.summarize_history(fakes.summary_request(runner)))
    with pytest.raises(ContextWindowExceededError):
        asyncio.run(runner.summarize_history(fakes.summary_request(runner)))


def test_a_summary_resolves_a_model_named_by_a_string_as_pydantic_ai_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    runner = PydanticAIRunner(Agent("openai:gpt-4o", defer_model_check=True))
    with pytest.raises(NonRetryableModelError, match="OPENAI_API_KEY"):
        asyncio.run(runner.summarize_history(fakes.summary_request(runner)))


def test_a_tool_that_requires_approval_is_deferred_with_an_approval_and_then_runs() -> None:
    async def cancel(order_id: int) -> str:
        return f"order {order_id} cancelled"

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("cancel", '{"order_id": 3}', tool_call_id="c-1")])

    runner = PydanticAIRunner(Agent(FunctionModel(model), tools=[Tool(cancel, requires_approval=True)]))
    outcome = asyncio.run(runner.run_model_step(fakes.turn(runner)))
    assert isinstance(outcome, ToolCallsRequested)
    (call,) = outcome.tool_calls
    assert call.policy == ResolvedToolPolicy(effect=ToolEffect.UNCLASSIFIED, requires_approval=True)
    result = asyncio.run(runner.execute_deferred_tool_call(fakes.execution(fakes.record(call),
                                                                           outcome.framework_run_state)))
    assert result.output == "order 3 cancelled"
