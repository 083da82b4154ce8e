"""The demo support agent on the OpenAI Agents SDK: an order lookup and a refund, as a session Flow.

The same agent as ``dex_agents.demo.support_agent`` (same turns, tools, effects, refund log and crash
gate), built with the OpenAI Agents SDK adapter; it needs only ``openai-agents``, not Pydantic AI.

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
import os
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
from dex_agents.pure.texts import FAILED_PREFIX, OUTCOME_UNKNOWN_PREFIX, REJECTED_PREFIX
from dex_agents.pure.values import ToolEffect
from dex_agents.serving.gate import FileGate
from dex_agents.shell.flow import AgentSessionFlow

# The same values as dex_agents.demo.support_agent (not imported: that module needs Pydantic AI).
DEMO_TURNS: Final[tuple[str, ...]] = ("Where is order 42?", "Please refund order 42")
CRASH_GATE_ENV: Final = "DEX_AGENTS_DEMO_CRASH_GATE"
STATE_DIR_ENV: Final = "DEX_AGENTS_DEMO_STATE_DIR"
MODEL_ENV: Final = "DEX_AGENTS_DEMO_MODEL"
REFUNDS_LOG: Final = "refunds.log"
REFUND_GATE: Final = "refund"
REFUND_AMOUNT: Final = 19.99
INSTRUCTIONS: Final = (
    "You are a customer support agent for an online shop. Use lookup_order to answer questions about "
    "an order and refund_order to refund one (order 42 costs 19.99). Report tool results faithfully, "
    "including a rejected, failed or unknown refund."
)
OPENAI_KEY: Final = "OPENAI_API_KEY"
AGENT_NAME: Final = "Support agent"


class MissingModelKeyError(ValueError):
    """A real model was asked for without its provider's key in the environment."""


def _refund_answer(result: str) -> str:
    if result.startswith(OUTCOME_UNKNOWN_PREFIX):
        return ("I cannot tell whether the refund of order 42 went through: the refund was interrupted. "
                "Please check the refunds before trying again.")
    if result.startswith(REJECTED_PREFIX):
        return f"I did not refund order 42: the refund was not approved ({result[len(REJECTED_PREFIX):]})."
    if result.startswith(FAILED_PREFIX):
        return f"The refund of order 42 failed: {result[len(FAILED_PREFIX):]}"
    return f"Done: {result}"


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
    """What a real model answers at this point of the demo conversation."""
    items = _items(model_input)
    last = items[-1] if items else {}
    if last.get("type") == "function_call_output":
        output = last.get("output")
        content = output if isinstance(output, str) else json.dumps(output)
        call = next((item for item in items if item.get("type") == "function_call"
                     and item.get("call_id") == last.get("call_id")), {})
        if call.get("name") == "refund_order":
            return [_text_message(_refund_answer(content))]
        return [_text_message(f"Here is what I found: {content}")]
    if last.get("role") == "user":
        text = last.get("content")
        number = len(items)
        if text == DEMO_TURNS[0]:
            return [_call("lookup_order", {"order_id": 42}, f"lookup-{number}")]
        if text == DEMO_TURNS[1]:
            return [_call("refund_order", {"order_id": 42, "amount": REFUND_AMOUNT}, f"refund-{number}")]
    return [_text_message("Happy to help. Ask me about an order or a refund.")]


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
            for position, word in enumerate(text.split(" ")):
                yield ResponseTextDeltaEvent(type="response.output_text.delta", item_id=item.id, output_index=index,
                                             content_index=0, delta=word if position == 0 else " " + word,
                                             logprobs=[], sequence_number=sequence)
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


def _record_refund(state_directory: Path, entry: str) -> None:
    state_directory.mkdir(parents=True, exist_ok=True)
    line = (entry + "\n").encode("utf-8")
    descriptor = os.open(state_directory / REFUNDS_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)


def _model_name(model: str) -> str:
    """The OpenAI model name of ``"openai:<name>"`` (see ``check_model``)."""
    provider, separator, name = model.partition(":")
    if not separator or not provider or not name:
        raise ValueError(f"model must be 'provider:name', got {model!r}")
    if provider != "openai":
        raise ValueError(f"the OpenAI Agents demo runs only OpenAI models ('openai:<name>'), got {model!r}")
    if not os.environ.get(OPENAI_KEY):
        raise MissingModelKeyError(f"model {model!r} needs the environment variable {OPENAI_KEY}, which is not set")
    return name


def check_model(model: str) -> None:
    """Raise ``ValueError`` (with the reason) unless the agent can be built on ``model``; no request is made."""
    _model_name(model)


def build_support_agent(*, model: str | None = None, state_directory: Path) -> Agent[None]:
    """The demo's SDK agent (see the module docstring)."""
    gate = FileGate(state_directory, REFUND_GATE) if os.environ.get(CRASH_GATE_ENV) == "1" else None

    async def lookup_order(order_id: int) -> str:
        """Look up the status of an order by its number."""
        if order_id == 42:
            return "Order 42: shipped on 2026-11-28, arriving 2026-12-02; total 19.99."
        return f"Order {order_id}: not found."

    async def refund_order(order_id: int, amount: float) -> str:
        """Refund an amount of an order to the customer."""
        _record_refund(state_directory, f"order={order_id} amount={amount:.2f}")
        if gate is not None:  # the crash demo kills the Worker here: refunded, but not yet reported
            await gate.mark_reached_async()
        return f"Refunded {amount:.2f} for order {order_id}."

    tools: list[Tool] = [
        with_tool_effect(function_tool(lookup_order), ToolEffect.READ),
        with_tool_effect(function_tool(refund_order), ToolEffect.NON_IDEMPOTENT_WRITE),
    ]
    chosen: Model | str = ScriptedSupportModel() if model is None else _model_name(model)
    return Agent(name=AGENT_NAME, instructions=INSTRUCTIONS, model=chosen, tools=tools)


def build_support_flow(
    *, model: str | None = None, state_directory: Path, flow_type: str = "SupportAgent"
) -> AgentSessionFlow:
    """The demo support agent's session Flow (see the module docstring)."""
    return create_openai_agents_session_flow(build_support_agent(model=model, state_directory=state_directory),
                                             flow_type)


def support_flow() -> AgentSessionFlow:
    """The demo agent's Flow from the environment (see the module docstring), for a Worker."""
    state_directory = Path(os.environ.get(STATE_DIR_ENV) or ".")
    return build_support_flow(model=os.environ.get(MODEL_ENV) or None, state_directory=state_directory)


__all__ = [
    "DEMO_TURNS",
    "MissingModelKeyError",
    "ScriptedSupportModel",
    "build_support_agent",
    "build_support_flow",
    "check_model",
    "scripted_output",
    "support_flow",
]
