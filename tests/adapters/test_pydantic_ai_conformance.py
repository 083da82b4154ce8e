"""The adapter conformance suite, run for the Pydantic AI adapter (test IDs end with ``[pydantic_ai]``)."""

from __future__ import annotations

from dex_agents.testing.conformance import AdapterConformanceSuite, adapter_fixture
from tests.adapters.pydantic_ai_conformance import PydanticAIConformance


class TestPydanticAIConformance(AdapterConformanceSuite):
    conformance_adapter = adapter_fixture(PydanticAIConformance())
