"""The adapter conformance suite, run for the ``openai_chat`` adapter (test IDs end with ``[openai_chat]``)."""

from __future__ import annotations

from dex_agents.testing.conformance import AdapterConformanceSuite, adapter_fixture
from tests.adapters.openai_chat_conformance import OpenAIChatConformance


class TestOpenAIChatConformance(AdapterConformanceSuite):
    conformance_adapter = adapter_fixture(OpenAIChatConformance())
