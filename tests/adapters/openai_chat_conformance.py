"""The ``openai_chat`` adapter's conformance fixture: the suite's ``ScriptedModel`` behind a real
``openai.AsyncOpenAI`` client (``dex_agents.demo.in_process_openai``: Chat Completions answered in the
process, streamed as Server-Sent Events when the request streams), and the suite's tools as the plain
functions they are, each with ``@tool(effect=...)``. Imported by the conformance Worker children too.

The adapter always streams, so the suite's "model that cannot stream" is the same streamed model.
Structured output is the client's own: ``model_settings={"response_format": <Status's JSON schema>}``,
the output answered as the message's JSON text. A ``ScriptedFailure`` is an HTTP error the client
raises: 500 (retried), 400 (``BadRequestError``, not retried), or with ``context_window`` a 400 with
code ``context_length_exceeded``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel

from dex_agents.adapters.kit import SessionFlowOptions
from dex_agents.adapters.openai_chat import create_openai_chat_session_flow, native_subagent_tool, tool
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.testing.conformance import ConformanceTool, ScriptedModel, SeenCall, SeenMessage
from dex_agents.testing.openai_compatible import ChatErrorReply, ChatReply, ChatRequest, ChatToolCall, ChatUsage
from dex_agents.demo.in_process_openai import InProcessResponder, in_process_openai_client

MODEL = "conformance-scripted"


class Status(BaseModel):
    """The suite's structured output."""

    status: str


STATUS_FORMAT = {"type": "json_schema", "json_schema": {"name": "Status", "schema": Status.model_json_schema()}}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def seen_messages(messages: Sequence[dict[str, Any]]) -> list[SeenMessage]:
    """A request's messages as the suite's ``SeenMessage``s (the system prompt is left out)."""
    seen: list[SeenMessage] = []
    for message in messages:
        if message["role"] == "user":
            seen.append(SeenMessage(role="user", text=_text(message)))
        elif message["role"] == "assistant":
            calls = tuple(SeenCall(call["id"], call["function"]["name"], json.loads(call["function"]["arguments"]))
                          for call in message.get("tool_calls") or [])
            seen.append(SeenMessage(role="assistant", text=message.get("content") or None, tool_calls=calls))
        elif message["role"] == "tool":
            seen.append(SeenMessage(role="tool", tool_call_id=message["tool_call_id"], text=_text(message)))
    return seen


def responder(script: ScriptedModel) -> InProcessResponder:
    """Chat Completions answers from ``script``."""

    async def respond(request: ChatRequest) -> ChatReply | ChatErrorReply:
        reply = await script.respond(seen_messages(request.messages))
        if reply.failure is not None:
            if reply.failure.context_window:
                return ChatErrorReply(400, reply.failure.message, code="context_length_exceeded")
            return ChatErrorReply(500 if reply.failure.retryable else 400, reply.failure.message)
        text = reply.text
        if reply.output is not None:
            if request.body.get("response_format") != STATUS_FORMAT:
                raise AssertionError(f"the request asks for no structured output: {request.body}")
            text = json.dumps(reply.output)
        calls = tuple(ChatToolCall(call.tool_call_id, call.tool_name, json.dumps(call.arguments))
                      for call in reply.tool_calls)
        return ChatReply(text=text, tool_calls=calls, reasoning=reply.reasoning,
                         usage=ChatUsage(prompt_tokens=reply.input_tokens, completion_tokens=reply.output_tokens))

    return respond


class OpenAIChatConformance:
    """``ConformanceAdapter`` of the ``openai_chat`` adapter."""

    name: ClassVar[str] = "openai_chat"

    def build_flow(self, flow_type: str, model: ScriptedModel, tools: Sequence[ConformanceTool], *,
                   structured_output: bool, options: SessionFlowOptions) -> AgentSessionFlow:
        functions = [tool(effect=found.effect)(found.function) for found in tools]
        functions += [native_subagent_tool(sub) for sub in options.get("sub_agents", ())]
        return create_openai_chat_session_flow(
            in_process_openai_client(responder(model)), MODEL, functions, flow_type,
            instructions="You are the support agent of an online shop.",
            model_settings={"response_format": STATUS_FORMAT} if structured_output else None, **options)
