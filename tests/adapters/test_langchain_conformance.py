"""The adapter conformance suite, run for the LangChain adapter (test IDs end with ``[langchain]``)."""

from __future__ import annotations

from dex_agents.testing.conformance import AdapterConformanceSuite, adapter_fixture
from tests.adapters.langchain_conformance import LangChainConformance


class TestLangChainConformance(AdapterConformanceSuite):
    conformance_adapter = adapter_fixture(LangChainConformance())
