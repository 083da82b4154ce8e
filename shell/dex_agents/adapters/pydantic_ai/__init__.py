"""The Pydantic AI adapter: ``create_pydantic_ai_session_flow(agent, flow_type, **options)``.

Needs the ``pydantic-ai`` extra (from a checkout: ``pip install ".[pydantic-ai]"``).
"""

from dex_agents.adapters.kit import DEX_EFFECT_METADATA_KEY
from dex_agents.adapters.pydantic_ai.runner import PydanticAIRunner, create_pydantic_ai_session_flow

__all__ = ["DEX_EFFECT_METADATA_KEY", "PydanticAIRunner", "create_pydantic_ai_session_flow"]
