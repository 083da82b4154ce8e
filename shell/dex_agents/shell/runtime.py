"""``SessionRuntime``: what every Step and RPC of one session Flow shares (never persisted)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, final

from dex import Flow, Step, Stream

from dex_agents.pure.flow.step_options import RetryOverrides
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.machine.reducers import reduce_follow_up, reduce_rpc, reduce_step, reduce_wait
from dex_agents.pure.machine.rpc_calls import RpcCall
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import SessionInput, StepInput, WaitInput
from dex_agents.pure.machine.transition import RpcTransition, StepTransition, WaitTransition
from dex_agents.pure.values.session import AgentEvent
from dex_agents.shell.history import MessageHistory
from dex_agents.shell.runner import AgentFrameworkRunner
from dex_agents.shell.start_confirmation import StartConfirmations
from dex_agents.shell.timing import SessionTiming


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRuntime:
    """The runner, the reducers' configuration, the clock, the Flow's event Stream, its Step classes,
    an optional observer of every input the session reduces (``fact_observer``, the Flow option) and the
    Worker's cache of committed messages (``history``).

    Invariant: ``step_classes`` holds one registered Step class per ``StepType`` (the class name is
    the Step type), so every movement target resolves.
    """

    runner: AgentFrameworkRunner
    config: SessionConfig
    timing: SessionTiming
    events: Stream[AgentEvent]
    step_classes: Mapping[StepType, type[Step[Any]]]
    fact_observer: Callable[[SessionInput], None] | None = None
    sub_agents: Mapping[str, Flow[Any]] = field(default_factory=dict)
    """The Flows this Flow's sub-agent tools start child sessions of, by Flow type."""
    history: MessageHistory = field(default_factory=MessageHistory)
    """This Flow's cache of committed messages on this Worker (``shell.history``)."""
    confirmations: StartConfirmations = field(default_factory=StartConfirmations)
    """The reader that confirms a single-attempt tool's start through Dex (``shell.start_confirmation``)."""
    retry_overrides: RetryOverrides = field(init=False)
    """The retry options that replace the flow table rows' (``SessionConfig.retry_overrides``: ``model_retry``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "retry_overrides", self.config.retry_overrides())

    def reduce_step(self, state: SessionState, step_input: StepInput) -> StepTransition:
        """``reduce_step`` under this Flow's configuration; the observer (if any) sees the input first."""
        self._observe(step_input)
        return reduce_step(state, self.config, step_input)

    def reduce_follow_up(self, previous: StepTransition, follow_up: StepInput) -> StepTransition:
        """``reduce_follow_up`` under this Flow's configuration; the observer (if any) sees the input first."""
        self._observe(follow_up)
        return reduce_follow_up(self.config, previous, follow_up)

    def reduce_wait(self, state: SessionState, wait_input: WaitInput) -> WaitTransition:
        """``reduce_wait`` under this Flow's configuration; the observer (if any) sees the input first."""
        self._observe(wait_input)
        return reduce_wait(state, self.config, wait_input)

    def reduce_rpc(self, state: SessionState, call: RpcCall) -> RpcTransition:
        """``reduce_rpc`` under this Flow's configuration; the observer (if any) sees the call first."""
        self._observe(call)
        return reduce_rpc(state, self.config, call)

    def _observe(self, session_input: SessionInput) -> None:
        if self.fact_observer is not None:
            self.fact_observer(session_input)

    def step_class_of(self, step_type: StepType) -> type[Step[Any]]:
        """The Step class registered for ``step_type``."""
        return self.step_classes[step_type]


__all__ = ["SessionRuntime"]
