"""Unit checks of the OpenAI Agents SDK adapter that need no engine: one model step and one tool call
at a time, with the SDK's own ``agents.testing.ScriptedModel`` or small ``Model``s."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx2
import pytest
from agents import (
    Agent,
    AgentHooks,
    GuardrailFunctionOutput,
    HostedMCPTool,
    ModelSettings,
    RunContextWrapper,
    ShellTool,
    ToolGuardrailFunctionOutput,
    function_tool,
    input_guardrail,
    output_guardrail,
    set_tracing_disabled,
    tool_input_guardrail,
    tool_output_guardrail,
)
from agents.agent_output import AgentOutputSchemaBase
from agents.exceptions import ModelBehaviorError, UserError
from agents.handoffs import Handoff
from agents.mcp import MCPServer
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model, ModelTracing
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.tool import FunctionTool, Tool
from agents.tool_context import ToolContext
from agents.usage import Usage
from mcp.types import CallToolResult, GetPromptResult, ListPromptsResult, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool
from openai import APIConnectionError, BadRequestError, InternalServerError, OpenAIError, RateLimitError
from openai.types.responses import ResponseOutputMessage, ResponseOutputRefusal
from openai.types.responses.response_prompt_param import ResponsePromptParam
from pydantic import BaseModel

from dex_agents.adapters.kit.turn import TurnRunner
from dex_agents.adapters.openai_agents import (
    OpenAIAgentsRunner,
    create_openai_agents_session_flow,
    is_context_window_exceeded,
    is_non_retryable,
    tool_effect,
    with_tool_effect,
)
from dex_agents.adapters.openai_agents.runner import Items, load_items
from dex_agents.pure.values.runner import (
    AgentTurnOutcome,
    DeferredToolCall,
    ResolvedToolPolicy,
    ToolCallsRequested,
    TurnCompleted,
)
from dex_agents.pure.values.session import AgentToolCall, AgentUsage, MessageRole, ToolCallStatus, ToolEffect
from dex_agents.shell.runner import (
    AgentTurnContext,
    ContextWindowExceededError,
    HistorySummaryRequest,
    NonRetryableModelError,
    ToolExecutionError,
)
from tests.adapters import fakes

set_tracing_disabled(True)

Runner = TurnRunner[Items]


def _policy(name: str, effect: ToolEffect | None) -> ResolvedToolPolicy:
    resolved = effect or ToolEffect.UNCLASSIFIED
    return ResolvedToolPolicy(effect=resolved, requires_approval=resolved in (ToolEffect.NON_IDEMPOTENT_WRITE,
                                                                              ToolEffect.UNCLASSIFIED))


def _turn(runner: Runner, run_state: str | None = None,
          records: tuple[AgentToolCall, ...] = (), events: fakes.Events | None = None) -> AgentTurnContext:
    """``fakes.turn`` with this module's policy (a write or an unclassified tool needs approval)."""
    return fakes.turn(runner, run_state, records, events, resolve_tool_policy=_policy)


def _step(runner: Runner, turn: AgentTurnContext) -> AgentTurnOutcome:
    return asyncio.run(runner.run_model_step(turn))


def _one_call(runner: Runner,
              events: fakes.Events | None = None) -> tuple[ToolCallsRequested, DeferredToolCall]:
    outcome = _step(runner, _turn(runner, events=events))
    assert isinstance(outcome, ToolCallsRequested)
    (call,) = outcome.tool_calls
    return outcome, call


def _run_tool(runner: Runner, outcome: ToolCallsRequested, call: DeferredToolCall) -> str:
    execution = fakes.execution(fakes.record(call), outcome.framework_run_state)
    return asyncio.run(runner.execute_deferred_tool_call(execution)).output


def _calling(name: str, arguments: object, *then: object) -> ScriptedModel:
    return ScriptedModel([[function_call(name, json.dumps(arguments), call_id="c-1")], *then])  # type: ignore[list-item]


# build_user_message and Flow creation


def test_build_user_message_is_deterministic_and_a_responses_input_message() -> None:
    runner = OpenAIAgentsRunner(Agent(name="a"))
    first, second = runner.build_user_message("hi \x00 \U0001F4E6"), runner.build_user_message("hi \x00 \U0001F4E6")
    assert first == second and first.role == MessageRole.USER and first.text == "hi \x00 \U0001F4E6"
    assert load_items(first.framework_item) == [{"type": "message", "role": "user", "content": "hi \x00 \U0001F4E6"}]


