"""The frameworks the demo support agent runs on (``--framework``), importable without Dex or a framework.

Invariant: every framework's demo agent has the same Flow type, turns, tools and refund log, and its
module offers ``DEMO_TURNS``, ``check_model(model)`` and ``support_flow()`` (for ``dex-agents worker``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class Framework(StrEnum):
    """The agent frameworks the demo support agent runs on (``--framework``; ``openai``: the client, no framework)."""

    PYDANTIC_AI = "pydantic-ai"
    OPENAI_AGENTS = "openai-agents"
    LANGCHAIN = "langchain"
    OPENAI = "openai"


DEMO_AGENTS: Final = {
    Framework.PYDANTIC_AI: "dex_agents.demo.support_agent:support_flow",
    Framework.OPENAI_AGENTS: "dex_agents.demo.openai_agents_agent:support_flow",
    Framework.LANGCHAIN: "dex_agents.demo.langchain_agent:support_flow",
    Framework.OPENAI: "dex_agents.demo.openai_chat_agent:support_flow",
}
"""The demo support agent on each framework, as ``dex-agents worker --agent`` names it (same Flow type,
turns, tools and refund log)."""

DEMO_AGENT: Final = DEMO_AGENTS[Framework.PYDANTIC_AI]
"""The default demo agent."""

SUBAGENT_DEMO_AGENT: Final = "dex_agents.demo.subagent_agent:support_flows"
"""``demo --subagent``: the support agent delegating refunds to a billing agent (Pydantic AI)."""

__all__ = ["DEMO_AGENT", "DEMO_AGENTS", "SUBAGENT_DEMO_AGENT", "Framework"]
