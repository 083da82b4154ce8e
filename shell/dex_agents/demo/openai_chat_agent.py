"""The demo support agent on the ``openai`` client, no framework: two plain functions as tools.

The same agent as ``dex_agents.demo.support_agent`` (same turns, tools, effects, refund log, crash
gate and scripted answers: ``dex_agents.demo.support_script``'s), built with the ``openai_chat``
adapter; it needs only ``openai``.

Public API:
    ``DEMO_TURNS: tuple[str, ...]``: the demo conversation's user messages, in order.
    ``build_support_flow(*, model: str | None = None, state_directory: Path,
    flow_type: str = "SupportAgent") -> AgentSessionFlow``: the agent's session Flow.
        * ``model=None``: a keyless ``AsyncOpenAI`` answered in the process
          (``dex_agents.demo.in_process_openai``) by ``scripted_chat_reply``, streamed: "Where is
          order 42?" -> ``lookup_order(42)`` -> answer; "Please refund order 42" ->
          ``refund_order(42, 19.99)`` -> an answer reporting the tool result it reads (refunded,
          rejected, failed or outcome unknown); anything else -> a short text.
        * ``model="openai:<name>"``: that OpenAI model through ``AsyncOpenAI()``; raises
          ``MissingModelKeyError`` when ``OPENAI_API_KEY`` is not set, and ``ValueError`` for another
          provider.
    ``support_flow() -> AgentSessionFlow``: the same from the environment (``DEX_AGENTS_DEMO_STATE_DIR``,
    ``DEX_AGENTS_DEMO_MODEL``), for ``dex-agents worker``.
    ``check_model(model: str) -> None``: raises ``ValueError`` saying why the agent cannot use ``model``.
    Tools: ``lookup_order(order_id: int) -> str`` (effect ``read``) and ``refund_order(order_id: int,
    amount: float) -> str`` (effect ``non_idempotent_write``, approval required). Every real refund
    appends one line to ``refunds.log`` in ``state_directory``; with ``DEX_AGENTS_DEMO_CRASH_GATE=1`` it
    then waits at ``FileGate(state_directory, "refund")`` before it returns.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from openai import AsyncOpenAI

from dex_agents.adapters.openai_chat import create_openai_chat_session_flow, tool
from dex_agents.demo.support_script import (
    CRASH_GATE_ENV,
    DEMO_TURNS,
    INSTRUCTIONS,
    MODEL_ENV,
    REFUND_AMOUNT,
    REFUND_GATE,
    REFUNDS_LOG,
    STATE_DIR_ENV,
    MissingModelKeyError,
    ScriptedText,
    flow_from_environment,
    openai_model_name,
    scripted_reply,
    support_tools,
    support_policies,
)
from dex_agents.pure.values.session import ToolEffect
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.demo.chat_completions_wire import ChatReply, ChatRequest, ChatToolCall, ChatUsage
from dex_agents.demo.in_process_openai import in_process_openai_client

SCRIPTED_MODEL: Final = "dex-agents-demo-scripted"


def scripted_chat_reply(request: ChatRequest) -> ChatReply:
    """What a real model answers at this point of the demo conversation (``scripted_reply`` in Chat
    Completions terms), with a word-count estimate of its usage (the scripted model has no tokenizer)."""
    messages = [message for message in request.messages if message.get("role") != "system"]
    last = messages[-1] if messages else {}
    tool_result: tuple[str, str] | None = None
    if last.get("role") == "tool":
        call = next(call for message in messages for call in message.get("tool_calls") or []
                    if call["id"] == last.get("tool_call_id"))
        tool_result = (call["function"]["name"], str(last.get("content")))
    user_text = str(last.get("content")) if last.get("role") == "user" else None
    reply = scripted_reply(tool_result=tool_result, user_text=user_text, position=len(messages))
    usage = ChatUsage(prompt_tokens=len(json.dumps(messages).split()) + 1, completion_tokens=5)
    if isinstance(reply, ScriptedText):
        return ChatReply(text=reply.text, usage=usage)
    arguments = json.dumps(dict(reply.arguments), separators=(",", ":"))
    return ChatReply(tool_calls=(ChatToolCall(reply.call_id, reply.tool_name, arguments),), usage=usage)


def check_model(model: str) -> None:
    """Raise ``ValueError`` (with the reason) unless the agent can be built on ``model``; no request is made."""
    openai_model_name(model, "openai client")


def build_support_flow(
    *, model: str | None = None, state_directory: Path, flow_type: str = "SupportAgent"
) -> AgentSessionFlow:
    """The demo support agent's session Flow on the ``openai`` client (see the module docstring)."""
    if model is None:
        client, name = in_process_openai_client(scripted_chat_reply), SCRIPTED_MODEL
    else:
        name = openai_model_name(model, "openai client")
        client = AsyncOpenAI()
    functions = support_tools(state_directory)
    tools: list[Callable[..., Any]] = [tool(effect=ToolEffect.READ)(functions.lookup_order),
                                       tool(effect=ToolEffect.NON_IDEMPOTENT_WRITE)(functions.refund_order)]
    return create_openai_chat_session_flow(client, name, tools, flow_type, instructions=INSTRUCTIONS,
                                           tool_policies=support_policies(state_directory))


def support_flow() -> AgentSessionFlow:
    """The demo agent's Flow from the environment (see the module docstring), for a Worker."""
    return flow_from_environment(build_support_flow)


__all__ = [
    "CRASH_GATE_ENV",
    "DEMO_TURNS",
    "INSTRUCTIONS",
    "MODEL_ENV",
    "REFUNDS_LOG",
    "REFUND_AMOUNT",
    "REFUND_GATE",
    "SCRIPTED_MODEL",
    "STATE_DIR_ENV",
    "MissingModelKeyError",
    "build_support_flow",
    "check_model",
    "scripted_chat_reply",
    "support_flow",
]
