"""The adapter conformance suite, run for the OpenAI Agents SDK adapter (test IDs end with ``[openai_agents]``)."""

from __future__ import annotations

from dex_agents.testing.conformance import AdapterConformanceSuite, adapter_fixture
from tests.adapters.openai_agents_conformance import OpenAIAgentsConformance


class TestOpenAIAgentsConformance(AdapterConformanceSuite):
    conformance_adapter = adapter_fixture(OpenAIAgentsConformance())
