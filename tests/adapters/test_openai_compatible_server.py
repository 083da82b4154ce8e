"""The loopback OpenAI-compatible server, checked with the real ``openai`` client and Pydantic AI's OpenAIChatModel.

No network beyond 127.0.0.1 and no model key."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai
import pytest
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
)
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from dex_agents.testing.openai_compatible import (
    ChatErrorReply,
    ChatReply,
    ChatRequest,
    ChatToolCall,
    ChatUsage,
    OpenAICompatibleServer,
    message_rule_violation,
    replies_in_order,
)

MODEL = "gpt-test"
USER: ChatCompletionUserMessageParam = {"role": "user", "content": "hi"}
WEATHER_TOOL: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {"name": "weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


def client(server: OpenAICompatibleServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def assistant_calling(*ids: str) -> ChatCompletionAssistantMessageParam:
    calls: list[Any] = [{"id": call_id, "type": "function", "function": {"name": "weather", "arguments": "{}"}}
                        for call_id in ids]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def tool_answer(call_id: str) -> ChatCompletionToolMessageParam:
    return {"role": "tool", "tool_call_id": call_id, "content": "sunny"}


def test_streamed_text_arrives_in_several_chunks_with_usage_and_done() -> None:
    seen: list[ChatRequest] = []

    def respond(request: ChatRequest) -> ChatReply:
        seen.append(request)
        return ChatReply(text="Hello there, world!", usage=ChatUsage(prompt_tokens=7, completion_tokens=3))

    with OpenAICompatibleServer(respond) as server:
        stream = client(server).chat.completions.create(
            model=MODEL, messages=[USER], stream=True, stream_options={"include_usage": True})
        chunks = list(stream)
    text_chunks = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(text_chunks) > 2 and "".join(text_chunks) == "Hello there, world!"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens, chunks[-1].usage.total_tokens) == (
        7, 3, 10)
    assert all(c.usage is None for c in chunks[:-1])
    (request,) = seen
    assert (request.number, request.model, request.stream, request.include_usage) == (1, MODEL, True, True)
    assert request.messages == [USER] and server.requests[0]["messages"] == [USER] and server.request_count == 1


def test_streamed_answer_without_include_usage_has_no_usage_chunk() -> None:
    with OpenAICompatibleServer(replies_in_order(ChatReply(text="ok"))) as server:
        chunks = list(client(server).chat.completions.create(model=MODEL, messages=[USER], stream=True))
    assert all(len(chunk.choices) == 1 and chunk.usage is None for chunk in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_non_streamed_text_answer_with_usage() -> None:
    with OpenAICompatibleServer(replies_in_order(ChatReply(text="Plain answer", usage=ChatUsage(11, 4)))) as server:
        completion = client(server).chat.completions.create(model=MODEL, messages=[USER])
    assert completion.object == "chat.completion"
    assert completion.model == MODEL
    choice = completion.choices[0]
    assert (choice.message.content, choice.message.tool_calls, choice.finish_reason) == ("Plain answer", None, "stop")
    assert completion.usage is not None and (completion.usage.prompt_tokens, completion.usage.total_tokens) == (11, 15)


TOOL_CALLS = (ChatToolCall("call_a", "weather", '{"city": "Paris"}'),
              ChatToolCall("call_b", "weather", '{"city": "Oslo"}'))


def test_non_streamed_tool_calls_are_parsed_by_the_client() -> None:
    with OpenAICompatibleServer(replies_in_order(ChatReply(tool_calls=TOOL_CALLS))) as server:
        completion = client(server).chat.completions.create(model=MODEL, messages=[USER], tools=[WEATHER_TOOL])
        (request,) = server.requests
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    calls = choice.message.tool_calls or []
    assert all(isinstance(call, ChatCompletionMessageFunctionToolCall) for call in calls)
    assert [(c.id, c.type, c.function.name, c.function.arguments) for c in calls
            if isinstance(c, ChatCompletionMessageFunctionToolCall)] == [
        ("call_a", "function", "weather", '{"city": "Paris"}'), ("call_b", "function", "weather", '{"city": "Oslo"}')]
    assert request["tools"] == [WEATHER_TOOL]


def test_streamed_tool_calls_come_as_header_then_argument_fragments() -> None:
    names: list[tuple[str, ...]] = []

    def respond(request: ChatRequest) -> ChatReply:
        names.append(request.tool_names)
        return ChatReply(text="Checking.", tool_calls=TOOL_CALLS)

    async def scenario() -> list[ChatCompletionChunk]:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as async_client:
            stream = await async_client.chat.completions.create(
                model=MODEL, messages=[USER], tools=[WEATHER_TOOL], stream=True)
            return [chunk async for chunk in stream]

    with OpenAICompatibleServer(respond) as server:
        chunks = asyncio.run(scenario())
    deltas = [call for chunk in chunks for call in chunk.choices[0].delta.tool_calls or []]
    calls: dict[int, dict[str, str]] = {}
    for delta in deltas:
        call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
        call["id"] += delta.id or ""
        call["name"] += (delta.function and delta.function.name) or ""
        call["arguments"] += (delta.function and delta.function.arguments) or ""
    assert len(deltas) > 4 and [d.id for d in deltas if d.id] == ["call_a", "call_b"]
    assert calls == {0: {"id": "call_a", "name": "weather", "arguments": '{"city": "Paris"}'},
                     1: {"id": "call_b", "name": "weather", "arguments": '{"city": "Oslo"}'}}
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Checking."
    assert chunks[-1].choices[0].finish_reason == "tool_calls" and names == [("weather",)]


def test_a_stray_tool_message_is_answered_400_naming_the_rule() -> None:
    with OpenAICompatibleServer(replies_in_order()) as server, pytest.raises(openai.BadRequestError) as raised:
        client(server).chat.completions.create(model=MODEL, messages=[USER, tool_answer("call_a")])
    assert raised.value.status_code == 400
    assert "must be a response to a preceding message with 'tool_calls'" in raised.value.message
    assert raised.value.body == {"message": server.rejections[0], "type": "invalid_request_error",
                                 "param": "messages.[1].role", "code": None}
    assert server.request_count == 1 and server.responder_errors == ()


def test_results_of_an_earlier_round_resent_after_a_later_assistant_message_are_answered_400() -> None:
    resent: list[ChatCompletionMessageParam] = [
        USER, assistant_calling("call_1"), tool_answer("call_1"),
        assistant_calling("call_2"), tool_answer("call_2"), tool_answer("call_1")]
    after_text: list[ChatCompletionMessageParam] = [
        USER, assistant_calling("call_1"), tool_answer("call_1"),
        {"role": "assistant", "content": "done"}, tool_answer("call_1")]
    with OpenAICompatibleServer(replies_in_order()) as server:
        with pytest.raises(openai.BadRequestError, match="'call_1' not found in 'tool_calls'"):
            client(server).chat.completions.create(model=MODEL, messages=resent)
        with pytest.raises(openai.BadRequestError, match="must be a response to a preceding message"):
            client(server).chat.completions.create(model=MODEL, messages=after_text)
        assert len(server.rejections) == 2 and server.request_count == 2


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([], "non-empty array"),
        ([{"role": "robot", "content": "x"}], "Invalid value for 'messages.[0].role'"),
        ([USER, assistant_calling("call_1", "call_2"), tool_answer("call_1"), USER], "call_2"),
        ([USER, assistant_calling("call_1")], "did not have response messages: call_1"),
        ([USER, assistant_calling("call_1"), tool_answer("call_1"), tool_answer("call_1")], "answered twice"),
        ([USER, assistant_calling("call_1", "call_1"), tool_answer("call_1")], "unique"),
        ([USER, assistant_calling("call_1"), {"role": "tool", "content": "x"}], "'messages.[2].tool_call_id'"),
        ([USER, {"role": "assistant", "tool_calls": "call_1"}], "expected an array"),
    ],
)
def test_message_rules(messages: list[Any], fragment: str) -> None:
    violation = message_rule_violation({"model": MODEL, "messages": messages})
    assert violation is not None and fragment in violation[0]


def test_valid_multi_round_conversation_keeps_the_rules() -> None:
    messages = [{"role": "system", "content": "s"}, USER, assistant_calling("call_1", "call_2"), tool_answer("call_2"),
                tool_answer("call_1"), assistant_calling("call_3"), tool_answer("call_3"),
                {"role": "assistant", "content": "done"}, USER]
    assert message_rule_violation({"model": MODEL, "messages": messages}) is None


@pytest.mark.parametrize(
    ("status", "error_type"),
    [(400, openai.BadRequestError), (401, openai.AuthenticationError), (429, openai.RateLimitError),
     (500, openai.InternalServerError)],
)
def test_scripted_errors_surface_as_the_clients_error_types(status: int,
                                                            error_type: type[openai.APIStatusError]) -> None:
    reply = ChatErrorReply(status, f"scripted {status}", code="test_code")
    with OpenAICompatibleServer(replies_in_order(reply)) as server, pytest.raises(error_type) as raised:
        client(server).chat.completions.create(model=MODEL, messages=[USER], stream=status == 429)
    assert raised.value.status_code == status and raised.value.code == "test_code"
    assert f"scripted {status}" in raised.value.message


def test_a_responder_failure_is_answered_500_and_kept() -> None:
    with OpenAICompatibleServer(replies_in_order()) as server, pytest.raises(openai.InternalServerError):
        client(server).chat.completions.create(model=MODEL, messages=[USER])
    assert [type(error) for error in server.responder_errors] == [IndexError]


def test_other_paths_get_an_openai_style_404() -> None:
    with OpenAICompatibleServer(replies_in_order()) as server:
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(f"{server.base_url}/models", timeout=5)
        assert raised.value.code == 404
        assert json.loads(raised.value.read())["error"] == {
            "message": "Invalid URL (GET /v1/models)", "type": "invalid_request_error", "param": None, "code": None}
        with pytest.raises(openai.NotFoundError):
            client(server).embeddings.create(model=MODEL, input="x")
        assert server.request_count == 0


def test_concurrent_requests_are_all_recorded_with_distinct_numbers() -> None:
    def respond(request: ChatRequest) -> ChatReply:
        return ChatReply(text=str(request.number))

    with OpenAICompatibleServer(respond) as server, ThreadPoolExecutor(max_workers=8) as pool:
        def ask(index: int) -> tuple[str | None, str]:
            messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": str(index)}]
            answer = client(server).chat.completions.create(model=MODEL, messages=messages)
            return answer.choices[0].message.content, str(index)

        answers = list(pool.map(ask, range(16)))
        requests = server.requests
    assert sorted(int(number or 0) for number, _ in answers) == list(range(1, 17))
    assert [requests[int(number or 0) - 1]["messages"][0]["content"] for number, _ in answers] == [
        sent for _, sent in answers]


def test_close_leaves_no_thread_running_and_is_idempotent() -> None:
    before = set(threading.enumerate())
    server = OpenAICompatibleServer(replies_in_order(ChatReply(text="a"), ChatReply(text="b")))
    with client(server) as sync_client:
        sync_client.chat.completions.create(model=MODEL, messages=[USER])
        list(sync_client.chat.completions.create(model=MODEL, messages=[USER], stream=True))
    server.close()
    server.close()
    assert set(threading.enumerate()) <= before
    with pytest.raises(openai.APIConnectionError):
        client(server).chat.completions.create(model=MODEL, messages=[USER])


def weather_agent(server: OpenAICompatibleServer) -> Agent[None, str]:
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=server.base_url, api_key="test"))
    agent: Agent[None, str] = Agent(model)

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    return agent


TWO_TOOL_ROUNDS = (
    ChatReply(tool_calls=(ChatToolCall("call_1", "weather", '{"city": "Paris"}'),), usage=ChatUsage(10, 2)),
    ChatReply(tool_calls=(ChatToolCall("call_2", "weather", '{"city": "Oslo"}'),), usage=ChatUsage(20, 2)),
    ChatReply(text="Paris and Oslo are sunny.", usage=ChatUsage(30, 6)),
)


def assert_two_tool_rounds(server: OpenAICompatibleServer, stream: bool) -> None:
    requests = server.requests
    assert len(requests) == 3 and server.rejections == () and server.responder_errors == ()
    assert [request.get("stream", False) for request in requests] == [stream] * 3
    assert [tool["function"]["name"] for tool in requests[0]["tools"]] == ["weather"]
    assert [m["role"] for m in requests[2]["messages"]] == ["user", "assistant", "tool", "assistant", "tool"]
    answers = [(m["tool_call_id"], m["content"]) for m in requests[2]["messages"] if m["role"] == "tool"]
    assert answers == [("call_1", "sunny in Paris"), ("call_2", "sunny in Oslo")]
    assert requests[1]["messages"] == requests[2]["messages"][:3]


def test_pydantic_ai_openai_chat_model_runs_two_tool_rounds_without_streaming() -> None:
    with OpenAICompatibleServer(replies_in_order(*TWO_TOOL_ROUNDS)) as server:
        result = asyncio.run(weather_agent(server).run("Weather in Paris and Oslo?"))
        assert_two_tool_rounds(server, stream=False)
    assert result.output == "Paris and Oslo are sunny."
    usage = result.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (60, 10, 3)


def test_pydantic_ai_openai_chat_model_runs_two_tool_rounds_streaming() -> None:
    async def scenario(server: OpenAICompatibleServer) -> tuple[list[str], str]:
        async with weather_agent(server).run_stream("Weather in Paris and Oslo?") as run:
            pieces = [piece async for piece in run.stream_text(delta=True, debounce_by=None)]
            return pieces, await run.get_output()

    with OpenAICompatibleServer(replies_in_order(*TWO_TOOL_ROUNDS)) as server:
        pieces, output = asyncio.run(scenario(server))
        assert_two_tool_rounds(server, stream=True)
        assert all(request["stream_options"] == {"include_usage": True} for request in server.requests)
    assert output == "Paris and Oslo are sunny." and "".join(pieces) == output and len(pieces) > 1
