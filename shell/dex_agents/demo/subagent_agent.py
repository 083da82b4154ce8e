"""The sub-agent demo (``dex-agents demo --subagent``): the support agent delegates refunds to a
billing agent, whose session runs as a durable child session of the support session.

Public API:
    ``DEMO_TURNS``: the support demo's turns ("Where is order 42?", "Please refund order 42").
    ``SUB_AGENT_TOOLS``: the parent's sub-agent tools (``ask_billing``); the demo follows each call's
    child session.
    ``build_support_flows(*, model: str | None = None, state_directory: Path) -> list[AgentSessionFlow]``:
    ``[SupportAgent, BillingAgent]``. The billing agent is the support demo's Pydantic AI agent
    (``lookup_order``, ``refund_order`` with approval, its reconcile) under the Flow type
    ``BillingAgent``; the support agent has ``lookup_order`` and ``ask_billing``
    (``subagent_tool(billing)``, the strongest effect of the billing agent's tools:
    ``non_idempotent_write``; no approval of its own, the billing agent asks for the refund's).
        * ``model=None``: scripted models (no key): the support agent looks order 42 up itself, and
          for a refund calls ``ask_billing`` with the user's words as the task, then answers with the
          billing agent's reply; the billing agent answers as the support demo's scripted model does.
        * ``model="provider:name"``: that real model for both agents.
    ``support_flows()``: the same from the environment, for ``dex-agents worker --agent
    dex_agents.demo.subagent_agent:support_flows`` (``DEX_AGENTS_DEMO_STATE_DIR``, ``DEX_AGENTS_DEMO_MODEL``).
    ``check_model``: the support demo's.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

from pydantic_ai import Agent, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCalls, FunctionModel

from dex_agents.adapters.kit import subagent_tool
from dex_agents.adapters.pydantic_ai import DEX_EFFECT_METADATA_KEY, create_pydantic_ai_session_flow, native_subagent_tool
from dex_agents.demo.support_agent import _scripted_response, build_support_flow, check_model, streamed
from dex_agents.demo.support_script import DEMO_TURNS, MODEL_ENV, STATE_DIR_ENV, support_tools
from dex_agents.pure.values.runner import ToolPolicy
from dex_agents.pure.values.session import ToolEffect
from dex_agents.shell.flow import AgentSessionFlow

ASK_BILLING: Final = "ask_billing"
SUB_AGENT_TOOLS: Final = frozenset({ASK_BILLING})
PARENT_FLOW_TYPE: Final = "SupportAgent"
CHILD_FLOW_TYPE: Final = "BillingAgent"
PARENT_INSTRUCTIONS: Final = ("You are the support agent of an online shop. Look orders up yourself; for a refund or "
                              "any billing matter call ask_billing with the whole task, then tell the user its answer.")
BILLING_ANSWER: Final = "The billing agent answered: "


def _parent_response(messages: list[ModelMessage]) -> ModelResponse:
    """The support agent's scripted model: a refund goes to ``ask_billing``; the rest is the support demo's."""
    request = next((message for message in reversed(messages) if isinstance(message, ModelRequest)), None)
    parts = [] if request is None else request.parts
    returned = [part for part in parts if isinstance(part, ToolReturnPart) and part.tool_name == ASK_BILLING]
    if returned:
        return ModelResponse(parts=[TextPart(BILLING_ANSWER + str(returned[-1].content))])
    prompt = next((str(part.content) for part in parts if isinstance(part, UserPromptPart)), "")
    if "refund" in prompt.lower():
        return ModelResponse(parts=[ToolCallPart(ASK_BILLING, {"task": prompt}, tool_call_id=f"call-billing-{len(messages)}")])
    return _scripted_response(messages)


def _parent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return _parent_response(messages)


def _parent_stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    return streamed(_parent_response(messages))


def build_support_flows(*, model: str | None = None, state_directory: Path) -> list[AgentSessionFlow]:
    """``[SupportAgent, BillingAgent]`` (see the module docstring)."""
    billing = build_support_flow(model=model, state_directory=state_directory, flow_type=CHILD_FLOW_TYPE)
    ask_billing = subagent_tool(billing, name=ASK_BILLING, description="Ask the billing agent to handle a refund "
                                "or another billing matter; give it the whole task in your own words.")
    lookup = Tool(support_tools(state_directory).lookup_order, metadata={DEX_EFFECT_METADATA_KEY: ToolEffect.READ.value})
    tools = [lookup, native_subagent_tool(ask_billing)]
    agent: Agent[None, str] = Agent(FunctionModel(_parent, stream_function=_parent_stream) if model is None else model,
                                    instructions=PARENT_INSTRUCTIONS, tools=tools)
    parent = create_pydantic_ai_session_flow(agent, PARENT_FLOW_TYPE, sub_agents=[ask_billing],
                                             tool_policies={"lookup_order": ToolPolicy(effect=ToolEffect.READ)})
    return [parent, billing]


def support_flows() -> list[AgentSessionFlow]:
    """``build_support_flows`` from the environment (see the module docstring), for ``dex-agents worker``."""
    return build_support_flows(model=os.environ.get(MODEL_ENV) or None,
                               state_directory=Path(os.environ.get(STATE_DIR_ENV) or "."))


__all__ = ["ASK_BILLING", "CHILD_FLOW_TYPE", "DEMO_TURNS", "PARENT_FLOW_TYPE", "SUB_AGENT_TOOLS",
           "build_support_flows", "check_model", "support_flows"]
