"""Hypothesis strategies for the pure core's values: every wire record, JSON values, and the pieces the
session state machine test draws from (tool names, effects, texts).

Strategies are built explicitly with ``st.builds`` / ``st.one_of`` and annotated ``SearchStrategy[...]``
(``st.from_type`` over unions does not type-check strictly). Text strategies include non-ASCII,
astral-plane characters and JSON-significant characters (quotes, backslashes, control characters), so
the wire tests cover escaping.
"""

from __future__ import annotations

from typing import TypeVar

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector

from dex_agents.pure.wire.json_value import JsonObject, JsonValue
from dex_agents.pure.values.rpc import (
    AgentMessagePage,
    AgentSnapshot,
    ListAgentMessagesInput,
    ResolveInterruptInput,
    SendUserMessageInput,
)
from dex_agents.pure.values.runner import (
    DeferredToolCall,
    McpToolAnnotations,
    ResolvedToolPolicy,
    ToolCallsRequested,
    ToolPolicy,
    TurnCompleted,
)
from dex_agents.pure.values.session import (
    AgentEvent,
    AgentInterrupt,
    AgentInterruptResolution,
    AgentMessage,
    AgentSessionFork,
    AgentSessionStartInput,
    AgentState,
    AgentStatus,
    AgentToolCall,
    AgentUsage,
    AgentUserMessage,
    FrameworkMessage,
    MessageRole,
    ToolCallCompleted,
    ToolCallStatus,
    ToolEffect,
)
from dex_agents.pure.wire import INT64_MAX, INT64_MIN

T = TypeVar("T")

TRICKY_CHARACTERS = "\"\\/\n\t\x00\x1f\x7f\u00e9\u2028\u2029\U0001f600\ufeff"

texts: SearchStrategy[str] = st.text(
    alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(TRICKY_CHARACTERS)), max_size=24
)
"""Any text, weighted towards characters JSON must escape."""

optional_texts: SearchStrategy[str | None] = st.none() | texts
int64s: SearchStrategy[int] = st.integers(min_value=INT64_MIN, max_value=INT64_MAX)
counts: SearchStrategy[int] = st.integers(min_value=0, max_value=INT64_MAX)
optional_counts: SearchStrategy[int | None] = st.none() | counts
identifiers: SearchStrategy[str] = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12)
turn_ids: SearchStrategy[str] = st.integers(min_value=1, max_value=10_000).map(lambda n: f"turn-{n}")
instants: SearchStrategy[str | None] = st.none() | st.datetimes().map(
    lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
)


def vectors_of(items: SearchStrategy[T], max_size: int = 4) -> SearchStrategy[PVector[T]]:
    """``PVector``s of ``items``."""
    return st.lists(items, max_size=max_size).map(pvector)


json_scalars: SearchStrategy[JsonValue] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)


def _json_containers(children: SearchStrategy[JsonValue]) -> SearchStrategy[JsonValue]:
    arrays: SearchStrategy[JsonValue] = st.lists(children, max_size=4).map(pvector)
    objects: SearchStrategy[JsonValue] = st.dictionaries(texts, children, max_size=4).map(pmap)
    return arrays | objects


json_values: SearchStrategy[JsonValue] = st.recursive(json_scalars, _json_containers, max_leaves=12)
json_objects: SearchStrategy[JsonObject] = st.dictionaries(texts, json_values, max_size=4).map(pmap)

statuses: SearchStrategy[AgentStatus] = st.sampled_from(AgentStatus)
tool_effects: SearchStrategy[ToolEffect] = st.sampled_from(ToolEffect)
tool_call_statuses: SearchStrategy[ToolCallStatus] = st.sampled_from(ToolCallStatus)
roles: SearchStrategy[MessageRole] = st.sampled_from(MessageRole)

usages: SearchStrategy[AgentUsage] = st.builds(
    AgentUsage,
    requests=counts,
    input_tokens=counts,
    output_tokens=counts,
    cache_read_tokens=counts,
    cache_write_tokens=counts,
)
agent_states: SearchStrategy[AgentState] = st.builds(
    AgentState,
    status=statuses,
    turn_count=counts,
    current_turn_id=st.none() | turn_ids,
    current_turn_sequence=optional_counts,
    message_count=counts,
    completed_turn_count=counts,
    failed_turn_count=counts,
    last_turn_error=optional_texts,
)
MESSAGE_CONTENT_FIELDS: dict[str, SearchStrategy[object]] = {
    "role": roles,
    "text": optional_texts,
    "tool_call_id": optional_texts,
    "tool_name": optional_texts,
    "tool_arguments": optional_texts,
    "tool_output": optional_texts,
    "framework_item": texts,
}
"""The fields ``FrameworkMessage`` and ``AgentMessage`` share (a stored message adds sequence and turn)."""

DEFERRED_CALL_FIELDS: dict[str, SearchStrategy[object]] = {
    "tool_call_id": identifiers,
    "turn_id": turn_ids,
    "tool_name": identifiers,
    "arguments": texts,
    "effect": tool_effects,
}
"""The fields ``AgentToolCall`` and ``AgentInterrupt`` share (the call an interrupt asks about)."""

RESOLUTION_FIELDS: dict[str, SearchStrategy[object]] = {
    "interrupt_id": texts,
    "approved": st.booleans(),
    "rejection_message": optional_texts,
}
"""The fields of ``AgentInterruptResolution`` and of its RPC input ``ResolveInterruptInput``."""