def test_with_tool_effect_sets_the_effect_and_refuses_a_value_that_is_not_one() -> None:
    async def refund(order_id: int) -> str:
        return "refunded"

    tool = with_tool_effect(function_tool(refund), ToolEffect.NON_IDEMPOTENT_WRITE)
    assert tool_effect(tool) == ToolEffect.NON_IDEMPOTENT_WRITE
    assert tool_effect(Agent(name="a", tools=[tool]).clone().tools[0]) == ToolEffect.NON_IDEMPOTENT_WRITE  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool 'refund' has dex_effect='read_only'"):
        with_tool_effect(function_tool(refund), "read_only")
    tool.dex_effect = "read_only"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="tool 'refund' has dex_effect='read_only'"):
        create_openai_agents_session_flow(Agent(name="a", tools=[tool]), "BadEffect")


def test_an_mcp_tool_takes_its_effect_from_its_annotations() -> None:
    def tool(annotations: ToolAnnotations | None) -> FunctionTool:
        async def invoke(context: ToolContext[Any], arguments: str) -> str:
            return "ok"
        return FunctionTool(name="mcp", description="", params_json_schema={"type": "object", "properties": {}},
                            on_invoke_tool=invoke, _mcp_annotations=annotations)

    assert tool_effect(tool(ToolAnnotations(read_only_hint=True))) == ToolEffect.READ
    assert tool_effect(tool(ToolAnnotations(read_only_hint=False, idempotent_hint=True))) == ToolEffect.IDEMPOTENT_WRITE
    assert tool_effect(tool(ToolAnnotations(destructive_hint=True))) == ToolEffect.NON_IDEMPOTENT_WRITE
    assert tool_effect(tool(None)) is None


def _lookup() -> FunctionTool:
    async def lookup_order(order_id: int) -> str:
        """Look up an order."""
        return f"order {order_id}"
    return function_tool(lookup_order)


@pytest.mark.parametrize(("agent", "refusal"), [
    (Agent(name="a", handoffs=[Agent(name="b")]), "has handoffs"),
    (Agent(name="a", tools=[ShellTool(executor=lambda request: "ok")]), "ShellTool 'shell' runs on the Worker outside a function call"),
    (Agent(name="a", tools=[HostedMCPTool(tool_config={"type": "mcp", "server_label": "docs",
                                                       "server_url": "https://mcp.invalid"})]), "asks for approvals"),
    (Agent(name="a", tool_use_behavior="stop_on_first_tool"), "tool_use_behavior='stop_on_first_tool'"),
    (Agent(name="a", tools=[_lookup(), _lookup()]), "two function tools named 'lookup_order'"),
], ids=["handoffs", "local_tool", "hosted_mcp_with_approvals", "tool_use_behavior", "duplicate_names"])
def test_what_cannot_run_durably_is_refused_at_creation(agent: Agent[Any], refusal: str) -> None:
    with pytest.raises(ValueError, match=refusal):
        create_openai_agents_session_flow(agent, "Refused")


def test_hosted_tools_without_approvals_and_agents_as_tools_are_accepted() -> None:
    hosted = HostedMCPTool(tool_config={"type": "mcp", "server_label": "docs", "server_url": "https://mcp.invalid",
                                        "require_approval": "never"})
    agent = Agent(name="a", tools=[hosted, Agent(name="helper").as_tool("helper", "Helps.")])
    create_openai_agents_session_flow(agent, "Accepted")


# Errors a retry cannot fix


def _status_error(kind: type[Exception], status: int, code: str | None = None) -> Exception:
    request = httpx2.Request("POST", "https://api.invalid/v1/responses")
    body = {"message": "m", "code": code} if code else None
    return kind("m", response=httpx2.Response(status, request=request), body=body)  # type: ignore[call-arg]


def _chained() -> Exception:
    try:
        try:
            raise _status_error(BadRequestError, 400)
        except BadRequestError as error:
            raise RuntimeError("wrapped") from error
    except RuntimeError as wrapped:
        return wrapped


