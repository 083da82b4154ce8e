"""``SessionFlowOptions``: the options of ``create_agent_session_flow``, typed for pass-through.

An adapter's factory takes ``**options: Unpack[SessionFlowOptions]`` and hands them on unchanged, so
a misspelt or mistyped option is a type error (and a ``TypeError`` at run time), never swallowed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypedDict

from dex_agents.pure.flow.rows import RetryPolicy
from dex_agents.pure.machine.compaction import CompactionPolicy
from dex_agents.pure.values.runner import ToolPolicy
from dex_agents.pure.machine.step_inputs import SessionInput
from dex_agents.pure.values.session import ToolEffect
from dex_agents.shell.subagents import SubAgentTool
from dex_agents.shell.timing import SessionTiming


class SessionFlowOptions(TypedDict, total=False):
    """Keyword options of ``create_agent_session_flow`` (see its docstring for each)."""

    tool_policies: Mapping[str, ToolPolicy] | None
    default_tool_effect: ToolEffect | str
    event_stream_capacity_bytes: int
    interrupt_deadline_ms: int | None
    max_model_calls_per_turn: int
    timing: SessionTiming | None
    fact_observer: Callable[[SessionInput], None] | None
    compaction: CompactionPolicy | None
    model_retry: RetryPolicy | None
    sub_agents: Sequence[SubAgentTool]


__all__ = ["SessionFlowOptions"]
