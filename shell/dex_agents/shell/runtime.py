"""``SessionRuntime``: what every Step and RPC of one session Flow shares (never persisted)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, final

from dex import Step, Stream

from dex_agents.pure.persistence import StepType
from dex_agents.pure.reducers import reduce
from dex_agents.pure.state import SessionConfig, SessionState
from dex_agents.pure.step_inputs import SessionInput
from dex_agents.pure.transition import Transition
from dex_agents.pure.values import AgentEvent
from dex_agents.shell.runner import AgentFrameworkRunner
from dex_agents.shell.timing import SessionTiming


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRuntime:
    """The runner, the reducers' configuration, the clock, the Flow's event Stream, its Step classes
    and an optional observer of every fact the session reduces.

    Invariant: ``step_classes`` holds one registered Step class per ``StepType`` (the class name is
    the Step type), so every movement target resolves.
    """

    runner: AgentFrameworkRunner
    config: SessionConfig
    timing: SessionTiming
    events: Stream[AgentEvent]
    step_classes: Mapping[StepType, type[Step[Any]]]
    fact_observer: Callable[[SessionInput], None] | None = None

    def reduce(self, state: SessionState, session_input: SessionInput) -> Transition:
        """``reduce`` under this Flow's configuration; the fact observer (if any) sees the fact first."""
        if self.fact_observer is not None:
            self.fact_observer(session_input)
        return reduce(state, self.config, session_input)

    def step_class_of(self, step_type: StepType) -> type[Step[Any]]:
        """The Step class registered for ``step_type``."""
        return self.step_classes[step_type]


__all__ = ["SessionRuntime"]