@pytest.mark.parametrize(("error", "expected"), [
    (_status_error(BadRequestError, 400), True),
    (_status_error(BadRequestError, 401), True),
    (_status_error(BadRequestError, 404), True),
    (_status_error(BadRequestError, 408), False),
    (_status_error(BadRequestError, 409), False),
    (_status_error(RateLimitError, 429), False),
    (_status_error(RateLimitError, 429, code="insufficient_quota"), True),
    (_status_error(InternalServerError, 500), False),
    (APIConnectionError(request=httpx2.Request("POST", "https://api.invalid")), False),
    (OpenAIError("Missing credentials"), True),
    (UserError("bad configuration"), True),
    (ModelBehaviorError("invalid JSON"), False),
    (RuntimeError("flaky"), False),
    (_chained(), True),
], ids=["400", "401", "404", "408", "409", "429", "429_quota", "500", "connection", "credentials", "user_error",
        "model_behavior", "other", "chained_400"])
def test_model_errors_a_retry_cannot_fix_are_non_retryable(error: Exception, expected: bool) -> None:
    assert is_non_retryable(error) is expected


def _context_window_error() -> Exception:
    return _status_error(BadRequestError, 400, code="context_length_exceeded")


def _raised_while_handling() -> Exception:
    try:
        try:
            raise _context_window_error()
        except BadRequestError:
            raise RuntimeError("the SDK failed")  # noqa: B904 - an implicit chain, as a framework may leave
    except RuntimeError as wrapped:
        return wrapped


def _nested_code_error() -> Exception:
    request = httpx2.Request("POST", "https://api.invalid/v1/responses")
    body = {"error": {"message": "too long", "code": "context_length_exceeded"}}
    return BadRequestError("m", response=httpx2.Response(400, request=request), body=body)


@pytest.mark.parametrize(("error", "expected"), [
    (_context_window_error(), True),
    (_nested_code_error(), True),
    (_raised_while_handling(), True),
    (RuntimeError("prompt is too long: 210000 tokens > 200000 maximum"), True),
    (_status_error(BadRequestError, 400), False),
    (_status_error(BadRequestError, 400, code="invalid_request"), False),
    (RuntimeError("flaky"), False),
], ids=["code", "nested_code", "implicit_chain", "prompt_is_too_long", "plain_400", "other_code", "other"])
def test_the_context_window_error_is_recognised_anywhere_in_the_chain(error: Exception, expected: bool) -> None:
    assert is_context_window_exceeded(error) is expected


@dataclass
class FailingModel(Model):
    """A model whose every call raises ``error``."""

    error: Exception

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        raise self.error

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError


def test_a_context_window_error_fails_the_attempt_as_context_window_exceeded() -> None:
    runner = OpenAIAgentsRunner(Agent(name="a", model=FailingModel(_context_window_error())))
    with pytest.raises(ContextWindowExceededError, match="BadRequestError"):
        _step(runner, _turn(runner))


def _summary_request(events: fakes.Events) -> HistorySummaryRequest:
    user = _turn(OpenAIAgentsRunner(Agent(name="a"))).messages[0]
    return HistorySummaryRequest(flow_id="s", turn_id="turn-1", attempt=1, previous_summary=None, messages=(user,),
                                 instructions="Summarize the conversation.", events=events,
                                 deadline=datetime.now(UTC), is_cancellation_requested=lambda: False,
                                 heartbeat=fakes.no_heartbeat)


def test_summarize_is_one_plain_call_with_the_instructions_and_the_transcript_and_no_tools() -> None:
    usage = Usage(requests=1, input_tokens=30, output_tokens=4, total_tokens=34)
    model = ScriptedModel([ModelStep(output=[assistant_message("The user said go.")], usage=usage)])
    agent = Agent(name="a", instructions="Be brief.", model=model, tools=[_lookup()], output_type=BaseModel,
                  model_settings=ModelSettings(tool_choice="required"))
    events = fakes.Events()
    result = asyncio.run(OpenAIAgentsRunner(agent).summarize_history(_summary_request(events)))
    assert (result.text, result.usage) == ("The user said go.", AgentUsage(requests=1, input_tokens=30, output_tokens=4))
    (call,) = model.calls
    assert not call.streamed and call.system_instructions == "Summarize the conversation."
    assert call.tools == [] and call.output_schema is None and call.handoffs == []
    assert call.model_settings.tool_choice is None
    (item,) = call.input
    assert isinstance(item, dict) and item["role"] == "user" and "go" in item["content"]
    assert events.deltas == []


