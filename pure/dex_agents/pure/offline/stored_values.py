"""Stored values as Dex holds them: by persisted name and map instance, as wire JSON.

An export carries the committed values and each history step's writes this way (``StoredValue``);
offline, the same shape lets a replay compare what its reducers would write with what Dex committed.

* ``stored_writes(effects)``: the Attribute and map-instance writes a transition stages, as Dex
  records them (a delete is a null value; within one invocation the last write of a key wins).
* ``stored_publishes(effects)``: the Channel messages a transition publishes, by Channel (instance).
* ``apply_writes(values, writes)``: Dex's storage after a commit of ``writes``.
* ``decode_stored(name, value)``: the typed value of one stored JSON value, by its name's wire type.
* ``state_from_values(values, queued)``: the ``SessionState`` the committed values hold (every map
  loaded), from which ``snapshot_of`` gives what ``get_agent_snapshot`` would answer.

Invariant: a value's JSON is the wire module's (``to_json_data`` of the key's type), so two stored
values are equal exactly when their canonical texts are (``same_json``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, TypeAlias

from pyrsistent import PVector as PVectorType
from pyrsistent import pmap, pvector
from returns.pipeline import is_successful
from returns.result import Failure, Result, Success

from dex_agents.pure.machine.effects import (
    DeleteAttribute,
    DeleteMapInstance,
    PublishToChannel,
    PublishToChannelInstance,
    SetAttribute,
    SetMapInstance,
)
from dex_agents.pure.wire.json_value import JsonValue
from dex_agents.pure.values.persistence import (
    INTERRUPT_RESOLUTIONS,
    PERSISTED_KEYS,
    QUEUED_USER_MESSAGES,
    TOOL_CALL_RESULTS,
    AttributeKey,
    AttributeName,
    MapKey,
    MapName,
)
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.values.session import (
    AgentInterrupt,
    AgentMessage,
    AgentState,
    AgentToolCall,
    AgentUsage,
    UserMessageReceipt,
)
from dex_agents.pure.wire import JSON_VALUE_TYPE, WireType, canonical_json, from_json_data, to_json_data

StoredKey: TypeAlias = tuple[str, "str | None"]
"""A persisted name and, for a map, the instance key."""

_VALUE_TYPES: Final[Mapping[str, object]] = {
    **{key.name: key.value_type for key in PERSISTED_KEYS if isinstance(key, AttributeKey | MapKey)},
    QUEUED_USER_MESSAGES.name: QUEUED_USER_MESSAGES.value_type,
    INTERRUPT_RESOLUTIONS.name: INTERRUPT_RESOLUTIONS.value_type,
    TOOL_CALL_RESULTS.name: TOOL_CALL_RESULTS.value_type,
}
"""The type of every stored name's values (Attributes, map instances, Channel messages)."""


def freeze(data: object) -> JsonValue:
    """Plain JSON data (``json.loads``'s) as an immutable ``JsonValue``; ``ValueError`` if it is not JSON."""
    frozen = from_json_data(data, JSON_VALUE_TYPE)
    if not is_successful(frozen):
        raise ValueError(frozen.failure().message)
    return frozen.unwrap()


def same_json(left: JsonValue, right: JsonValue) -> bool:
    """Whether two JSON values are the same JSON (canonical texts equal: ``1`` is not ``true``)."""
    return canonical_json(to_json_data(left, JSON_VALUE_TYPE)) == canonical_json(to_json_data(right, JSON_VALUE_TYPE))


def value_json(name: str, value: object) -> JsonValue:
    """The wire JSON of ``value`` stored under ``name`` (a record or vector, or a plain str or int)."""
    value_type = _VALUE_TYPES.get(name)
    if isinstance(value_type, WireType):
        return freeze(to_json_data(value, value_type))
    if isinstance(value, str | int) and not isinstance(value, bool):
        return value
    raise TypeError(f"{name} cannot hold {type(value).__name__}")


def decode_stored(name: str, value: JsonValue) -> Result[object, str]:
    """The typed value of ``value`` stored under ``name``, or why it cannot be one."""
    value_type = _VALUE_TYPES.get(name)
    if value_type is None:
        return Failure(f"{name} is not a persisted name of the session")
    if isinstance(value_type, WireType):
        decoded = from_json_data(to_json_data(value, JSON_VALUE_TYPE), value_type)
        return Success(decoded.unwrap()) if is_successful(decoded) else Failure(decoded.failure().message)
    if type(value) is value_type:
        return Success(value)
    return Failure(f"{name} holds a {getattr(value_type, '__name__', value_type)}, got {type(value).__name__}")


