"""The demo support agent: a Pydantic AI agent with an order lookup and a refund, as a session Flow.

Its turns, tools, refund log, crash gate and scripted answers are ``dex_agents.demo.support_script``'s
(shared with the OpenAI Agents and LangChain demos); this module puts them in Pydantic AI's terms.

Public API:
    ``DEMO_TURNS: tuple[str, ...]``: the demo conversation's user messages, in order.
    ``build_support_flow(*, model: str | None = None, state_directory: Path,
    flow_type: str = "SupportAgent") -> AgentSessionFlow``: the agent's session Flow.
    ``support_flow() -> AgentSessionFlow``: the same from the environment, for
    ``dex-agents worker --agent dex_agents.demo.support_agent:support_flow``: ``DEX_AGENTS_DEMO_STATE_DIR``
    (default: the working directory) and ``DEX_AGENTS_DEMO_MODEL`` (default: the scripted model).
    ``check_model(model: str) -> None``: raises ``ValueError`` saying why the agent cannot use
    ``model`` (not ``provider:name``, a provider Pydantic AI does not know, a missing key).
        * ``model=None``: a scripted ``FunctionModel`` (no key) that makes the calls a real model
          makes for ``DEMO_TURNS``: "Where is order 42?" -> ``lookup_order(42)`` -> answer;
          "Please refund order 42" -> ``refund_order(42, 19.99)`` -> an answer reporting the tool
          return it reads (refunded, rejected, failed or outcome unknown); anything else -> a short text.
        * ``model="provider:name"``: that real model; raises ``MissingModelKeyError`` naming the
          environment variable when the provider's key is missing.
    Tools: ``lookup_order(order_id: int) -> str`` (effect ``read``) and
    ``refund_order(order_id: int, amount: float) -> str`` (effect ``non_idempotent_write``, approval
    required). Every real refund appends one line to ``refunds.log`` in ``state_directory``. With
    ``DEX_AGENTS_DEMO_CRASH_GATE=1`` in the environment the refund then waits at
    ``FileGate(state_directory, "refund")`` before it returns (performed, not yet reported).
    ``MissingModelKeyError``: a ``ValueError`` for a real model without its key.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

from pydantic_ai import Agent, Tool, UserError
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models import infer_model
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from dex_agents.adapters.pydantic_ai import DEX_EFFECT_METADATA_KEY, create_pydantic_ai_session_flow
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
    provider_and_name,
    require_key,
    scripted_reply,
    support_tools,
    word_chunks,
    support_policies,
)
from dex_agents.pure.values.session import ToolEffect
from dex_agents.shell.flow import AgentSessionFlow

PROVIDER_KEYS: Final = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google-gla": "GEMINI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "cohere": "CO_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
}


def _check_model_key(model: str) -> None:
    provider, _ = provider_and_name(model)
    variable = PROVIDER_KEYS.get(provider)
    if variable is None:
        return  # a provider we do not know the key of: Pydantic AI reports what it needs
    require_key(model, variable)


def check_model(model: str) -> None:
    """Raise ``ValueError`` (with the reason) unless the agent can be built on ``model``; no request is made."""
    _check_model_key(model)
    try:
        infer_model(model)
    except (UserError, ImportError) as error:  # an unknown provider, or its package is not installed
        raise ValueError(str(error)) from error


def _last_request(messages: list[ModelMessage]) -> ModelRequest | None:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            return message
    return None


def _scripted_response(messages: list[ModelMessage]) -> ModelResponse:
    """What a real model answers at this point of the demo conversation (``scripted_reply`` in Pydantic AI's terms)."""
    request = _last_request(messages)
    tool_result: tuple[str, str] | None = None
    user_text: str | None = None
    if request is not None:
        returns = [part for part in request.parts if isinstance(part, ToolReturnPart)]
        if returns:
            part = returns[-1]
            tool_result = (part.tool_name, part.content if isinstance(part.content, str) else str(part.content))
        else:
            prompts = [part.content for part in request.parts if isinstance(part, UserPromptPart)]
            user_text = prompts[-1] if prompts and isinstance(prompts[-1], str) else ""
    reply = scripted_reply(tool_result=tool_result, user_text=user_text, position=len(messages))
    if isinstance(reply, ScriptedText):
        return ModelResponse(parts=[TextPart(reply.text)])
    return ModelResponse(parts=[ToolCallPart(reply.tool_name, dict(reply.arguments), tool_call_id=reply.call_id)])


def _scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return _scripted_response(messages)


async def streamed(response: ModelResponse) -> AsyncIterator[str | DeltaToolCalls]:
    """``response`` as a ``FunctionModel``'s ``stream_function`` yields it: its text word by word, its
    tool calls whole."""
    for index, part in enumerate(response.parts):
        if isinstance(part, TextPart):
            for chunk in word_chunks(part.content):
                yield chunk
        elif isinstance(part, ToolCallPart):
            yield {index: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(),
                                        tool_call_id=part.tool_call_id)}


def _scripted_stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    return streamed(_scripted_response(messages))


def build_support_agent(*, model: str | None = None, state_directory: Path) -> Agent[None, str]:
    """The demo's Pydantic AI agent (see the module docstring)."""
    functions = support_tools(state_directory)
    tools = [
        Tool(functions.lookup_order, metadata={DEX_EFFECT_METADATA_KEY: ToolEffect.READ.value}),
        Tool(functions.refund_order, metadata={DEX_EFFECT_METADATA_KEY: ToolEffect.NON_IDEMPOTENT_WRITE.value}),
    ]
    if model is None:
        return Agent(FunctionModel(_scripted, stream_function=_scripted_stream), instructions=INSTRUCTIONS,
                     tools=tools)
    _check_model_key(model)
    return Agent(model, instructions=INSTRUCTIONS, tools=tools)


def build_support_flow(
    *, model: str | None = None, state_directory: Path, flow_type: str = "SupportAgent"
) -> AgentSessionFlow:
    """The demo support agent's session Flow (see the module docstring)."""
    return create_pydantic_ai_session_flow(build_support_agent(model=model, state_directory=state_directory), flow_type,
                                           tool_policies=support_policies(state_directory))


def support_flow() -> AgentSessionFlow:
    """The demo agent's Flow from the environment (see the module docstring), for ``dex-agents worker``."""
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
    "build_support_agent",
    "build_support_flow",
    "check_model",
    "streamed",
    "support_flow",
]
