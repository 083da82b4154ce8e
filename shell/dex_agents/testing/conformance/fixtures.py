"""The suite's fixture: ``conformance.session(...)`` builds a Flow through the adapter under test.

Also ``adapter_fixture(*adapters)``: the ``conformance_adapter`` fixture an adapter's test class
declares, parametrized so every test ID names the adapter (``[pydantic_ai]``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Unpack, final

import pytest

from dex_agents.adapters.kit import SessionFlowOptions
from dex_agents.testing.conformance.adapter import ConformanceAdapter, build_conformance_flows
from dex_agents.testing.conformance.harness import ConformanceSession, new_setup
from dex_agents.testing.conformance.model import SeenMessage
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory


@final
class Conformance:
    """Makes ``ConformanceSession``s for one test (see ``session``)."""

    def __init__(self, adapter: ConformanceAdapter, agent_environment: AgentEnvironmentFactory,
                 agent_sessions: AgentSessionsFactory, killable_worker: KillableWorkerFactory,
                 directory: Path) -> None:
        self.adapter = adapter
        self._environment = agent_environment
        self._sessions = agent_sessions
        self._killable_worker = killable_worker
        self._directory = directory
        self._count = 0

    def session(self, *, streaming: bool = True, structured_output: bool = False, worker_in_child: bool = False,
                heartbeat_interval_ms: int | None = None, sub_agent: bool = False,
                **options: Unpack[SessionFlowOptions]) -> ConformanceSession:
        """A new session of a new Flow; its Worker runs in this process, or in a child the test
        starts with ``start_worker`` (for SIGKILL). ``heartbeat_interval_ms``: the Steps' background
        heartbeat period (a tool learns of its cancellation at its next heartbeat); default the session's.
        ``sub_agent``: the Flow delegates ``ASK_BILLING`` to a child Flow, served by the same Worker."""
        self._count += 1
        state_directory = self._directory / f"conformance-{self._count}"
        state_directory.mkdir(parents=True)
        setup = replace(new_setup(self.adapter, state_directory, streaming=streaming,
                                  structured_output=structured_output, options=options,
                                  heartbeat_interval_ms=heartbeat_interval_ms), sub_agent=sub_agent)
        flows = build_conformance_flows(self.adapter, setup)
        flow = flows[0]
        environment = self._environment(flows, is_worker_in_process=not worker_in_child)
        sessions = self._sessions(environment, flow, timeout=60.0)

        def start_worker(module: str, variables: dict[str, str]) -> Any:
            return self._killable_worker(module, environment=variables)

        return ConformanceSession(setup, sessions, environment.server_address,
                                  start_worker if worker_in_child else None)


def adapter_fixture(*adapters: ConformanceAdapter) -> Any:
    """The ``conformance_adapter`` fixture of a test class, one parameter per adapter (ID: its name)."""

    @pytest.fixture(params=list(adapters), ids=[adapter.name for adapter in adapters])
    def conformance_adapter(self: object, request: pytest.FixtureRequest) -> ConformanceAdapter:
        return request.param  # type: ignore[no-any-return]

    return conformance_adapter


def assert_tool_results_follow_calls(seen: Sequence[SeenMessage]) -> None:
    """OpenAI's rule, for one model input: right after an assistant message with tool calls come one
    result per call (in any order), and nowhere else is there a tool result."""
    index = 0
    while index < len(seen):
        message = seen[index]
        index += 1
        if message.role == "tool":
            raise AssertionError(f"tool result {message.tool_call_id!r} does not follow its call: {list(seen)}")
        if message.role != "assistant" or not message.tool_calls:
            continue
        expected = sorted(call.tool_call_id for call in message.tool_calls)
        answered: list[str] = []
        while index < len(seen) and seen[index].role == "tool":
            answered.append(seen[index].tool_call_id or "")
            index += 1
        if sorted(answered) != expected:
            raise AssertionError(f"calls {expected} were answered by {answered}: {list(seen)}")


ConformanceFixture = Callable[..., Conformance]

__all__ = ["Conformance", "adapter_fixture", "assert_tool_results_follow_calls"]