def test_a_blank_summary_fails_the_attempt() -> None:
    agent = Agent(name="a", model=ScriptedModel([[assistant_message("  ")]]))
    with pytest.raises(ModelBehaviorError, match="no text"):
        asyncio.run(OpenAIAgentsRunner(agent).summarize_history(_summary_request(fakes.Events())))


def test_the_history_is_parsed_once_across_model_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    from dex_agents.adapters.openai_agents import runner as runner_module

    parsed: list[object] = []

    def counting(data: object) -> Items:
        parsed.append(data)
        return load_items(data)

    monkeypatch.setattr(runner_module, "load_items", counting)
    runner = OpenAIAgentsRunner(Agent(name="a", model=ScriptedModel([[assistant_message("one")],
                                                                     [assistant_message("two")]])))
    turn = _turn(runner)
    for _ in range(2):
        assert isinstance(_step(runner, turn), TurnCompleted)
    assert len(parsed) == 1


def test_a_model_without_its_key_fails_the_turn_at_once_naming_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    runner = OpenAIAgentsRunner(Agent(name="a", model="gpt-4o"))
    with pytest.raises(NonRetryableModelError, match="OPENAI_API_KEY"):
        _step(runner, _turn(runner))


def test_a_run_state_of_another_version_fails_the_turn_at_once() -> None:
    runner = OpenAIAgentsRunner(Agent(name="a", model=ScriptedModel()))
    with pytest.raises(NonRetryableModelError, match="format version 99"):
        _step(runner, _turn(runner, '{"adapter":"openai_agents","round":["c"],"state":{},"version":99}'))
    with pytest.raises(NonRetryableModelError, match="written by adapter 'pydantic_ai'"):
        _step(runner, _turn(runner, '{"adapter":"pydantic_ai","round":["c"],"state":{},"version":1}'))


def test_a_refusal_fails_the_turn_at_once() -> None:
    refusal = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed",
                                    content=[ResponseOutputRefusal(type="refusal", refusal="I cannot help with that")])
    runner = OpenAIAgentsRunner(Agent(name="a", model=ScriptedModel([[refusal]])))
    with pytest.raises(NonRetryableModelError, match="I cannot help with that"):
        _step(runner, _turn(runner))


# The model call


