"""What the adapters' engine-free unit tests hand a runner, the same for every framework: an
``AgentEventWriter`` that keeps its deltas, the turn, record and execution values of the first
turn of a session ``s``, a summary request over its messages, and OpenAI's context-window error."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Protocol

import httpx2
import openai

from dex_agents.pure.values.runner import DeferredToolCall, ResolvedToolPolicy
from dex_agents.pure.values.session import AgentMessage, AgentToolCall, FrameworkMessage, ToolCallStatus, ToolEffect
from dex_agents.shell.runner import AgentTurnContext, DeferredToolExecution, HistorySummaryRequest


class Events:
    """An ``AgentEventWriter`` that keeps the deltas it is given."""

    turn_id = "turn-1"
    attempt = 1

    def __init__(self) -> None:
        self.deltas: list[tuple[str, str]] = []

    def write_text_delta(self, text: str) -> None:
        self.deltas.append(("text", text))

    def write_reasoning_delta(self, text: str) -> None:
        self.deltas.append(("reasoning", text))

    def write_tool_call_started(self, tool_call_id: str, tool_name: str) -> None:
        pass

    def write_tool_call_finished(self, tool_call_id: str, tool_name: str, status: ToolCallStatus) -> None:
        pass

    def write_event(self, event_type: str, payload: Mapping[str, object]) -> None:
        pass


async def no_heartbeat() -> None:
    pass


def no_approval(name: str, effect: ToolEffect | None) -> ResolvedToolPolicy:
    """A policy that asks approval for nothing (an unclassified tool stays unclassified)."""
    return ResolvedToolPolicy(effect=effect or ToolEffect.UNCLASSIFIED, requires_approval=False)


class BuildsUserMessages(Protocol):
    """The part of an ``AgentFrameworkRunner`` that ``turn`` needs."""

    def build_user_message(self, text: str) -> FrameworkMessage: ...


def turn(runner: BuildsUserMessages, run_state: str | None = None, records: Sequence[AgentToolCall] = (),
         events: Events | None = None, *, text: str = "go",
         resolve_tool_policy: Callable[[str, ToolEffect | None], ResolvedToolPolicy] = no_approval) -> AgentTurnContext:
    """The first turn of a session whose only stored message is ``text``."""
    user = runner.build_user_message(text)
    stored = AgentMessage(sequence=1, turn_id="turn-1", role=user.role, text=user.text, tool_call_id=None,
                          tool_name=None, tool_arguments=None, tool_output=None, framework_item=user.framework_item)
    return AgentTurnContext(
        flow_id="s", turn_id="turn-1", attempt=1, messages=(stored,), framework_run_state=run_state,
        tool_calls=tuple(records), events=events or Events(), deadline=datetime.now(UTC),
        resolve_tool_policy=resolve_tool_policy, is_cancellation_requested=lambda: False, heartbeat=no_heartbeat)


def record(call: DeferredToolCall, status: ToolCallStatus = ToolCallStatus.PENDING, *, order: int = 0,
           output: str | None = None, error: str | None = None) -> AgentToolCall:
    """The record of a deferred call, with the given final state."""
    return AgentToolCall(tool_call_id=call.tool_call_id, turn_id="turn-1", tool_name=call.tool_name,
                         arguments=call.arguments, effect=call.policy.effect, requires_approval=False,
                         deferral_order=order, idempotency_key=f"s/turn-1/{call.tool_call_id}", status=status,
                         interrupt_id=None, output=output, error=error, rejection_message=None)


def execution(record: AgentToolCall, run_state: str | None = None, *, attempt: int = 1) -> DeferredToolExecution:
    """What ``execute_deferred_tool_call`` receives for ``record`` (``run_state``: the turn's)."""
    return DeferredToolExecution(flow_id="s", tool_call=record, idempotency_key=record.idempotency_key,
                                 framework_run_state=run_state, attempt=attempt, events=Events(),
                                 deadline=datetime.now(UTC), is_cancellation_requested=lambda: False,
                                 heartbeat=no_heartbeat)


def pending(tool_name: str, arguments: str, tool_call_id: str = "c-1") -> AgentToolCall:
    """A pending record of a call of ``tool_name``."""
    return record(DeferredToolCall(tool_call_id=tool_call_id, tool_name=tool_name, arguments=arguments,
                                   policy=ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False)))


def summary_request(runner: BuildsUserMessages, text: str = "my order is 7") -> HistorySummaryRequest:
    """A summary, with the instructions ``Summarize.``, of the messages of ``turn(runner, text=text)``."""
    return HistorySummaryRequest(flow_id="s", turn_id="turn-1", attempt=1, previous_summary=None,
                                 messages=turn(runner, text=text).messages, instructions="Summarize.",
                                 events=Events(), deadline=datetime.now(UTC), is_cancellation_requested=lambda: False,
                                 heartbeat=no_heartbeat)


def openai_bad_request(body: object) -> openai.BadRequestError:
    """The ``openai`` client's error for an HTTP 400 with ``body`` (e.g. ``{"code": "context_length_exceeded"}``)."""
    response = httpx2.Response(400, request=httpx2.Request("POST", "http://test/v1/chat/completions"))
    return openai.BadRequestError("This model's maximum context length is 3000 tokens", response=response, body=body)


def raised_from(cause: BaseException) -> RuntimeError:
    """A ``RuntimeError`` raised from ``cause`` (as a framework wraps a client's error)."""
    try:
        raise RuntimeError("the model call failed") from cause
    except RuntimeError as error:
        return error


__all__ = ["BuildsUserMessages", "Events", "execution", "no_approval", "no_heartbeat", "openai_bad_request", "pending",
           "raised_from", "record", "summary_request", "turn"]
