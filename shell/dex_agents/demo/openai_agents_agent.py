"""The demo support agent on the OpenAI Agents SDK: an order lookup and a refund, as a session Flow.

The same agent as ``dex_agents.demo.support_agent`` (same turns, tools, effects, refund log, crash
gate and scripted answers: ``dex_agents.demo.support_script``'s), built with the OpenAI Agents SDK
adapter; it needs only ``openai-agents``, not Pydantic AI.

Public API:
    ``DEMO_TURNS: tuple[str, ...]``: the demo conversation's user messages, in order.
    ``build_support_flow(*, model: str | None = None, state_directory: Path,
    flow_type: str = "SupportAgent") -> AgentSessionFlow``: the agent's session Flow.
        * ``model=None``: ``ScriptedSupportModel`` (no key), an SDK ``Model`` that streams, word by
          word, the calls a real model makes for ``DEMO_TURNS``: "Where is order 42?" ->
          ``lookup_order(42)`` -> answer; "Please refund order 42" -> ``refund_order(42, 19.99)`` ->
          an answer reporting the tool result it reads (refunded, rejected, failed or outcome
          unknown); anything else -> a short text.
        * ``model="openai:<name>"``: that OpenAI model through the SDK's default provider (the
          Responses API); raises ``MissingModelKeyError`` when ``OPENAI_API_KEY`` is not set, and
          ``ValueError`` for another provider.
    ``support_flow() -> AgentSessionFlow``: the same from the environment (``DEX_AGENTS_DEMO_STATE_DIR``,
    default the working directory; ``DEX_AGENTS_DEMO_MODEL``, default the scripted model).
    ``check_model(model: str) -> None``: raises ``ValueError`` saying why the agent cannot use ``model``.
    ``build_support_agent(*, model, state_directory) -> Agent``: the SDK agent itself. Its tools:
    ``lookup_order(order_id: int) -> str`` (effect ``read``) and ``refund_order(order_id: int,
    amount: float) -> str`` (effect ``non_idempotent_write``, approval required). Every real refund
    appends one line to ``refunds.log`` in ``state_directory``. With ``DEX_AGENTS_DEMO_CRASH_GATE=1``
    in the environment the refund then waits at ``FileGate(state_directory, "refund")`` before it
    returns (performed, not yet reported).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

from agents import Agent, ModelSettings, function_tool
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import ModelResponse, TResponseInputItem, TResponseOutputItem, TResponseStreamEvent
from agents.models.interface import Model, ModelTracing
from agents.tool import Tool
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
    ResponseUsage,
)
from openai.types.responses.response_prompt_param import ResponsePromptParam
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from dex_agents.adapters.openai_agents import create_openai_agents_session_flow, with_tool_effect
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
    word_chunks,
    support_policies,
)
from dex_agents.pure.values.session import ToolEffect
from dex_agents.shell.flow import AgentSessionFlow

AGENT_NAME: Final = "Support agent"


def _text_message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id="msg-demo", type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(text=text, type="output_text", annotations=[])])


def _call(name: str, arguments: Mapping[str, object], call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(id=call_id, call_id=call_id, type="function_call", name=name,
                                    arguments=json.dumps(arguments, separators=(",", ":")))


def _items(model_input: str | list[TResponseInputItem]) -> list[Mapping[str, Any]]:
    if isinstance(model_input, str):
        return [{"type": "message", "role": "user", "content": model_input}]
    return [cast(Mapping[str, Any], item) for item in model_input]


def scripted_output(model_input: str | list[TResponseInputItem]) -> list[TResponseOutputItem]:
    """What a real model answers at this point of the demo conversation (``scripted_reply`` in the SDK's terms)."""
    items = _items(model_input)
    last = items[-1] if items else {}
    tool_result: tuple[str, str] | None = None
    user_text: str | None = None
    if last.get("type") == "function_call_output":
        output = last.get("output")
        call = next((item for item in items if item.get("type") == "function_call"
                     and item.get("call_id") == last.get("call_id")), {})
        tool_result = (str(call.get("name")), output if isinstance(output, str) else json.dumps(output))
    elif last.get("role") == "user":
        text = last.get("content")
        user_text = text if isinstance(text, str) else ""
    reply = scripted_reply(tool_result=tool_result, user_text=user_text, position=len(items))
    if isinstance(reply, ScriptedText):
        return [_text_message(reply.text)]
    return [_call(reply.tool_name, reply.arguments, reply.call_id)]


def _usage(items: Sequence[Mapping[str, Any]], output: Sequence[TResponseOutputItem]) -> Usage:
    """A word-count estimate (the scripted model has no tokenizer)."""
    input_tokens = sum(len(json.dumps(dict(item)).split()) for item in items) + 1
    output_tokens = sum(len(item.model_dump_json().split()) for item in output)
    return Usage(requests=1, input_tokens=input_tokens, output_tokens=output_tokens,
                 total_tokens=input_tokens + output_tokens)


class ScriptedSupportModel(Model):
    """A keyless SDK ``Model`` that answers with ``scripted_output`` and streams its text word by word."""

    async def get_response(
        self, system_instructions: str | None, input: str | list[TResponseInputItem], model_settings: ModelSettings,
        tools: list[Tool], output_schema: AgentOutputSchemaBase | None, handoffs: list[Handoff], tracing: ModelTracing,
        *, previous_response_id: str | None, conversation_id: str | None, prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        output = scripted_output(input)
        return ModelResponse(output=output, usage=_usage(_items(input), output), response_id=None)

    async def stream_response(
        self, system_instructions: str | None, input: str | list[TResponseInputItem], model_settings: ModelSettings,
        tools: list[Tool], output_schema: AgentOutputSchemaBase | None, handoffs: list[Handoff], tracing: ModelTracing,
        *, previous_response_id: str | None, conversation_id: str | None, prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        output = scripted_output(input)
        sequence = 0
        for index, item in enumerate(output):
            if not isinstance(item, ResponseOutputMessage):
                continue
            text = "".join(part.text for part in item.content if isinstance(part, ResponseOutputText))
            for chunk in word_chunks(text):
                yield ResponseTextDeltaEvent(type="response.output_text.delta", item_id=item.id, output_index=index,
                                             content_index=0, delta=chunk, logprobs=[], sequence_number=sequence)
                sequence += 1
        usage = _usage(_items(input), output)
        response = Response(
            id="resp-demo", created_at=0, model="dex-agents-demo-scripted", object="response", output=output,
            tool_choice="auto", tools=[], top_p=None, parallel_tool_calls=False, status="completed",
            usage=ResponseUsage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                                total_tokens=usage.total_tokens,
                                input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
                                output_tokens_details=OutputTokensDetails(reasoning_tokens=0)))
        yield ResponseCompletedEvent(type="response.completed", response=response, sequence_number=sequence)


def check_model(model: str) -> None:
    """Raise ``ValueError`` (with the reason) unless the agent can be built on ``model``; no request is made."""
    openai_model_name(model, "OpenAI Agents")


def build_support_agent(*, model: str | None = None, state_directory: Path) -> Agent[None]:
    """The demo's SDK agent (see the module docstring)."""
    functions = support_tools(state_directory)
    tools: list[Tool] = [
        with_tool_effect(function_tool(functions.lookup_order), ToolEffect.READ),
        with_tool_effect(function_tool(functions.refund_order), ToolEffect.NON_IDEMPOTENT_WRITE),
    ]
    chosen: Model | str = ScriptedSupportModel() if model is None else openai_model_name(model, "OpenAI Agents")
    return Agent(name=AGENT_NAME, instructions=INSTRUCTIONS, model=chosen, tools=tools)


def build_support_flow(
    *, model: str | None = None, state_directory: Path, flow_type: str = "SupportAgent"
) -> AgentSessionFlow:
    """The demo support agent's session Flow (see the module docstring)."""
    return create_openai_agents_session_flow(build_support_agent(model=model, state_directory=state_directory),
                                             flow_type, tool_policies=support_policies(state_directory))


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
    "STATE_DIR_ENV",
    "MissingModelKeyError",
    "ScriptedSupportModel",
    "build_support_agent",
    "build_support_flow",
    "check_model",
    "scripted_output",
    "support_flow",
]