@dataclass
class PlainModel(Model):
    """A model that cannot stream (``NotImplementedError`` before any event), counting its calls."""

    response: ModelResponse
    calls: list[str] = field(default_factory=list)
    fail_mid_stream: bool = False

    async def get_response(
        self, system_instructions: str | None, input: str | list[TResponseInputItem], model_settings: ModelSettings,
        tools: list[Tool], output_schema: AgentOutputSchemaBase | None, handoffs: list[Handoff], tracing: ModelTracing,
        *, previous_response_id: str | None, conversation_id: str | None, prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        self.calls.append("get_response")
        return self.response

    async def stream_response(
        self, system_instructions: str | None, input: str | list[TResponseInputItem], model_settings: ModelSettings,
        tools: list[Tool], output_schema: AgentOutputSchemaBase | None, handoffs: list[Handoff], tracing: ModelTracing,
        *, previous_response_id: str | None, conversation_id: str | None, prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        if not self.fail_mid_stream:
            raise NotImplementedError("no streaming")
        self.calls.append("stream_response")
        stream = ScriptedModel([ModelStep(output=self.response.output)]).stream_response(
            system_instructions, input, model_settings, tools, output_schema, handoffs, tracing,
            previous_response_id=None, conversation_id=None, prompt=None)
        yield await anext(stream)
        raise NotImplementedError("a stream that breaks after its first event")


def test_a_model_that_cannot_stream_gets_one_plain_request_and_its_text_as_one_delta() -> None:
    usage = Usage(requests=1, input_tokens=12, output_tokens=7, total_tokens=19)
    model = PlainModel(ModelResponse(output=[assistant_message("Hello there")], usage=usage, response_id=None))
    runner = OpenAIAgentsRunner(Agent(name="a", model=model))
    events = fakes.Events()
    outcome = _step(runner, _turn(runner, events=events))
    assert isinstance(outcome, TurnCompleted)
    assert model.calls == ["get_response"]
    assert events.deltas == [("text", "Hello there")]
    assert outcome.usage == AgentUsage(requests=1, input_tokens=12, output_tokens=7)
    assert [message.text for message in outcome.new_messages] == ["Hello there"]


def test_a_stream_that_breaks_after_its_first_event_is_not_repeated_as_a_plain_request() -> None:
    model = PlainModel(ModelResponse(output=[assistant_message("Hi")], usage=Usage(), response_id=None),
                       fail_mid_stream=True)
    runner = OpenAIAgentsRunner(Agent(name="a", model=model))
    with pytest.raises(NotImplementedError, match="breaks after its first event"):
        _step(runner, _turn(runner))
    assert model.calls == ["stream_response"]


def test_the_model_receives_the_agents_instructions_tools_settings_and_output_schema() -> None:
    class Answer(BaseModel):
        status: str

    model = ScriptedModel([[assistant_message('{"status": "ok"}')]])

    def instructions(context: RunContextWrapper[dict[str, str]], agent: Agent[Any]) -> str:
        return f"Help {context.context['customer']}."

    agent = Agent(name="a", instructions=instructions, model=model, tools=[_lookup()], output_type=Answer,
                  model_settings=ModelSettings(temperature=0.25))
    runner = OpenAIAgentsRunner(agent, context={"customer": "Ada"})
    outcome = _step(runner, _turn(runner))
    assert isinstance(outcome, TurnCompleted)
    call = model.last_call
    assert call is not None and call.streamed and call.system_instructions == "Help Ada."
    assert [tool.name for tool in call.tools] == ["lookup_order"] and call.handoffs == []
    assert call.model_settings.temperature == 0.25
    assert call.output_schema is not None and call.output_schema.name() == "Answer"
    assert call.input == [{"type": "message", "role": "user", "content": "go"}]


def test_a_structured_output_that_does_not_validate_fails_the_attempt_for_a_retry() -> None:
    class Answer(BaseModel):
        status: str

    agent = Agent(name="a", model=ScriptedModel([[assistant_message("not json")]]), output_type=Answer)
    runner = OpenAIAgentsRunner(agent)
    with pytest.raises(ModelBehaviorError):
        _step(runner, _turn(runner))


def test_tool_choice_is_reset_after_the_turns_first_tool_round() -> None:
    model = _calling("lookup_order", {"order_id": 1}, [assistant_message("done")])
    agent = Agent(name="a", model=model, tools=[with_tool_effect(_lookup(), "read")],
                  model_settings=ModelSettings(tool_choice="required"))
    runner = OpenAIAgentsRunner(agent)
    outcome, call = _one_call(runner)
    first = model.last_call
    assert first is not None and first.model_settings.tool_choice == "required"
    record = fakes.record(call, status=ToolCallStatus.SUCCEEDED, output="order 1")
    finished = _step(runner, _turn(runner, outcome.framework_run_state, (record,)))
    assert isinstance(finished, TurnCompleted)
    second = model.last_call
    assert second is not None and second.model_settings.tool_choice is None
    assert second.input[-1] == {"type": "function_call_output", "call_id": "c-1", "output": "order 1"}
    assert [message.role for message in finished.new_messages] == [
        MessageRole.ASSISTANT, MessageRole.TOOL, MessageRole.ASSISTANT]


def test_a_function_call_beside_a_final_output_is_deferred_and_nothing_runs() -> None:
    runs: list[int] = []

    async def refund_order(order_id: int) -> str:
        """Refund an order."""
        runs.append(order_id)
        return "refunded"

    class Answer(BaseModel):
        status: str

    model = ScriptedModel([[assistant_message('{"status": "early"}'),
                            function_call("refund_order", '{"order_id": 4}', call_id="c-1")]])
    agent = Agent(name="a", model=model, output_type=Answer,
                  tools=[with_tool_effect(function_tool(refund_order), "non_idempotent_write")])
    outcome, call = _one_call(OpenAIAgentsRunner(agent))
    assert (call.tool_name, call.policy.requires_approval, runs) == ("refund_order", True, [])


def test_the_sdks_needs_approval_adds_an_approval_to_a_read() -> None:
    async def needs(context: RunContextWrapper[Any], parameters: dict[str, Any], call_id: str) -> bool:
        return parameters.get("order_id") == 1

    approved_always = function_tool(_lookup().__wrapped__, needs_approval=True)
    for tool in (approved_always, function_tool(_lookup().__wrapped__, needs_approval=needs)):
        agent = Agent(name="a", model=_calling("lookup_order", {"order_id": 1}), tools=[with_tool_effect(tool, "read")])
        _, call = _one_call(OpenAIAgentsRunner(agent))
        assert call.policy == ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=True)


def test_arguments_that_are_not_a_json_object_are_deferred_as_a_read_and_fail_in_their_step() -> None:
    tool = with_tool_effect(function_tool(_lookup().__wrapped__, needs_approval=True), "non_idempotent_write")
    runner = OpenAIAgentsRunner(Agent(name="a", model=ScriptedModel([[function_call("lookup_order", "not json",
                                                                                    call_id="c-1")]]), tools=[tool]))
    outcome, call = _one_call(runner)
    assert call.policy == ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False)
    with pytest.raises(ToolExecutionError, match="Invalid arguments for tool 'lookup_order'"):
        _run_tool(runner, outcome, call)


