"""The run state of a turn that waits on tool calls: what the turn produced so far, and its usage.

Carried in a kit envelope (adapter ``openai_agents``, version ``RUN_STATE_VERSION``) whose round is
the call IDs of the latest model response. Its state (JSON)::

    {"messages": [{"role": "assistant", "items": [<input items of one response>]},
                  {"role": "tool", "tool_name": "lookup_order", "items": [<function_call_output>]}, ...],
     "usage": {"requests": 2, "input_tokens": ..., "output_tokens": ..., "total_tokens": ...,
               "cached_tokens": ..., "cache_write_tokens": ..., "reasoning_tokens": ...}}

Invariants: ``messages`` are the turn's messages after its user message, one per stored message
(see ``items``), ending with the response whose function calls are the round; ``usage`` is the SDK
``Usage`` of the turn's model calls so far (what ``RunContextWrapper.usage`` shows a tool or an
instructions function). The tool Step reads the call's raw ``function_call`` item from the last
message; ``RunModel`` appends one tool message per call of the round (``resumed``) and feeds
everything back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, final

from agents.usage import Usage
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from dex_agents.adapters.kit import (
    RunState,
    RunStateError,
    decode_run_state,
    encode_run_state,
    latest_round_results,
)
from dex_agents.adapters.openai_agents.items import (
    ASSISTANT,
    TOOL,
    assistant_framework_message,
    function_calls,
    output_item,
    tool_framework_message,
)
from dex_agents.pure.values import AgentToolCall, FrameworkMessage

RUN_STATE_ADAPTER: Final = "openai_agents"
RUN_STATE_VERSION: Final = 1


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TurnMessage:
    """One message of the turn: a model response (``assistant``) or one tool result (``tool``)."""

    role: str
    items: tuple[Mapping[str, Any], ...]
    tool_name: str | None = None

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"role": self.role, "items": [dict(item) for item in self.items]}
        if self.tool_name is not None:
            data["tool_name"] = self.tool_name
        return data

    def to_framework_message(self) -> FrameworkMessage:
        if self.role == TOOL:
            return tool_framework_message(self.items[0], self.tool_name or "")
        return assistant_framework_message(self.items)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TurnSoFar:
    """What the turn produced before this model call (empty on its first call)."""

    messages: tuple[TurnMessage, ...] = ()
    usage: Usage = field(default_factory=Usage)

    def items(self) -> list[Mapping[str, Any]]:
        """The turn's input items, in order."""
        return [item for message in self.messages for item in message.items]

    def framework_messages(self) -> list[FrameworkMessage]:
        return [message.to_framework_message() for message in self.messages]

    def function_call(self, call_id: str) -> Mapping[str, Any] | None:
        """The ``function_call`` item ``call_id`` of the latest response."""
        last = self.messages[-1] if self.messages else None
        if last is None or last.role != ASSISTANT:
            return None
        return next((item for item in function_calls(last.items) if item.get("call_id") == call_id), None)


def usage_to_json(usage: Usage) -> dict[str, int]:
    details = usage.input_tokens_details
    return {
        "requests": usage.requests,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "cached_tokens": getattr(details, "cached_tokens", 0) or 0,
        "cache_write_tokens": getattr(details, "cache_write_tokens", 0) or 0,
        "reasoning_tokens": getattr(usage.output_tokens_details, "reasoning_tokens", 0) or 0,
    }


def usage_from_json(data: object) -> Usage:
    counts = data if isinstance(data, dict) else {}

    def count(name: str) -> int:
        value = counts.get(name)
        return value if type(value) is int and value > 0 else 0

    return Usage(
        requests=count("requests"),
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        total_tokens=count("total_tokens"),
        input_tokens_details=InputTokensDetails(cached_tokens=count("cached_tokens"),
                                                cache_write_tokens=count("cache_write_tokens")),
        output_tokens_details=OutputTokensDetails(reasoning_tokens=count("reasoning_tokens")),
    )


def encode_turn(round_call_ids: Sequence[str], turn: TurnSoFar) -> str:
    """The run state of ``turn``, whose last message is the response that called ``round_call_ids``."""
    state = {"messages": [message.to_json() for message in turn.messages], "usage": usage_to_json(turn.usage)}
    return encode_run_state(RUN_STATE_ADAPTER, RUN_STATE_VERSION, round_call_ids, state)


def _message(data: object) -> TurnMessage:
    if not isinstance(data, dict) or data.get("role") not in (ASSISTANT, TOOL):
        raise RunStateError("the turn's run state holds a message that is not an assistant or tool message")
    items = data.get("items")
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise RunStateError("the turn's run state holds a message without a list of input items")
    tool_name = data.get("tool_name")
    if data["role"] == TOOL and (len(items) != 1 or not isinstance(tool_name, str)):
        raise RunStateError("the turn's run state holds a tool message that is not one named tool result")
    return TurnMessage(role=data["role"], items=tuple(items), tool_name=tool_name if isinstance(tool_name, str) else None)


def decode_turn(text: str) -> tuple[RunState, TurnSoFar]:
    """The envelope and the turn in ``text``.

    Raises:
        RunStateError: not this adapter's run state, or its state is not a turn ending with the
            response that called the round's tools.
    """
    decoded = decode_run_state(text, adapter=RUN_STATE_ADAPTER, version=RUN_STATE_VERSION)
    state = decoded.state
    messages = state.get("messages") if isinstance(state, dict) else None
    if not isinstance(messages, list) or not messages:
        raise RunStateError("the turn's run state holds no messages")
    turn = TurnSoFar(messages=tuple(_message(message) for message in messages),
                     usage=usage_from_json(state.get("usage") if isinstance(state, dict) else None))
    last = turn.messages[-1]
    called = [str(item.get("call_id")) for item in function_calls(last.items)] if last.role == ASSISTANT else []
    if called != list(decoded.round_call_ids):
        raise RunStateError("the turn's run state does not end with the model response that called the round's tools")
    return decoded, turn


def resumed(decoded: RunState, turn: TurnSoFar, records: Sequence[AgentToolCall]) -> TurnSoFar:
    """``turn`` with one tool message per call of the round, from its final record, in the model's order."""
    results = latest_round_results(decoded, records)
    outputs = tuple(TurnMessage(role=TOOL, items=(output_item(result.tool_call_id, result.text),),
                                tool_name=result.tool_name) for result in results)
    return TurnSoFar(messages=(*turn.messages, *outputs), usage=turn.usage)


__all__ = [
    "RUN_STATE_ADAPTER",
    "RUN_STATE_VERSION",
    "TurnMessage",
    "TurnSoFar",
    "decode_turn",
    "encode_turn",
    "resumed",
    "usage_from_json",
    "usage_to_json",
]
