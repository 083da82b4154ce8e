"""``AdapterConformanceSuite``: every conformance scenario, for an adapter's own pytest run.

An adapter author writes one test module::

    from dex_agents.testing.conformance import AdapterConformanceSuite, adapter_fixture

    class TestMyAdapterConformance(AdapterConformanceSuite):
        conformance_adapter = adapter_fixture(MyConformanceAdapter())

The plugin's fixtures (``dex_engine``, ``agent_environment``, ``agent_sessions``, ``killable_worker``)
start the engine and Workers; test IDs end with the adapter's name (``...[my_adapter]``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dex_agents.testing.conformance.adapter import ConformanceAdapter
from dex_agents.testing.conformance.fixtures import Conformance
from dex_agents.testing.conformance.suite_cancellation import CancellationConformance
from dex_agents.testing.conformance.suite_compaction import CompactionConformance
from dex_agents.testing.conformance.suite_crashes import CrashConformance
from dex_agents.testing.conformance.suite_failures import FailureConformance
from dex_agents.testing.conformance.suite_operators import OperatorConformance
from dex_agents.testing.conformance.suite_subagents import SubAgentConformance
from dex_agents.testing.conformance.suite_turns import TurnConformance
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory


class AdapterConformanceSuite(TurnConformance, FailureConformance, CrashConformance, CompactionConformance,
                              OperatorConformance, CancellationConformance, SubAgentConformance):
    """All scenarios; a subclass sets ``conformance_adapter = adapter_fixture(...)``."""

    @pytest.fixture
    def conformance(self, conformance_adapter: ConformanceAdapter, agent_environment: AgentEnvironmentFactory,
                    agent_sessions: AgentSessionsFactory, killable_worker: KillableWorkerFactory,
                    tmp_path: Path) -> Conformance:
        return Conformance(conformance_adapter, agent_environment, agent_sessions, killable_worker, tmp_path)


__all__ = ["AdapterConformanceSuite"]