framework_messages: SearchStrategy[FrameworkMessage] = st.builds(FrameworkMessage, **MESSAGE_CONTENT_FIELDS)
agent_messages: SearchStrategy[AgentMessage] = st.builds(
    AgentMessage,
    sequence=st.integers(min_value=1, max_value=999_999_999_999),
    turn_id=turn_ids,
    **MESSAGE_CONTENT_FIELDS,
)
agent_tool_calls: SearchStrategy[AgentToolCall] = st.builds(
    AgentToolCall,
    **DEFERRED_CALL_FIELDS,
    requires_approval=st.booleans(),
    deferral_order=st.integers(min_value=0, max_value=1000),
    idempotency_key=texts,
    status=tool_call_statuses,
    interrupt_id=optional_texts,
    output=optional_texts,
    error=optional_texts,
    rejection_message=optional_texts,
)
agent_interrupts: SearchStrategy[AgentInterrupt] = st.builds(
    AgentInterrupt, interrupt_id=texts, deadline=instants, **DEFERRED_CALL_FIELDS
)
interrupt_resolutions: SearchStrategy[AgentInterruptResolution] = st.builds(AgentInterruptResolution, **RESOLUTION_FIELDS)
user_messages: SearchStrategy[AgentUserMessage] = st.builds(AgentUserMessage, text=texts)
session_forks: SearchStrategy[AgentSessionFork] = st.builds(
    AgentSessionFork, source_session_id=texts, at_turn=st.integers(min_value=-1, max_value=3), state=agent_states,
    messages=vectors_of(agent_messages), usage=usages, history_summary=st.none())
start_inputs: SearchStrategy[AgentSessionStartInput] = st.builds(
    AgentSessionStartInput, initial_message=optional_texts, fork=st.one_of(st.none(), st.none(), session_forks))
tool_call_completions: SearchStrategy[ToolCallCompleted] = st.builds(ToolCallCompleted, tool_call_id=identifiers)
agent_events: SearchStrategy[AgentEvent] = st.builds(
    AgentEvent,
    type=texts,
    turn_id=st.none() | turn_ids,
    attempt=st.integers(min_value=1, max_value=INT64_MAX),
    step_execution_id=texts,
    payload=json_objects,
)

send_user_message_inputs: SearchStrategy[SendUserMessageInput] = st.builds(SendUserMessageInput, text=texts)
resolve_interrupt_inputs: SearchStrategy[ResolveInterruptInput] = st.builds(ResolveInterruptInput, **RESOLUTION_FIELDS)
list_agent_messages_inputs: SearchStrategy[ListAgentMessagesInput] = st.builds(
    ListAgentMessagesInput, before_sequence=st.none() | int64s, limit=st.none() | int64s
)
snapshots: SearchStrategy[AgentSnapshot] = st.builds(
    AgentSnapshot,
    state=st.none() | agent_states,
    messages=vectors_of(agent_messages),
    pending_interrupts=vectors_of(agent_interrupts),
    tool_calls=vectors_of(agent_tool_calls),
    usage=usages,
    queued_message_count=counts,
)
message_pages: SearchStrategy[AgentMessagePage] = st.builds(
    AgentMessagePage, messages=vectors_of(agent_messages), next_before_sequence=optional_counts
)

optional_booleans: SearchStrategy[bool | None] = st.none() | st.booleans()
tool_policies: SearchStrategy[ToolPolicy] = st.builds(ToolPolicy, effect=tool_effects, requires_approval=optional_booleans)
resolved_policies: SearchStrategy[ResolvedToolPolicy] = st.builds(
    ResolvedToolPolicy, effect=tool_effects, requires_approval=st.booleans()
)
mcp_annotations: SearchStrategy[McpToolAnnotations] = st.builds(
    McpToolAnnotations,
    read_only_hint=optional_booleans,
    destructive_hint=optional_booleans,
    idempotent_hint=optional_booleans,
    open_world_hint=optional_booleans,
)
deferred_tool_calls: SearchStrategy[DeferredToolCall] = st.builds(
    DeferredToolCall, tool_call_id=identifiers, tool_name=identifiers, arguments=texts, policy=resolved_policies
)
turns_completed: SearchStrategy[TurnCompleted] = st.builds(
    TurnCompleted, new_messages=vectors_of(framework_messages), usage=usages
)
tool_calls_requested: SearchStrategy[ToolCallsRequested] = st.builds(
    ToolCallsRequested,
    framework_run_state=texts.filter(bool),
    tool_calls=vectors_of(deferred_tool_calls).filter(bool),
    usage=usages,
)

pending_interrupt_lists: SearchStrategy[PVector[AgentInterrupt]] = vectors_of(agent_interrupts)
string_maps: SearchStrategy[PMap[str, str]] = st.dictionaries(texts, texts, max_size=4).map(pmap)

WIRE_RECORD_STRATEGIES: dict[type[object], SearchStrategy[object]] = {
    AgentSessionStartInput: start_inputs,
    AgentUsage: usages,
    AgentState: agent_states,
    FrameworkMessage: framework_messages,
    AgentMessage: agent_messages,
    AgentToolCall: agent_tool_calls,
    AgentInterrupt: agent_interrupts,
    AgentInterruptResolution: interrupt_resolutions,
    AgentUserMessage: user_messages,
    ToolCallCompleted: tool_call_completions,
    AgentEvent: agent_events,
    SendUserMessageInput: send_user_message_inputs,
    ResolveInterruptInput: resolve_interrupt_inputs,
    ListAgentMessagesInput: list_agent_messages_inputs,
    AgentSnapshot: snapshots,
    AgentMessagePage: message_pages,
    ToolPolicy: tool_policies,
    ResolvedToolPolicy: resolved_policies,
    McpToolAnnotations: mcp_annotations,
    DeferredToolCall: deferred_tool_calls,
    TurnCompleted: turns_completed,
    ToolCallsRequested: tool_calls_requested,
}
"""One strategy per wire record class (every record of values/session.py, values/rpc.py and values/runner.py)."""
