"""The LangChain adapter: ``create_langchain_session_flow(model, tools, flow_type, **options)``.

A session Flow from a LangChain chat model (``BaseChatModel``) and its tools (``BaseTool``s), the
pieces of ``langchain.agents.create_agent``; langgraph is not needed. Needs the ``langchain`` extra
(from a checkout: ``pip install ".[langchain]"``).
"""

from dex_agents.adapters.kit import DEX_EFFECT_METADATA_KEY
from dex_agents.adapters.langchain.runner import LangChainRunner, create_langchain_session_flow, is_non_retryable
from dex_agents.adapters.langchain.structured_output import OUTPUT_NOT_PROCESSED
from dex_agents.adapters.langchain.tools import IDEMPOTENCY_KEY_CONFIG

__all__ = [
    "DEX_EFFECT_METADATA_KEY",
    "IDEMPOTENCY_KEY_CONFIG",
    "OUTPUT_NOT_PROCESSED",
    "LangChainRunner",
    "create_langchain_session_flow",
    "is_non_retryable",
]
