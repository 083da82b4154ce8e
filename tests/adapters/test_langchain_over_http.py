"""Durable sessions through the LangChain adapter, its model LangChain's real ``ChatOpenAI``.

The first session holds the conversation every adapter holds over HTTP (it and its checks:
``tests.adapters.over_http_support``). The second asks for structured output and gets it beside a
function call, then alone. The third gets tool-call arguments the client cannot parse (LangChain's
``InvalidToolCall``), which are replayed and answered like any call. The responder answers these two
as it answers the conversation: from the last user message and what follows it. Last, a request the
server refuses as longer than the model's context window (HTTP 400 ``context_length_exceeded``) is
read as ``ContextWindowExceededError``, and any other refused request as a plain
``NonRetryableModelError``.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Final

import pytest
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from dex_agents.adapters.langchain import (
    DEX_EFFECT_METADATA_KEY,
    OUTPUT_NOT_PROCESSED,
    LangChainRunner,
    create_langchain_session_flow,
)
from dex_agents.pure.machine.texts import FAILED_PREFIX
from dex_agents.pure.values.session import MessageRole
from dex_agents.shell.runner import ContextWindowExceededError, NonRetryableModelError
from dex_agents.testing.openai_compatible import (
    ChatErrorReply,
    ChatReply,
    ChatRequest,
    ChatToolCall,
    OpenAICompatibleServer,
)
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.adapters import over_http_support
from tests.adapters.fakes import turn
from tests.adapters.over_http_support import (
    ToolRuns,
    assert_each_result_once_after_its_call,
    hold_the_conversation,
    last_turn,
    lookup_call,
    lookup_order_function,
    message_text,
    open_session,
    roles,
    tool_names,
)

SYSTEM_PROMPT: Final = "You are the support agent of an online shop."
CLASSIFY: Final = "Classify order 5, after looking it up."
BAD_JSON: Final = "Where is order 6?"
TOO_LONG: Final = "A message longer than the model's context window."
REFUSED: Final = "A message the server refuses."


class Verdict(BaseModel):
    """The structured output of the second session."""

    order_id: int
    status: str


def respond(request: ChatRequest) -> ChatReply | ChatErrorReply:
    """``over_http_support.respond``, and the structured-output and unparsable-arguments sessions."""
    prompt, rounds, results = last_turn(request)
    if prompt == CLASSIFY:
        if rounds == 0:  # the lookup and a premature verdict in one response
            return ChatReply(tool_calls=(lookup_call(5).tool_calls[0],
                                         ChatToolCall("call_verdict_early", "Verdict", '{"order_id": 5, "status": "?"}')))
        return ChatReply(tool_calls=(ChatToolCall("call_verdict", "Verdict",
                                                  json.dumps({"order_id": 5, "status": results[0]})),))
    if prompt == TOO_LONG:
        return ChatErrorReply(400, "This model's maximum context length is 3000 tokens.", code="context_length_exceeded")
    if prompt == REFUSED:
        return ChatErrorReply(400, "Invalid value for 'temperature'.", code="invalid_value")
    if prompt == BAD_JSON:  # arguments the client cannot parse: LangChain makes an InvalidToolCall of them
        if rounds == 0:
            return ChatReply(tool_calls=(ChatToolCall("call_bad", "lookup_order", 'order six, please'),))
        return ChatReply(text=f"Sorry: {results[0]}")
    return over_http_support.respond(request)


def lookup_tool(runs: ToolRuns) -> StructuredTool:
    return StructuredTool.from_function(coroutine=lookup_order_function(runs),
                                        metadata={DEX_EFFECT_METADATA_KEY: "read"})


@pytest.fixture
def chat_server() -> Iterator[OpenAICompatibleServer]:
    """The model provider, answering with this module's ``respond`` (overrides ``conftest``'s)."""
    with OpenAICompatibleServer(respond) as server:
        yield server


def chat_model(server: OpenAICompatibleServer) -> ChatOpenAI:
    """LangChain's real OpenAI chat model: no SDK retries (one model attempt is one HTTP request), and
    usage in streamed answers (off by default for a custom ``base_url``)."""
    return ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="test",  # type: ignore[arg-type]
                      max_retries=0, stream_usage=True)


def test_a_session_over_openai_chat_completions_http(
        chat_server: OpenAICompatibleServer, agent_environment: AgentEnvironmentFactory,
        agent_sessions: AgentSessionsFactory) -> None:
    runs = ToolRuns()
    flow = create_langchain_session_flow(chat_model(chat_server), [lookup_tool(runs)],
                                         f"LangChainHttp{uuid.uuid4().hex[:8]}", system_prompt=SYSTEM_PROMPT)
    sessions, session_id = open_session(agent_environment, agent_sessions, flow)

    hold_the_conversation(chat_server, sessions, session_id, runs, system_prompt=SYSTEM_PROMPT)
    stored = sessions.snapshot(session_id).messages
    assert [stored[1].tool_name, stored[1].tool_arguments] == ["lookup_order", '{"order_id":1}']


def test_structured_output_beside_a_function_call_over_http(
        chat_server: OpenAICompatibleServer, agent_environment: AgentEnvironmentFactory,
        agent_sessions: AgentSessionsFactory) -> None:
    runs = ToolRuns()
    flow = create_langchain_session_flow(chat_model(chat_server), [lookup_tool(runs)],
                                         f"LangChainHttpOut{uuid.uuid4().hex[:8]}", response_format=Verdict)
    sessions, session_id = open_session(agent_environment, agent_sessions, flow)

    sessions.start_session(session_id, CLASSIFY)
    sessions.wait_for_completed_turns(session_id, 1)
    first, second = chat_server.requests
    for request in (first, second):  # the output tool is bound beside the function tool, and forced
        assert tool_names(request) == ["lookup_order", "Verdict"]
        assert request["tool_choice"] == "required"
    assert roles(second["messages"]) == ["user", "assistant", "tool", "tool"]
    assert_each_result_once_after_its_call(second["messages"])
    results = {message["tool_call_id"]: message_text(message) for message in second["messages"][2:]}
    assert results == {"call_order_5": "order 5 shipped", "call_verdict_early": OUTPUT_NOT_PROCESSED}
    assert runs.order_ids == [5]
    stored = sessions.snapshot(session_id).messages
    assert [message.role for message in stored] == [
        MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL, MessageRole.TOOL,
        MessageRole.ASSISTANT, MessageRole.TOOL]
    assert [stored[4].tool_name, json.loads(stored[4].tool_arguments or "")] == [
        "Verdict", {"order_id": 5, "status": "order 5 shipped"}]
    assert stored[5].tool_output == "Returning structured response: order_id=5 status='order 5 shipped'"
    assert chat_server.rejections == () and chat_server.responder_errors == ()


def test_arguments_the_client_cannot_parse_are_answered_and_the_tool_never_runs(
        chat_server: OpenAICompatibleServer, agent_environment: AgentEnvironmentFactory,
        agent_sessions: AgentSessionsFactory) -> None:
    runs = ToolRuns()
    flow = create_langchain_session_flow(chat_model(chat_server), [lookup_tool(runs)],
                                         f"LangChainHttpBad{uuid.uuid4().hex[:8]}")
    sessions, session_id = open_session(agent_environment, agent_sessions, flow)

    sessions.start_session(session_id, BAD_JSON)
    sessions.wait_for_completed_turns(session_id, 1)
    first, second = chat_server.requests
    assert roles(second["messages"]) == ["user", "assistant", "tool"]
    assert_each_result_once_after_its_call(second["messages"])  # the unparsable call is replayed and answered
    assert second["messages"][1]["tool_calls"][0]["function"]["arguments"] == 'order six, please'
    result = message_text(second["messages"][2])
    assert result.startswith(FAILED_PREFIX + "Invalid arguments for tool 'lookup_order': not JSON"), result
    assert runs.order_ids == []
    assert sessions.snapshot(session_id).messages[-1].text == f"Sorry: {result}"
    assert chat_server.rejections == () and chat_server.responder_errors == ()


def test_a_request_over_the_context_window_is_read_as_context_window_exceeded(
        chat_server: OpenAICompatibleServer) -> None:
    runner = LangChainRunner(chat_model(chat_server), [lookup_tool(ToolRuns())])
    with pytest.raises(ContextWindowExceededError, match="context length"):
        asyncio.run(runner.run_model_step(turn(runner, text=TOO_LONG)))
    with pytest.raises(NonRetryableModelError, match="temperature") as refused:
        asyncio.run(runner.run_model_step(turn(runner, text=REFUSED)))
    assert not isinstance(refused.value, ContextWindowExceededError)
    assert len(chat_server.requests) == 2
