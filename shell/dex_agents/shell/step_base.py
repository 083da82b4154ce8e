"""``SessionStep``: the base of the session's Step classes (one per spec Step type).

Invariants: a Step class's name is its spec Step type; its static options come from its row of the
pure flow table (through ``step_options_for``; a Flow's ``model_retry`` replaces the model call Steps'
retry, ``with_retries``), except for the Steps whose input is a tool call ID,
which are only ever reached through movements carrying their complete per-call options, so statically
they only set their row's durability.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from dex import Step, StepOptions

from dex_agents.pure.flow.rows import StepInputKind
from dex_agents.pure.flow.table import STEP_TABLE
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.flow.step_options import step_options_for, with_retries
from dex_agents.shell.dex_options import dex_durability, dex_step_options
from dex_agents.shell.runtime import SessionRuntime

InputT = TypeVar("InputT")


class SessionStep(Step[InputT], Generic[InputT]):
    """A Step of one session Flow; holds the Flow's ``SessionRuntime``."""

    step_type: StepType

    def __init__(self, runtime: SessionRuntime) -> None:
        self.runtime = runtime

    def get_step_type(self) -> str:
        return self.step_type.value

    def get_step_options(self) -> StepOptions | None:
        row = STEP_TABLE[self.step_type]
        if row.input is StepInputKind.TOOL_CALL_ID:
            durability = dex_durability(row.durability)
            return StepOptions(wait_for_durability=durability, execute_durability=durability)
        options = with_retries(step_options_for(self.step_type), self.step_type, self.runtime.retry_overrides)
        return dex_step_options(options, self.runtime.step_class_of)


__all__ = ["SessionStep"]