def stored_writes(effects: Iterable[object]) -> dict[StoredKey, JsonValue]:
    """The Attribute and map-instance writes among ``effects``, by key (null: deleted; last one wins)."""
    writes: dict[StoredKey, JsonValue] = {}
    for effect in effects:
        match effect:
            case SetAttribute(attribute=attribute, value=value):
                writes[(attribute.name, None)] = value_json(attribute.name, value)
            case DeleteAttribute(attribute=attribute):
                writes[(attribute.name, None)] = None
            case SetMapInstance(map=attribute_map, key=key, value=value):
                writes[(attribute_map.name, key)] = value_json(attribute_map.name, value)
            case DeleteMapInstance(map=attribute_map, key=key):
                writes[(attribute_map.name, key)] = None
            case _:
                pass
    return writes


def canonical_stored(name: str, value: JsonValue) -> JsonValue:
    """``value`` stored under ``name`` as this version writes it: decoded and encoded again, so a field
    added since (absent in a value written before it) reads as its default; unchanged when it does not
    decode (the comparison then reports it)."""
    if value is None:
        return None
    decoded = decode_stored(name, value)
    return value_json(name, decoded.unwrap()) if is_successful(decoded) else value


def stored_publishes(effects: Iterable[object]) -> dict[StoredKey, list[JsonValue]]:
    """The Channel messages among ``effects``, by Channel (and ChannelMap instance), in order."""
    published: dict[StoredKey, list[JsonValue]] = {}
    for effect in effects:
        match effect:
            case PublishToChannel(channel=channel, value=value):
                published.setdefault((channel.name, None), []).append(value_json(channel.name, value))
            case PublishToChannelInstance(channel_map=channel_map, key=key, value=value):
                published.setdefault((channel_map.name, key), []).append(value_json(channel_map.name, value))
            case _:
                pass
    return published


def apply_writes(values: Mapping[StoredKey, JsonValue], writes: Mapping[StoredKey, JsonValue]) -> dict[StoredKey, JsonValue]:
    """``values`` after a commit of ``writes`` (a null value deletes its key)."""
    applied = dict(values)
    for key, value in writes.items():
        if value is None:
            applied.pop(key, None)
        else:
            applied[key] = value
    return applied


def _typed(values: Mapping[StoredKey, JsonValue], name: str) -> Result[list[tuple[str | None, object]], str]:
    typed: list[tuple[str | None, object]] = []
    for (stored_name, instance), value in sorted(values.items(), key=lambda item: (item[0][0], item[0][1] or "")):
        if stored_name != name:
            continue
        decoded = decode_stored(name, value)
        if not is_successful(decoded):
            where = name if instance is None else f"{name}/{instance}"
            return Failure(f"stored {where} cannot be decoded: {decoded.failure()}")
        typed.append((instance, decoded.unwrap()))
    return Success(typed)


def state_from_values(values: Mapping[StoredKey, JsonValue], queued_message_count: int) -> Result[SessionState, str]:
    """The session state the stored ``values`` hold, every map loaded (or why a value cannot be read)."""
    parts: dict[str, list[tuple[str | None, object]]] = {}
    for name in (*AttributeName, *MapName):
        typed = _typed(values, name)
        if not is_successful(typed):
            return Failure(typed.failure())
        parts[name] = typed.unwrap()

    def single(name: AttributeName) -> object:
        return next((value for _, value in parts[name]), None)

    agent_state, usage, pending = single(AttributeName.AGENT_STATE), single(AttributeName.AGENT_USAGE), \
        single(AttributeName.PENDING_INTERRUPTS)
    framework_run_state, model_calls = single(AttributeName.FRAMEWORK_RUN_STATE), \
        single(AttributeName.TURN_MODEL_CALL_COUNT)
    messages = [m for _, m in parts[MapName.AGENT_MESSAGES] if isinstance(m, AgentMessage)]
    return Success(SessionState(
        agent_state=agent_state if isinstance(agent_state, AgentState) else None,
        messages=pvector(sorted(messages, key=lambda message: message.sequence)),
        framework_run_state=framework_run_state if isinstance(framework_run_state, str) else None,
        tool_calls=pmap({key: record for key, record in parts[MapName.AGENT_TOOL_CALLS]
                         if key is not None and isinstance(record, AgentToolCall)}),
        pending_interrupts=pvector(i for i in pending if isinstance(i, AgentInterrupt))
        if isinstance(pending, PVectorType) else pvector(),
        usage=usage if isinstance(usage, AgentUsage) else AgentUsage(),
        queued_message_count=queued_message_count,
        turn_model_call_count=model_calls if isinstance(model_calls, int) else 0,
        user_message_receipts=pmap({key: receipt for key, receipt in parts[MapName.USER_MESSAGE_RECEIPTS]
                                    if key is not None and isinstance(receipt, UserMessageReceipt)}),
        unknown_tool_outcomes=pmap({key: record for key, record in parts[MapName.UNKNOWN_TOOL_OUTCOMES]
                                    if key is not None and isinstance(record, AgentToolCall)}),
    ))


__all__ = [
    "canonical_stored",
    "StoredKey",
    "apply_writes",
    "decode_stored",
    "freeze",
    "same_json",
    "state_from_values",
    "stored_publishes",
    "stored_writes",
    "value_json",
]
