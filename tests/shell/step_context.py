"""An in-memory Dex Step Context for running one session Step handler without an engine or Worker.

``StepContext`` implements the few SDK hooks the session's gather, perform and event writer reach
(``_get_attribute``, ``_set_attribute``, ``_channel_results``, ``_write_stream`` ...), holding values as
Python objects keyed by ``(definition name, instance)``. ``holding(state)`` loads a ``SessionState`` into
it as Dex would hold it, so a test builds the state with the pure reducers and then runs the shell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from dex import AsyncContext, RecoveryErrorInfo, StepDecision
from dex.step import DecisionKind

from dex_agents.pure.machine.keys import message_sequence_key
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.values.session import AgentEvent
from dex_agents.shell.definitions import (
    AGENT_MESSAGES,
    AGENT_STATE,
    AGENT_TOOL_CALLS,
    AGENT_USAGE,
    FRAMEWORK_RUN_STATE,
    PENDING_INTERRUPTS,
    TURN_MODEL_CALL_COUNT,
)

Key = tuple[str, str | None]


class StepContext:
    """A Step invocation's Context, in memory (see the module docstring)."""

    def __init__(
        self,
        *,
        attributes: Mapping[Key, object] | None = None,
        consumed: Mapping[Key, Sequence[object]] | None = None,
        channel_sizes: Mapping[Key, int] | None = None,
        timer_fired: bool = False,
        recovery_error: RecoveryErrorInfo | None = None,
        flow_id: str = "session-1",
        run_id: str = "run-1",
        step_execution_id: str = "Step-1",
        attempt: int = 1,
    ) -> None:
        self.attributes: dict[Key, object] = dict(attributes or {})
        self.consumed = dict(consumed or {})
        self.channel_sizes = dict(channel_sizes or {})
        self.timer_fired = timer_fired
        self.recovery_error = recovery_error
        self.flow_id = flow_id
        self.run_id = run_id
        self.step_execution_id = step_execution_id
        self.attempt = attempt
        self.writes: list[tuple[str, Key, object]] = []
        self.published: list[tuple[Key, object]] = []
        self.events: list[AgentEvent] = []
        self.recorded: dict[str, object] = {}
        self.heartbeats = 0

    @staticmethod
    def holding(state: SessionState, **options: Any) -> StepContext:
        """A Context whose Attributes and AttributeMaps hold ``state`` (what the Step's loads return)."""
        attributes: dict[Key, object] = {
            (PENDING_INTERRUPTS.name, None): state.pending_interrupts,
            (AGENT_USAGE.name, None): state.usage,
        }
        if state.agent_state is not None:
            attributes[(AGENT_STATE.name, None)] = state.agent_state
        if state.framework_run_state is not None:
            attributes[(FRAMEWORK_RUN_STATE.name, None)] = state.framework_run_state
        if state.turn_model_call_count:
            attributes[(TURN_MODEL_CALL_COUNT.name, None)] = state.turn_model_call_count
        for record in state.tool_calls.values():
            attributes[(AGENT_TOOL_CALLS.name, record.tool_call_id)] = record
        for message in state.messages:
            attributes[(AGENT_MESSAGES.name, message_sequence_key(message.sequence))] = message
        return StepContext(attributes=attributes, **options)

    def as_context(self) -> AsyncContext:
        return cast(AsyncContext, self)

    # -- the SDK hooks the session's definitions call -------------------------------------------

    def _get_attribute(self, definition: Any, instance: str | None) -> object:
        return self.attributes.get((definition.name, instance))

    def _attribute_map_keys(self, definition: Any) -> tuple[str, ...]:
        return tuple(sorted(str(key) for name, key in self.attributes if name == definition.name and key is not None))

    def _set_attribute(self, definition: Any, instance: str | None, value: object) -> None:
        self.writes.append(("set", (definition.name, instance), value))

    def _delete_attribute(self, definition: Any, instance: str | None) -> None:
        self.writes.append(("delete", (definition.name, instance), None))

    def _channel_size(self, definition: Any, instance: str | None) -> int:
        return self.channel_sizes.get((definition.name, instance), 0)

    def _channel_results(self, definition: Any, instance: str | None) -> tuple[object, ...]:
        return tuple(self.consumed.get((definition.name, instance), ()))

    def _publish_channel(self, definition: Any, instance: str | None, value: object) -> None:
        self.published.append(((definition.name, instance), value))

    def _write_stream(self, _definition: Any, value: AgentEvent) -> None:
        self.events.append(value)

    # -- the Context methods the session calls --------------------------------------------------

    def has_timer_fired(self, index: int | None = None) -> bool:
        return self.timer_fired

    def is_cancellation_requested(self) -> bool:
        return False

    def record_event(self, name: str, value: object) -> None:
        self.recorded[name] = value  # the last invocation's (a test may run several on one Context)

    async def heartbeat(self, value: object = None) -> None:
        self.heartbeats += 1


def moved_to(decision: StepDecision) -> list[tuple[str, object]]:
    """The Step types and inputs a ``next`` decision moves to (``[]`` for a dead end)."""
    if decision.kind is DecisionKind.DEAD_END:
        return []
    assert decision.kind is DecisionKind.NEXT, decision
    return [(movement.step.__name__, movement.input) for movement in decision.movements]


__all__ = ["StepContext", "moved_to"]
