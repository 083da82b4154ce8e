"""Unit checks of the LangChain adapter's model step and Flow creation (no engine)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from dataclasses import replace
from typing import Any, Literal

import httpx2
import openai
import pytest
from langchain_core.exceptions import (
    ContextOverflowError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelInvalidRequestError,
    ModelRateLimitError,
)
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_openai.chat_models.base import OpenAIContextOverflowError
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    InvalidToolCall,
    SystemMessage,
    ToolCall,
    ToolCallChunk,
    ToolMessage,
)
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from dex_agents.adapters.langchain import (
    DEX_EFFECT_METADATA_KEY,
    OUTPUT_NOT_PROCESSED,
    LangChainRunner,
    create_langchain_session_flow,
    is_context_window_exceeded,
    is_non_retryable,
)
from dex_agents.adapters.langchain.binding import (
    StructuredOutputError,
    can_stream,
    load_messages,
    to_framework_messages,
)
from dex_agents.pure.values.runner import ToolCallsRequested, TurnCompleted
from dex_agents.pure.machine.texts import FAILED_PREFIX
from dex_agents.pure.values.session import AgentUsage, MessageRole, ToolCallStatus, ToolEffect
from dex_agents.shell.runner import (
    ContextWindowExceededError,
    HistorySummaryRequest,
    HistorySummaryResult,
    NonRetryableModelError,
)
from tests.adapters.fakes import Events, no_heartbeat, record, turn
from tests.adapters.langchain_support import ChunkChatModel, ReplyChatModel


class Verdict(BaseModel):
    """A structured output."""

    status: str


async def _lookup(order_id: int) -> str:
    """Look up an order."""
    return f"order {order_id} shipped"


async def _refund(order_id: int) -> str:
    """Refund an order."""
    return f"order {order_id} refunded"


def lookup(**options: Any) -> StructuredTool:
    return StructuredTool.from_function(coroutine=_lookup, name="lookup",
                                        metadata={DEX_EFFECT_METADATA_KEY: "read"}, **options)


def refund() -> StructuredTool:
    return StructuredTool.from_function(coroutine=_refund, name="refund",
                                        metadata={DEX_EFFECT_METADATA_KEY: "non_idempotent_write"})


def call(name: str, args: dict[str, Any], call_id: str | None) -> ToolCall:
    return ToolCall(name=name, args=args, id=call_id, type="tool_call")


def test_build_user_message_is_deterministic_and_a_langchain_human_message() -> None:
    runner = LangChainRunner(ReplyChatModel(replies=[]), [])
    first, second = runner.build_user_message("hi \x00 \U0001F4E6"), runner.build_user_message("hi \x00 \U0001F4E6")
    assert first == second and first.role == MessageRole.USER and first.text == "hi \x00 \U0001F4E6"
    assert load_messages(first.framework_item) == [HumanMessage(content="hi \x00 \U0001F4E6")]


@pytest.mark.parametrize(("build", "error", "match"), [
    (lambda: (ReplyChatModel(replies=[]).bind_tools([lookup()]), [], None), TypeError, "must be a LangChain BaseChatModel"),
    (lambda: (ReplyChatModel(replies=[]), [_lookup], None), TypeError, "tools must be LangChain BaseTools"),
    (lambda: (ReplyChatModel(replies=[]), [lookup(), lookup()], None), ValueError, "two tools are named 'lookup'"),
    (lambda: (ReplyChatModel(replies=[]), [lookup(return_direct=True)], None), ValueError, "return_direct"),
    (lambda: (ReplyChatModel(replies=[]), [StructuredTool.from_function(
        coroutine=_refund, metadata={DEX_EFFECT_METADATA_KEY: "read_only"})], None), ValueError,
     "tool '_refund' has dex_effect='read_only'"),
    (lambda: (ReplyChatModel(replies=[]), [], dict), TypeError, "response_format must be a Pydantic model"),
    (lambda: (ReplyChatModel(replies=[]), [StructuredTool.from_function(coroutine=_lookup, name="Verdict")], Verdict),
     ValueError, "response_format 'Verdict' has the name of a tool"),
    (lambda: (GenericFakeChatModel(messages=iter([])), [lookup()], None), ValueError, "cannot bind tools"),
], ids=["bound_model", "plain_function", "duplicate", "return_direct", "bad_effect", "not_pydantic",
        "output_named_like_a_tool", "no_bind_tools"])
def test_what_cannot_be_durable_is_refused_at_creation(build: Any, error: type[Exception], match: str) -> None:
    model, tools, response_format = build()
    with pytest.raises(error, match=match):
        create_langchain_session_flow(model, tools, "Refused", response_format=response_format)


def _status_error(kind: type[openai.APIStatusError], status: int) -> openai.APIStatusError:
    response = httpx2.Response(status, request=httpx2.Request("POST", "http://test/v1/chat/completions"))
    return kind("scripted", response=response, body=None)


@pytest.mark.parametrize(("error", "expected"), [
    (_status_error(openai.BadRequestError, 400), True),
    (_status_error(openai.AuthenticationError, 401), True),
    (_status_error(openai.PermissionDeniedError, 403), True),
    (_status_error(openai.NotFoundError, 404), True),
    (_status_error(openai.UnprocessableEntityError, 422), True),
    (_status_error(openai.ConflictError, 409), False),
    (_status_error(openai.RateLimitError, 429), False),
    (_status_error(openai.APIStatusError, 408), False),
    (_status_error(openai.InternalServerError, 500), False),
    (openai.APIConnectionError(request=httpx2.Request("POST", "http://test")), False),
    (ModelInvalidRequestError("bad"), True),
    (ModelAuthenticationError("no key"), True),
    (ContextOverflowError("too long"), True),
    (ModelRateLimitError("slow down"), False),
    (ModelAPIError("server"), False),
    (RuntimeError("flaky"), False),
])
def test_model_errors_a_retry_cannot_fix_are_non_retryable(error: Exception, expected: bool) -> None:
    assert is_non_retryable(error) is expected


def _context_length_error(body: object) -> openai.BadRequestError:
    response = httpx2.Response(400, request=httpx2.Request("POST", "http://test/v1/chat/completions"))
    return openai.BadRequestError("This model's maximum context length is 3000 tokens", response=response, body=body)


def _chained(cause: BaseException) -> RuntimeError:
    try:
        raise RuntimeError("the model call failed") from cause
    except RuntimeError as error:
        return error


@pytest.mark.parametrize(("error", "expected"), [
    (ContextOverflowError("too long"), True),
    (OpenAIContextOverflowError("too long", response=_context_length_error(None).response, body=None), True),
    (_context_length_error({"code": "context_length_exceeded", "message": "too long"}), True),
    (_context_length_error({"error": {"code": "context_length_exceeded"}}), True),
    (_chained(_context_length_error({"code": "context_length_exceeded"})), True),
    (ModelInvalidRequestError("Prompt is too long: 210000 tokens > 200000 maximum"), True),
    (_context_length_error({"code": "invalid_value"}), False),
    (ModelInvalidRequestError("bad"), False),
    (RuntimeError("flaky"), False),
], ids=["langchain", "chat_openai", "openai_code", "openai_body", "chained", "anthropic_text", "other_400",
        "invalid_request", "other"])
def test_context_window_errors_are_recognised(error: BaseException, expected: bool) -> None:
    assert is_context_window_exceeded(error) is expected


def test_a_context_window_error_fails_the_model_step_as_context_window_exceeded() -> None:
    runner = LangChainRunner(ReplyChatModel(replies=[ContextOverflowError("the input is too long")]), [lookup()])
    with pytest.raises(ContextWindowExceededError, match="ContextOverflowError: the input is too long"):
        asyncio.run(runner.run_model_step(turn(runner)))


def _summary_request(runner: Any, events: Events) -> HistorySummaryRequest:
    return HistorySummaryRequest(flow_id="s", turn_id="turn-1", attempt=1, previous_summary=None,
                                 messages=turn(runner, text="my order is 7").messages, instructions="Summarize.",
                                 events=events, deadline=datetime.now(UTC), is_cancellation_requested=lambda: False,
                                 heartbeat=no_heartbeat)


def test_a_summary_is_one_call_of_the_model_without_tools() -> None:
    reply = AIMessage(content="The user asked about order 7.",
                      usage_metadata={"input_tokens": 30, "output_tokens": 8, "total_tokens": 38})
    model = ReplyChatModel(replies=[reply])
    runner = LangChainRunner(model, [lookup()], system_prompt="Be brief.")
    result = asyncio.run(runner.summarize_history(_summary_request(runner, Events())))
    assert result == HistorySummaryResult(text="The user asked about order 7.",
                                          usage=AgentUsage(requests=1, input_tokens=30, output_tokens=8))
    ((system, user),) = model.inputs  # the session's system prompt is not sent: the instructions are
    assert system == SystemMessage(content="Summarize.") and isinstance(user, HumanMessage)
    assert "my order is 7" in user.text
    assert model.bindings == [{"tools": ["lookup"], "tool_choice": None}]  # bound once, for turns only


def test_a_blank_summary_or_a_context_window_error_fails_the_summary() -> None:
    model = ReplyChatModel(replies=[AIMessage(content="  "), ContextOverflowError("too long")])
    runner = LangChainRunner(model, [])
    with pytest.raises(RuntimeError, match="summary of the history is empty"):
        asyncio.run(runner.summarize_history(_summary_request(runner, Events())))
    with pytest.raises(ContextWindowExceededError):
        asyncio.run(runner.summarize_history(_summary_request(runner, Events())))


def test_a_rejected_request_fails_the_turn_at_once_and_a_server_error_is_retried() -> None:
    model = ReplyChatModel(replies=[ModelInvalidRequestError("the request is invalid"), ModelAPIError("down")])
    runner = LangChainRunner(model, [lookup()])
    with pytest.raises(NonRetryableModelError, match="ModelInvalidRequestError: the request is invalid"):
        asyncio.run(runner.run_model_step(turn(runner)))
    with pytest.raises(ModelAPIError, match="down"):
        asyncio.run(runner.run_model_step(turn(runner)))


def test_a_plain_call_sends_the_system_prompt_first_and_writes_each_block_as_one_delta() -> None:
    reply = AIMessage(content="Hello!", additional_kwargs={"reasoning_content": "greet"},
                      usage_metadata={"input_tokens": 12, "output_tokens": 7, "total_tokens": 19,
                                      "input_token_details": {"cache_read": 4, "cache_creation": 2}})
    model = ReplyChatModel(replies=[reply])
    runner = LangChainRunner(model, [lookup()], system_prompt="Be brief.")
    events = Events()
    outcome = asyncio.run(runner.run_model_step(turn(runner, events=events)))
    assert model.inputs == [[SystemMessage(content="Be brief."), HumanMessage(content="go")]]
    assert model.bindings == [{"tools": ["lookup"], "tool_choice": None}]
    assert events.deltas == [("reasoning", "greet"), ("text", "Hello!")]
    assert isinstance(outcome, TurnCompleted)
    assert outcome.usage == AgentUsage(requests=1, input_tokens=12, output_tokens=7, cache_read_tokens=4,
                                       cache_write_tokens=2)
    (stored,) = outcome.new_messages  # the system prompt is never stored
    assert (stored.role, stored.text) == (MessageRole.ASSISTANT, "Hello!")
    assert load_messages(stored.framework_item) == [reply]


def test_a_streamed_call_writes_deltas_as_they_arrive_and_stores_the_aggregate_message() -> None:
    chunks = [
        AIMessageChunk(content="", additional_kwargs={"reasoning_content": "look it up"}),
        AIMessageChunk(content="Let me "),
        AIMessageChunk(content="check.", tool_call_chunks=[ToolCallChunk(name="lookup", args='{"order_', id="c-1",
                                                                          index=0, type="tool_call_chunk")]),
        AIMessageChunk(content="", tool_call_chunks=[ToolCallChunk(name=None, args='id": 7}', id=None, index=0,
                                                                   type="tool_call_chunk")]),
        AIMessageChunk(content="", usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
                       chunk_position="last"),
    ]
    model = ChunkChatModel(replies=[], chunks=[chunks])
    runner = LangChainRunner(model, [lookup()])
    events = Events()
    outcome = asyncio.run(runner.run_model_step(turn(runner, events=events)))
    assert events.deltas == [("reasoning", "look it up"), ("text", "Let me "), ("text", "check.")]
    assert isinstance(outcome, ToolCallsRequested)
    (deferred,) = outcome.tool_calls
    assert (deferred.tool_call_id, deferred.tool_name, deferred.arguments, deferred.policy.effect) == (
        "c-1", "lookup", '{"order_id":7}', ToolEffect.READ)
    assert outcome.usage == AgentUsage(requests=1, input_tokens=3, output_tokens=4)
    state = json.loads(outcome.framework_run_state)
    (message,) = load_messages(state["state"]["messages"])
    assert type(message) is AIMessage and message.text == "Let me check."  # the aggregate, not a chunk


@pytest.mark.parametrize(("streaming", "disable_streaming", "tools_bound", "expected"), [
    (False, False, True, False),
    (True, False, True, True),
    (True, True, False, False),
    (True, "tool_calling", True, False),
    (True, "tool_calling", False, True),
])
def test_a_model_streams_unless_it_cannot_or_disables_it(streaming: bool,
                                                          disable_streaming: bool | Literal["tool_calling"],
                                                          tools_bound: bool, expected: bool) -> None:
    kind = ChunkChatModel if streaming else ReplyChatModel
    model = kind(replies=[], disable_streaming=disable_streaming)
    assert can_stream(model, tools_bound=tools_bound) is expected


def test_calls_without_ids_get_ids_and_unparsable_arguments_fail_as_reads() -> None:
    reply = AIMessage(content="", tool_calls=[call("refund", {"order_id": 1}, None)],
                      invalid_tool_calls=[InvalidToolCall(name="refund", args='{"order_id": ', id=None, error="bad",
                                                          type="invalid_tool_call")])
    runner = LangChainRunner(ReplyChatModel(replies=[reply]), [lookup(), refund()])
    outcome = asyncio.run(runner.run_model_step(turn(runner)))
    assert isinstance(outcome, ToolCallsRequested)
    assert [(c.tool_call_id, c.arguments, c.policy.effect) for c in outcome.tool_calls] == [
        ("call_turn-1_0_0", '{"order_id":1}', ToolEffect.NON_IDEMPOTENT_WRITE),
        ("call_turn-1_0_1", '{"order_id": ', ToolEffect.READ)]
    (message,) = load_messages(json.loads(outcome.framework_run_state)["state"]["messages"])
    assert isinstance(message, AIMessage)
    assert [message.tool_calls[0]["id"], message.invalid_tool_calls[0]["id"]] == ["call_turn-1_0_0", "call_turn-1_0_1"]


def test_an_unknown_tool_is_deferred_as_a_read() -> None:
    runner = LangChainRunner(ReplyChatModel(replies=[AIMessage(content="", tool_calls=[call("nope", {}, "c")])]),
                             [refund()])
    outcome = asyncio.run(runner.run_model_step(turn(runner)))
    assert isinstance(outcome, ToolCallsRequested)
    assert outcome.tool_calls[0].policy.effect == ToolEffect.READ


def test_a_resumed_step_answers_each_call_of_the_latest_response_once_in_order() -> None:
    first = AIMessage(content="", tool_calls=[call("lookup", {"order_id": 1}, "c-1"),
                                              call("Verdict", {"status": "early"}, "o-1"),
                                              call("lookup", {"order_id": 2}, "c-2")])
    final = AIMessage(content="", tool_calls=[call("Verdict", {"status": "done"}, "o-2")])
    model = ReplyChatModel(replies=[first, final])
    runner = LangChainRunner(model, [lookup()], response_format=Verdict)
    assert model.bindings == [{"tools": ["lookup", "Verdict"], "tool_choice": "any"}]
    requested = asyncio.run(runner.run_model_step(turn(runner)))
    assert isinstance(requested, ToolCallsRequested)
    assert [c.tool_call_id for c in requested.tool_calls] == ["c-1", "c-2"]  # the output call is not deferred
    one, two = requested.tool_calls
    records = (record(one, ToolCallStatus.SUCCEEDED, output="order 1 shipped"),
               record(two, ToolCallStatus.FAILED, order=1, error="no such order"))
    completed = asyncio.run(runner.run_model_step(turn(runner, requested.framework_run_state, records)))
    assert model.inputs[1][:2] == [HumanMessage(content="go"), first]
    assert model.inputs[1][2:] == [
        ToolMessage(content="order 1 shipped", tool_call_id="c-1", name="lookup", status="success"),
        ToolMessage(content=OUTPUT_NOT_PROCESSED, tool_call_id="o-1", name="Verdict", status="error"),
        ToolMessage(content=FAILED_PREFIX + "no such order", tool_call_id="c-2", name="lookup", status="error")]
    assert isinstance(completed, TurnCompleted)
    assert [(m.role, m.tool_call_id) for m in completed.new_messages] == [
        (MessageRole.ASSISTANT, None), (MessageRole.TOOL, "c-1"), (MessageRole.TOOL, "o-1"), (MessageRole.TOOL, "c-2"),
        (MessageRole.ASSISTANT, "o-2"), (MessageRole.TOOL, "o-2")]
    assert completed.new_messages[-1].tool_output == "Returning structured response: status='done'"


@pytest.mark.parametrize("calls", [
    [call("Verdict", {"status": "a"}, "o-1"), call("Verdict", {"status": "b"}, "o-2")],
    [call("Verdict", {"state": "wrong field"}, "o-1")],
], ids=["twice", "invalid"])
def test_structured_output_that_does_not_give_one_valid_output_fails_the_attempt(calls: list[ToolCall]) -> None:
    runner = LangChainRunner(ReplyChatModel(replies=[AIMessage(content="", tool_calls=calls)]), [],
                             response_format=Verdict)
    with pytest.raises(StructuredOutputError, match="the model call is retried"):
        asyncio.run(runner.run_model_step(turn(runner)))


def test_a_run_state_of_another_adapter_or_version_fails_the_turn_at_once() -> None:
    runner = LangChainRunner(ReplyChatModel(replies=[]), [lookup()])
    other = '{"adapter":"pydantic_ai","round":["c"],"state":{},"version":2}'
    with pytest.raises(NonRetryableModelError, match="written by adapter 'pydantic_ai'"):
        asyncio.run(runner.run_model_step(turn(runner, run_state=other)))
    newer = '{"adapter":"langchain","round":["c"],"state":{},"version":99}'
    with pytest.raises(NonRetryableModelError, match="format version 99"):
        asyncio.run(runner.run_model_step(turn(runner, run_state=newer)))
    older = '{"adapter":"langchain","round":["c"],"state":{"messages":[],"not_deferred":[]},"version":1}'
    with pytest.raises(NonRetryableModelError, match="format version 1"):
        asyncio.run(runner.run_model_step(turn(runner, run_state=older)))
    garbled = '{"adapter":"langchain","round":["c"],"state":{"messages":[{"x":1}],"usage":{},"contexts":{}},"version":2}'
    with pytest.raises(NonRetryableModelError, match="run state cannot be read: not LangChain messages"):
        asyncio.run(runner.run_model_step(turn(runner, run_state=garbled)))


def test_a_stored_message_of_another_framework_fails_the_turn_at_once() -> None:
    runner = LangChainRunner(ReplyChatModel(replies=[]), [lookup()])
    context = turn(runner)
    pydantic_ai_item = '[{"kind":"request","parts":[{"part_kind":"user-prompt","content":"go"}]}]'
    foreign = replace(context, messages=(replace(context.messages[0], framework_item=pydantic_ai_item),))
    with pytest.raises(NonRetryableModelError, match="a stored message is not a langchain message: not LangChain messages"):
        asyncio.run(runner.run_model_step(foreign))


def test_stored_messages_project_text_and_a_single_call_for_display() -> None:
    one = AIMessage(content=[{"type": "text", "text": "Checking "}, {"type": "text", "text": "é"}],
                    tool_calls=[call("lookup", {"order_id": 1, "note": "é"}, "c-1")])
    two = AIMessage(content="", tool_calls=[call("lookup", {"order_id": 1}, "a"), call("lookup", {"order_id": 2}, "b")])
    result = ToolMessage(content=[{"type": "text", "text": "shipped"}], tool_call_id="c-1", name="lookup")
    first, second, third = to_framework_messages([one, two, result])
    assert (first.text, first.tool_call_id, first.tool_name, first.tool_arguments) == (
        "Checking é", "c-1", "lookup", '{"order_id":1,"note":"é"}')
    assert (second.text, second.tool_call_id) == (None, None)
    assert (third.role, third.tool_call_id, third.tool_name, third.tool_output) == (
        MessageRole.TOOL, "c-1", "lookup", '[{"type": "text", "text": "shipped"}]')
    assert first.framework_item.isascii() and load_messages(first.framework_item) == [one]
    with pytest.raises(ValueError, match="not LangChain messages"):
        load_messages('{"type": "human"}')