def test_an_unknown_tool_is_deferred_as_a_read_and_fails_in_its_step() -> None:
    agent = Agent(name="a", model=_calling("no_such_tool", {}), tools=[_lookup()])
    runner = OpenAIAgentsRunner(agent)
    outcome, call = _one_call(runner)
    assert call.policy == ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False)
    with pytest.raises(ToolExecutionError, match="Unknown tool 'no_such_tool'; the available tools are: 'lookup_order'"):
        _run_tool(runner, outcome, call)


# Guardrails


def test_a_tripped_input_guardrail_fails_the_turn_before_the_model_is_called() -> None:
    @input_guardrail
    def no_go(context: RunContextWrapper[Any], agent: Agent[Any], model_input: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info="go is not allowed", tripwire_triggered=True)

    model = ScriptedModel([[assistant_message("hi")]])
    runner = OpenAIAgentsRunner(Agent(name="a", model=model, input_guardrails=[no_go]))
    with pytest.raises(NonRetryableModelError, match="input guardrail 'no_go' tripped: 'go is not allowed'"):
        _step(runner, _turn(runner))
    assert model.calls == ()


def test_a_tripped_output_guardrail_fails_the_turn() -> None:
    @output_guardrail
    def no_secrets(context: RunContextWrapper[Any], agent: Agent[Any], output: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered="secret" in str(output))

    agent = Agent(name="a", model=ScriptedModel([[assistant_message("the secret is 42")]]),
                  output_guardrails=[no_secrets])
    runner = OpenAIAgentsRunner(agent)
    with pytest.raises(NonRetryableModelError, match="output guardrail 'no_secrets' tripped"):
        _step(runner, _turn(runner))


# The tool Step


def test_a_deferred_tool_gets_the_tool_context_its_run_would_have_given_it() -> None:
    seen: dict[str, object] = {}

    @function_tool
    async def lookup_order(context: ToolContext[dict[str, str]], order_id: int) -> str:
        """Look up an order."""
        assert context.tool_call is not None
        seen.update(customer=context.context["customer"], tool_call_id=context.tool_call_id,
                    tool_name=context.tool_name, arguments=context.tool_arguments,
                    raw_call=context.tool_call.call_id, requests=context.usage.requests,
                    agent=context.agent.name if context.agent else None)
        return f"order {order_id} shipped"

    agent = Agent(name="support", model=_calling("lookup_order", {"order_id": 7}), tools=[lookup_order])
    runner = OpenAIAgentsRunner(agent, context={"customer": "Ada"})
    outcome, call = _one_call(runner)
    assert _run_tool(runner, outcome, call) == "order 7 shipped"
    assert seen == {"customer": "Ada", "tool_call_id": "c-1", "tool_name": "lookup_order",
                    "arguments": '{"order_id": 7}', "raw_call": "c-1", "requests": 1, "agent": "support"}


