"""What an adapter author provides to the conformance suite, and how the suite builds a Flow.

``ConformanceAdapter`` is the one thing to write: ``build_flow`` makes a session Flow from the
framework's agent with a test model that follows a ``ScriptedModel`` and the suite's tools. The
suite builds Flows both in the test process and in Worker children (crash tests), so an adapter
class must be importable at module level and constructible without arguments.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar, Protocol, final

from dex_agents.adapters.kit import SessionFlowOptions
from dex_agents.shell.timing import SessionTiming
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.testing.conformance.model import ScriptedModel
from dex_agents.testing.conformance.script import conversation
from dex_agents.testing.conformance.tools import ASK_BILLING, ConformanceTool, conformance_tools
from dex_agents.shell.subagents import subagent_tool


class ConformanceAdapter(Protocol):
    """An adapter under test.

    ``name`` names the adapter in test IDs (``[pydantic_ai]``). ``build_flow`` returns a session
    Flow of type ``flow_type`` whose agent:
        * calls ``model.respond(seen)`` once per model call, ``seen`` being the framework's model
          input as ``SeenMessage``s, and answers with the ``ModelReply`` (text, reasoning, tool calls,
          usage; streamed when ``model.streaming``, else with a model that cannot stream; a streaming
          test model may estimate its token counts), or raises
          for a ``ScriptedFailure`` the framework error its runner treats as retryable or not;
        * has the ``tools`` (each ``function`` with its ``effect`` as framework metadata);
        * with ``structured_output``, returns ``{"status": str}`` as its structured final output
          (``ModelReply.output``), else text;
        * is created with ``options`` passed to the adapter's Flow factory unchanged; when they hold
          ``sub_agents``, the agent also has each one's tool (the adapter's ``native_subagent_tool``).
    """

    name: ClassVar[str]

    def build_flow(self, flow_type: str, model: ScriptedModel, tools: Sequence[ConformanceTool], *,
                   structured_output: bool, options: SessionFlowOptions) -> AgentSessionFlow: ...


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ConformanceSetup:
    """Everything that decides a test's Flow, as plain data a Worker child can receive.

    ``options`` holds only JSON-able ``SessionFlowOptions`` (``interrupt_deadline_ms``,
    ``max_model_calls_per_turn``, ``default_tool_effect``, ``event_stream_capacity_bytes``).
    """

    adapter: str
    flow_type: str
    state_directory: str
    streaming: bool
    structured_output: bool
    options: dict[str, int | str | None]
    heartbeat_interval_ms: int | None = None
    """The Steps' background heartbeat period (``SessionTiming``), ``None``: the session's default."""
    sub_agent: bool = False
    """The Flow delegates ``ASK_BILLING`` to a child Flow of the same adapter (``<flow_type>-billing``)."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> ConformanceSetup:
        return ConformanceSetup(**json.loads(text))


def adapter_path(adapter: ConformanceAdapter) -> str:
    """``module:qualname`` of the adapter's class."""
    kind = type(adapter)
    return f"{kind.__module__}:{kind.__qualname__}"


def load_adapter(path: str) -> ConformanceAdapter:
    """A new adapter from ``module:qualname``."""
    module_name, _, qualname = path.partition(":")
    found: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        found = getattr(found, part)
    if not callable(found):
        raise TypeError(f"{path} is not a class")
    adapter = found()
    if not callable(getattr(adapter, "build_flow", None)):
        raise TypeError(f"{path} is not a ConformanceAdapter (it has no build_flow)")
    return adapter  # type: ignore[no-any-return]


def build_conformance_flows(adapter: ConformanceAdapter, setup: ConformanceSetup) -> list[AgentSessionFlow]:
    """The Flow of ``setup`` (first), the suite's script and tools through ``adapter``; with
    ``setup.sub_agent``, then its billing child, a Flow of the same script and tools that the first
    one's ``ASK_BILLING`` calls delegate to (the adapter's factory gets ``sub_agents``; its
    ``build_flow`` adds each one's ``native_subagent_tool`` to the agent's tools)."""
    directory = Path(setup.state_directory)
    model = ScriptedModel(conversation, directory, streaming=setup.streaming)
    options: SessionFlowOptions = {}
    for key, value in setup.options.items():
        options[key] = value  # type: ignore[literal-required]
    if setup.heartbeat_interval_ms is not None:
        options["timing"] = SessionTiming(heartbeat_interval_seconds=setup.heartbeat_interval_ms / 1000)
    children: list[AgentSessionFlow] = []
    if setup.sub_agent:
        children.append(adapter.build_flow(f"{setup.flow_type}-billing", model, conformance_tools(directory),
                                           structured_output=False, options=options.copy()))
        options["sub_agents"] = [subagent_tool(children[0], name=ASK_BILLING,
                                               description="Ask the billing agent to do a billing task.")]
    parent = adapter.build_flow(setup.flow_type, model, conformance_tools(directory),
                                structured_output=setup.structured_output, options=options)
    return [parent, *children]


def build_conformance_flow(adapter: ConformanceAdapter, setup: ConformanceSetup) -> AgentSessionFlow:
    """The Flow of ``setup`` (see ``build_conformance_flows``)."""
    return build_conformance_flows(adapter, setup)[0]


__all__ = ["ConformanceAdapter", "ConformanceSetup", "adapter_path", "build_conformance_flow", "build_conformance_flows",
           "load_adapter"]
