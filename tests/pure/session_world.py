"""A model of what Dex holds for one session, driven only by the reducers' effects (the test's shell).

``SessionWorld`` keeps the persisted Attributes, AttributeMaps, Channels, ChannelMaps and the event
Stream. ``apply`` interprets a committed attempt's effects and ending the way the shell does, and stores
every value *through the wire codec* (encode, then decode), so the world holds exactly what Dex would
hand back.
``load`` builds the ``SessionState`` one invocation sees from its Step options: singletons always,
AttributeMaps only when the options load them, and only the loaded instances. ``keep_events`` keeps
the Stream writes of an attempt that failed (Dex commits nothing else of it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar, assert_never

from pyrsistent import PVector as PVectorType
from pyrsistent import pmap, pvector
from pyrsistent.typing import PVector

from dex_agents.pure.machine.effects import (
    DeleteAttribute,
    DeleteMapInstance,
    PublishToChannel,
    PublishToChannelInstance,
    SetAttribute,
    SetMapInstance,
    StepEffect,
    WriteEvent,
)
from dex_agents.pure.machine.endings import AnswerRpc, DeadEnd, GoToSteps
from dex_agents.pure.values.persistence import (
    PENDING_INTERRUPTS,
    AttributeName,
    ChannelKey,
    ChannelMapKey,
    ChannelMapName,
    ChannelName,
    MapKey,
    MapName,
)
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.flow.step_options import StepMovement, StepOptionsSpec
from dex_agents.pure.values.session import (
    AgentEvent,
    AgentInterrupt,
    AgentInterruptResolution,
    AgentMessage,
    AgentState,
    AgentToolCall,
    AgentUsage,
    AgentUserMessage,
    ToolCallCompleted,
    ToolCallStatus,
)
from dex_agents.pure.wire import decode, decode_as, encode, encode_as

R = TypeVar("R")


def through_wire(value: R) -> R:
    """``value`` after a trip through its JSON text, checked to come back equal."""
    decoded = decode(encode(value), type(value)).unwrap()
    assert decoded == value, f"{type(value).__name__} changed on the wire"
    return decoded


def interrupts_through_wire(interrupts: PVector[AgentInterrupt]) -> PVector[AgentInterrupt]:
    wire_type = PENDING_INTERRUPTS.value_type
    assert not isinstance(wire_type, type)
    decoded = decode_as(encode_as(interrupts, wire_type), wire_type).unwrap()
    assert decoded == interrupts
    return decoded


@dataclass
class SessionWorld:
    """Dex's side of one session. Mutable on purpose: it is the test's shell, not the core."""

    agent_state: AgentState | None = None
    framework_run_state: str | None = None
    turn_model_call_count: int | None = None
    pending_interrupts: PVector[AgentInterrupt] = field(default_factory=pvector)
    usage: AgentUsage | None = None
    messages: dict[str, AgentMessage] = field(default_factory=dict)
    tool_calls: dict[str, AgentToolCall] = field(default_factory=dict)
    unknown_tool_outcomes: dict[str, AgentToolCall] = field(default_factory=dict)
    """``UnknownToolOutcomes``: no Step loads it (only ``resolve_tool_outcome``); ``replay``'s fold holds it."""
    queued_user_messages: list[AgentUserMessage] = field(default_factory=list)
    interrupt_resolutions: dict[str, list[AgentInterruptResolution]] = field(default_factory=dict)
    tool_call_results: list[ToolCallCompleted] = field(default_factory=list)
    events: list[AgentEvent] = field(default_factory=list)
    completions_by_call: Counter[tuple[str, str]] = field(default_factory=Counter)
    """``ToolCallCompleted`` publishes per ``(turn_id, tool_call_id)`` (strays not counted)."""

    def channel_size(self, channel: ChannelName) -> int:
        """Messages published on ``channel`` and not yet consumed."""
        match channel:
            case ChannelName.QUEUED_USER_MESSAGES:
                return len(self.queued_user_messages)
            case ChannelName.TOOL_CALL_RESULTS:
                return len(self.tool_call_results)
            case _:
                assert_never(channel)

    def channel_map_size(self, channel_map: ChannelMapName, key: str) -> int:
        """Messages published on the instance ``key`` of ``channel_map`` and not yet consumed."""
        match channel_map:
            case ChannelMapName.INTERRUPT_RESOLUTIONS:
                return len(self.interrupt_resolutions.get(key, []))
            case _:
                assert_never(channel_map)

    def singletons(self, queued_message_count: int | None = None) -> SessionState:
        """What every invocation receives: the singleton Attributes and the queue size, no map."""
        return SessionState(
            agent_state=self.agent_state,
            messages=pvector(),
            framework_run_state=self.framework_run_state,
            tool_calls=pmap(),
            pending_interrupts=self.pending_interrupts,
            usage=AgentUsage() if self.usage is None else self.usage,
            queued_message_count=len(self.queued_user_messages) if queued_message_count is None else queued_message_count,
            turn_model_call_count=self.turn_model_call_count or 0,
        )

    def full_state(self) -> SessionState:
        """Everything loaded (what ``get_agent_snapshot`` and ``replay`` see)."""
        base = self.singletons()
        ordered = sorted(self.messages.values(), key=lambda message: message.sequence)
        return SessionState(
            agent_state=base.agent_state,
            messages=pvector(ordered),
            framework_run_state=base.framework_run_state,
            tool_calls=pmap(self.tool_calls),
            pending_interrupts=base.pending_interrupts,
            usage=base.usage,
            queued_message_count=base.queued_message_count,
            turn_model_call_count=base.turn_model_call_count,
            unknown_tool_outcomes=pmap(self.unknown_tool_outcomes),
        )

    def load(self, options: StepOptionsSpec, for_wait: bool = False) -> SessionState:
        """The state an invocation with ``options`` sees (``for_wait``: its ``wait_for`` method)."""
        base = self.singletons()
        maps = () if for_wait else tuple(options.execute_load_attribute_maps)
        instances = options.wait_for_load_attribute_map_instances if for_wait else options.execute_load_attribute_map_instances
        messages: list[AgentMessage] = []
        calls: dict[str, AgentToolCall] = {}
        if MapName.AGENT_MESSAGES in maps:
            messages = sorted(self.messages.values(), key=lambda message: message.sequence)
        if MapName.AGENT_TOOL_CALLS in maps:
            calls = dict(self.tool_calls)
        for instance in instances:
            match instance.name:
                case MapName.AGENT_TOOL_CALLS:
                    if instance.key in self.tool_calls:
                        calls[instance.key] = self.tool_calls[instance.key]
                case MapName.AGENT_MESSAGES:
                    if instance.key in self.messages:
                        messages.append(self.messages[instance.key])
                case (MapName.USER_MESSAGE_RECEIPTS | MapName.SESSION_REWINDS | MapName.UNKNOWN_TOOL_OUTCOMES
                      | MapName.TOOL_CALL_CANCELLATIONS):
                    pass  # no Step of this machine loads them (their features have their own tests)
        return SessionState(
            agent_state=base.agent_state,
            messages=pvector(messages),
            framework_run_state=base.framework_run_state,
            tool_calls=pmap(calls),
            pending_interrupts=base.pending_interrupts,
            usage=base.usage,
            queued_message_count=base.queued_message_count,
            turn_model_call_count=base.turn_model_call_count,
        )

    def keep_events(self, effects: Sequence[StepEffect]) -> None:
        """A failed attempt's effects: only its events reach the Stream (nothing else is committed)."""
        for effect in effects:
            assert isinstance(effect, WriteEvent), f"a failed attempt staged {effect}"
            self.events.append(through_wire(effect.event))

    def apply(self, effects: Sequence[StepEffect], ending: GoToSteps | DeadEnd | AnswerRpc) -> list[StepMovement]:
        """Perform a committed attempt's effects in order, then its ending; returns the movements it decided."""
        for effect in effects:
            match effect:
                case SetAttribute(attribute=attribute, value=value):
                    assert attribute.holds(value), f"{attribute.name} cannot hold {value!r}"
                    self._set_attribute(attribute.name, value)
                case DeleteAttribute(attribute=attribute):
                    self._delete_attribute(attribute.name)
                case SetMapInstance(map=MapKey(name=MapName.AGENT_MESSAGES), key=key, value=AgentMessage() as message):
                    assert key not in self.messages, f"message {key} written twice"
                    self.messages[key] = through_wire(message)
                case SetMapInstance(map=MapKey(name=MapName.AGENT_TOOL_CALLS), key=key, value=AgentToolCall() as record):
                    assert key == record.tool_call_id
                    self.tool_calls[key] = through_wire(record)
                case SetMapInstance(map=MapKey(name=MapName.UNKNOWN_TOOL_OUTCOMES), key=key,
                                    value=AgentToolCall() as record):
                    assert key == record.tool_call_id and record.status is ToolCallStatus.OUTCOME_UNKNOWN
                    assert self.tool_calls.get(key) == through_wire(record), "an unknown outcome not the turn's record"
                    self.unknown_tool_outcomes[key] = through_wire(record)
                case SetMapInstance():
                    raise AssertionError(f"map/value mismatch in {effect}")
                case DeleteMapInstance(map=MapKey(name=MapName.AGENT_TOOL_CALLS), key=key):
                    assert key in self.tool_calls, f"deleting absent record {key}"
                    del self.tool_calls[key]
                case DeleteMapInstance():
                    raise AssertionError(f"messages are never deleted: {effect}")
                case PublishToChannel(channel=ChannelKey(name=ChannelName.QUEUED_USER_MESSAGES), value=AgentUserMessage() as message):
                    self.queued_user_messages.append(through_wire(message))
                case PublishToChannel(channel=ChannelKey(name=ChannelName.TOOL_CALL_RESULTS), value=ToolCallCompleted() as completion):
                    record = self.tool_calls[completion.tool_call_id]
                    assert record.status.is_final, "ToolCallCompleted for an open record"
                    self.completions_by_call[(record.turn_id, record.tool_call_id)] += 1
                    self.tool_call_results.append(through_wire(completion))
                case PublishToChannel():
                    raise AssertionError(f"channel/value mismatch in {effect}")
                case PublishToChannelInstance(
                    channel_map=ChannelMapKey(name=ChannelMapName.INTERRUPT_RESOLUTIONS),
                    key=key,
                    value=AgentInterruptResolution() as resolution,
                ):
                    assert key == resolution.interrupt_id
                    self.interrupt_resolutions.setdefault(key, []).append(through_wire(resolution))
                case PublishToChannelInstance():
                    raise AssertionError(f"channel map/value mismatch in {effect}")
                case WriteEvent(event=event):
                    self.events.append(through_wire(event))
                case _:
                    assert_never(effect)
        match ending:
            case GoToSteps(movements=moved):
                return list(moved)
            case DeadEnd() | AnswerRpc():
                return []
            case _:
                assert_never(ending)

    def _set_attribute(self, name: AttributeName, value: object) -> None:
        match name:
            case AttributeName.AGENT_STATE:
                assert isinstance(value, AgentState)
                self.agent_state = through_wire(value)
            case AttributeName.FRAMEWORK_RUN_STATE:
                assert isinstance(value, str) and value != ""
                self.framework_run_state = value
            case AttributeName.PENDING_INTERRUPTS:
                assert isinstance(value, PVectorType)
                self.pending_interrupts = interrupts_through_wire(value)
            case AttributeName.AGENT_USAGE:
                assert isinstance(value, AgentUsage)
                self.usage = through_wire(value)
            case AttributeName.TURN_MODEL_CALL_COUNT:
                assert isinstance(value, int) and not isinstance(value, bool) and value >= 1
                assert value == (self.turn_model_call_count or 0) + 1, "the count moves by one per model call"
                self.turn_model_call_count = value
            case AttributeName.HISTORY_SUMMARY | AttributeName.COMPACTION_REQUESTED:
                raise AssertionError(f"the machine's sessions do not compact, yet {name} was written")
            case AttributeName.TURN_CANCELLATION:
                raise AssertionError("no operator cancels in this machine, yet TurnCancellation was written")

    def _delete_attribute(self, name: AttributeName) -> None:
        match name:
            case AttributeName.FRAMEWORK_RUN_STATE:
                assert self.framework_run_state is not None, "deleting an absent FrameworkRunState"
                self.framework_run_state = None
            case AttributeName.TURN_MODEL_CALL_COUNT:
                assert self.turn_model_call_count is not None, "deleting an absent TurnModelCallCount"
                self.turn_model_call_count = None
            case _:
                raise AssertionError(f"only the turn's run state and model call count are ever deleted, not {name}")