def test_a_tool_call_without_a_readable_run_state_fails_without_running() -> None:
    runs: list[int] = []

    async def lookup_order(order_id: int) -> str:
        runs.append(order_id)
        return "shipped"

    runner = OpenAIAgentsRunner(Agent(name="a", tools=[function_tool(lookup_order)]))
    record = fakes.record(DeferredToolCall(tool_call_id="c", tool_name="lookup_order", arguments='{"order_id": 1}',
                                      policy=ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False)))
    for state in (None, '{"adapter":"openai_agents","round":["c"],"state":{},"version":99}'):
        with pytest.raises(ToolExecutionError, match="run state"):
            asyncio.run(runner.execute_deferred_tool_call(fakes.execution(record, state)))
    assert runs == []


def _failing_tool_runner(**options: Any) -> tuple[Runner, ToolCallsRequested, DeferredToolCall]:
    async def lookup_order(order_id: int) -> str:
        """Look up an order."""
        if order_id == 13:
            raise RuntimeError("the order database is down")
        await asyncio.sleep(1.0 if order_id == 99 else 0)
        return f"order {order_id}"

    arguments = options.pop("arguments", {"order_id": 13})
    agent = Agent(name="a", model=_calling("lookup_order", arguments),
                  tools=[function_tool(lookup_order, **options)])
    runner = OpenAIAgentsRunner(agent)
    outcome, call = _one_call(runner)
    return runner, outcome, call


def test_a_tool_error_the_sdk_shows_the_model_is_a_tool_execution_error() -> None:
    runner, outcome, call = _failing_tool_runner()
    with pytest.raises(ToolExecutionError, match="An error occurred while running the tool"):
        _run_tool(runner, outcome, call)

    def explain(context: RunContextWrapper[Any], error: Exception) -> str:
        return f"lookup failed: {error}"

    runner, outcome, call = _failing_tool_runner(failure_error_function=explain)
    with pytest.raises(ToolExecutionError, match="lookup failed: the order database is down"):
        _run_tool(runner, outcome, call)


def test_a_tool_without_a_failure_function_lets_its_exception_through_for_the_steps_retry() -> None:
    runner, outcome, call = _failing_tool_runner(failure_error_function=None)
    with pytest.raises(RuntimeError, match="the order database is down"):
        _run_tool(runner, outcome, call)


def test_bad_arguments_and_a_timeout_are_errors_the_model_reads() -> None:
    runner, outcome, call = _failing_tool_runner(arguments={"order_id": "not a number"})
    with pytest.raises(ToolExecutionError, match="Invalid arguments for tool 'lookup_order'.*JSON schema"):
        _run_tool(runner, outcome, call)
    runner, outcome, call = _failing_tool_runner(arguments={"order_id": 99}, timeout=0.05)
    with pytest.raises(ToolExecutionError, match="timed out after 0.05 seconds"):
        _run_tool(runner, outcome, call)


def test_tool_guardrails_run_around_the_tool_in_its_step() -> None:
    runs: list[int] = []

    @tool_input_guardrail
    def no_order_13(data: Any) -> ToolGuardrailFunctionOutput:
        arguments = json.loads(data.context.tool_arguments)
        if arguments["order_id"] == 13:
            return ToolGuardrailFunctionOutput.reject_content("order 13 is off limits")
        return ToolGuardrailFunctionOutput.allow()

    @tool_output_guardrail
    def redact(data: Any) -> ToolGuardrailFunctionOutput:
        if "secret" in str(data.output):
            return ToolGuardrailFunctionOutput.reject_content("[redacted]")
        return ToolGuardrailFunctionOutput.allow()

    async def lookup_order(order_id: int) -> str:
        """Look up an order."""
        runs.append(order_id)
        return f"order {order_id}: secret"

    for order_id, expected in ((13, ToolExecutionError), (7, "[redacted]")):
        tool = function_tool(lookup_order, tool_input_guardrails=[no_order_13], tool_output_guardrails=[redact])
        runner = OpenAIAgentsRunner(
            Agent(name="a", model=_calling("lookup_order", {"order_id": order_id}), tools=[tool]))
        outcome, call = _one_call(runner)
        if expected is ToolExecutionError:
            with pytest.raises(ToolExecutionError, match="order 13 is off limits"):
                _run_tool(runner, outcome, call)
        else:
            assert _run_tool(runner, outcome, call) == expected
    assert runs == [7]


def test_an_agent_as_a_tool_runs_its_whole_run_inside_the_tool_step() -> None:
    helper = Agent(name="helper", model=ScriptedModel([[assistant_message("the helper's answer")]]))
    tool = with_tool_effect(helper.as_tool("ask_helper", "Ask the helper."), "read")
    runner = OpenAIAgentsRunner(
        Agent(name="a", model=_calling("ask_helper", {"input": "question"}), tools=[tool]))
    outcome, call = _one_call(runner)
    assert call.policy.effect == ToolEffect.READ
    assert _run_tool(runner, outcome, call) == "the helper's answer"


class DocsServer(MCPServer):
    """An MCP server in memory: a read-only search and a destructive delete, with annotations."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, dict[str, Any] | None]] = []

    @property
    def name(self) -> str:
        return "docs"

    async def connect(self) -> None:
        pass

    async def cleanup(self) -> None:
        pass

    async def list_tools(self, run_context: RunContextWrapper[Any] | None = None,
                         agent: Any = None) -> list[MCPTool]:
        schema = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
        return [MCPTool(name="search_docs", description="Search.", input_schema=schema,
                        annotations=ToolAnnotations(read_only_hint=True)),
                MCPTool(name="delete_doc", description="Delete.", input_schema=schema,
                        annotations=ToolAnnotations(destructive_hint=True))]

    async def call_tool(self, tool_name: str, arguments: dict[str, Any] | None,
                        meta: dict[str, Any] | None = None) -> CallToolResult:
        self.calls.append((tool_name, arguments))
        return CallToolResult(content=[TextContent(type="text", text=f"{tool_name}: done")])

    async def list_prompts(self) -> ListPromptsResult:
        return ListPromptsResult(prompts=[])

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None) -> GetPromptResult:
        raise NotImplementedError


def test_mcp_tools_take_their_effect_from_annotations_and_run_in_their_step() -> None:
    server = DocsServer()
    for name, effect, approval in (("search_docs", ToolEffect.READ, False),
                                   ("delete_doc", ToolEffect.NON_IDEMPOTENT_WRITE, True)):
        agent = Agent(name="a", model=_calling(name, {"query": "refunds"}), mcp_servers=[server])
        runner = OpenAIAgentsRunner(agent)
        outcome, call = _one_call(runner)
        assert call.policy == ResolvedToolPolicy(effect=effect, requires_approval=approval)
        assert server.calls == [] or server.calls[-1][0] != name  # deferred: not run by RunModel
        assert _run_tool(runner, outcome, call) == f"{name}: done"
        assert server.calls[-1] == (name, {"query": "refunds"})


def test_a_stored_message_that_is_not_input_items_fails_the_turn_at_once() -> None:
    runner = OpenAIAgentsRunner(Agent(name="a", model=ScriptedModel()))
    turn = _turn(runner)
    broken = dataclasses.replace(turn, messages=(dataclasses.replace(turn.messages[0], framework_item="not json"),))
    with pytest.raises(NonRetryableModelError, match="a stored message is not a openai_agents message"):
        _step(runner, broken)


class RecordingHooks(AgentHooks[Any]):
    """Agent hooks that record which ran, in order."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_start(self, context: Any, agent: Any) -> None:
        self.seen.append("start")

    async def on_end(self, context: Any, agent: Any, output: Any) -> None:
        self.seen.append(f"end {output}")

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        self.seen.append(f"llm_start {len(input_items)}")

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        self.seen.append("llm_end")

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        self.seen.append(f"tool_start {tool.name}")

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        self.seen.append(f"tool_end {result}")


def test_agent_hooks_run_in_the_step_of_what_they_observe() -> None:
    hooks = RecordingHooks()
    agent = Agent(name="a", model=_calling("lookup_order", {"order_id": 1}, [assistant_message("done")]),
                  tools=[with_tool_effect(_lookup(), "read")], hooks=hooks)
    runner = OpenAIAgentsRunner(agent)
    outcome, call = _one_call(runner)
    assert hooks.seen == ["start", "llm_start 1", "llm_end"]
    output = _run_tool(runner, outcome, call)
    assert hooks.seen[3:] == ["tool_start lookup_order", "tool_end order 1"]
    record = fakes.record(call, status=ToolCallStatus.SUCCEEDED, output=output)
    assert isinstance(_step(runner, _turn(runner, outcome.framework_run_state, (record,))), TurnCompleted)
    assert hooks.seen[5:] == ["llm_start 3", "llm_end", "end done"]
