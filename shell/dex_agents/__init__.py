"""dex-agents: durable AI-agent sessions on Dex.

The package's top re-exports what an application or adapter imports: the session Flow factory and
its runner-less definition for clients, the session clients, the runner contract, the values a
runner builds and returns, and the Registry/Worker helpers. Names are
loaded on first use, so ``import dex_agents.pure`` stays free of Dex and gRPC.

``dex_agents`` spans three source roots (``pure``, ``shell``, ``engine``) during development;
``extend_path`` joins them into one package (an installed wheel holds them in one directory).
"""

from __future__ import annotations

from pkgutil import extend_path
from typing import TYPE_CHECKING

from dex_agents._lazy_exports import lazy_exports

__path__ = extend_path(__path__, __name__)

_EXPORTS: dict[str, str] = {
    "AgentEventWriter": "dex_agents.shell.runner",
    "AgentFrameworkRunner": "dex_agents.shell.runner",
    "AgentSessionFlow": "dex_agents.shell.flow",
    "AgentTurnContext": "dex_agents.shell.runner",
    "DeferredToolExecution": "dex_agents.shell.runner",
    "ModelRetryAfterError": "dex_agents.shell.runner",
    "NonRetryableModelError": "dex_agents.shell.runner",
    "RetryPolicy": "dex_agents.pure.flow.rows",
    "SessionTiming": "dex_agents.shell.timing",
    "StoredValueError": "dex_agents.shell.codecs",
    "ToolExecutionError": "dex_agents.shell.runner",
    "ToolExecutionResult": "dex_agents.shell.runner",
    "current_tool_call": "dex_agents.shell.tool_context",
    "create_agent_session_flow": "dex_agents.shell.flow",
    "session_flow_definition": "dex_agents.shell.flow",
    "AsyncSessionClient": "dex_agents.client.async_session_client",
    "SessionClient": "dex_agents.client.session_client",
    "session_registry": "dex_agents.shell.worker",
    "session_worker": "dex_agents.shell.worker",
    "AgentUsage": "dex_agents.pure.values.session",
    "FrameworkMessage": "dex_agents.pure.values.session",
    "MessageRole": "dex_agents.pure.values.session",
    "ToolCallStatus": "dex_agents.pure.values.session",
    "ToolEffect": "dex_agents.pure.values.session",
    "AgentSessionStartInput": "dex_agents.pure.values.session",
    "DeferredToolCall": "dex_agents.pure.values.runner",
    "McpToolAnnotations": "dex_agents.pure.values.runner",
    "ResolvedToolPolicy": "dex_agents.pure.values.runner",
    "ToolCallsRequested": "dex_agents.pure.values.runner",
    "ToolPolicy": "dex_agents.pure.values.runner",
    "TurnCompleted": "dex_agents.pure.values.runner",
    "ListAgentMessagesInput": "dex_agents.pure.values.rpc",
    "ResolveInterruptInput": "dex_agents.pure.values.rpc",
    "SendUserMessageInput": "dex_agents.pure.values.rpc",
    "add_agent_usage": "dex_agents.pure.machine.usage",
    "empty_agent_usage": "dex_agents.pure.machine.usage",
    "describe_tool_call_outcome": "dex_agents.pure.machine.texts",
    "outcome_unknown_tool_result": "dex_agents.pure.machine.texts",
    "build_turn_failure_note": "dex_agents.pure.machine.texts",
    "tool_effect_from_mcp_annotations": "dex_agents.pure.machine.policies",
}

if TYPE_CHECKING:
    from dex_agents.pure.machine.policies import tool_effect_from_mcp_annotations as tool_effect_from_mcp_annotations
    from dex_agents.pure.values.rpc import ListAgentMessagesInput as ListAgentMessagesInput
    from dex_agents.pure.values.rpc import ResolveInterruptInput as ResolveInterruptInput
    from dex_agents.pure.values.rpc import SendUserMessageInput as SendUserMessageInput
    from dex_agents.pure.values.runner import DeferredToolCall as DeferredToolCall
    from dex_agents.pure.values.runner import McpToolAnnotations as McpToolAnnotations
    from dex_agents.pure.values.runner import ResolvedToolPolicy as ResolvedToolPolicy
    from dex_agents.pure.values.runner import ToolCallsRequested as ToolCallsRequested
    from dex_agents.pure.values.runner import ToolPolicy as ToolPolicy
    from dex_agents.pure.values.runner import TurnCompleted as TurnCompleted
    from dex_agents.pure.machine.texts import build_turn_failure_note as build_turn_failure_note
    from dex_agents.pure.machine.texts import describe_tool_call_outcome as describe_tool_call_outcome
    from dex_agents.pure.machine.texts import outcome_unknown_tool_result as outcome_unknown_tool_result
    from dex_agents.pure.machine.usage import add_agent_usage as add_agent_usage
    from dex_agents.pure.machine.usage import empty_agent_usage as empty_agent_usage
    from dex_agents.pure.values.session import AgentSessionStartInput as AgentSessionStartInput
    from dex_agents.pure.values.session import AgentUsage as AgentUsage
    from dex_agents.pure.values.session import FrameworkMessage as FrameworkMessage
    from dex_agents.pure.values.session import MessageRole as MessageRole
    from dex_agents.pure.values.session import ToolCallStatus as ToolCallStatus
    from dex_agents.pure.values.session import ToolEffect as ToolEffect
    from dex_agents.shell.codecs import StoredValueError as StoredValueError
    from dex_agents.shell.flow import AgentSessionFlow as AgentSessionFlow
    from dex_agents.client.async_session_client import AsyncSessionClient as AsyncSessionClient
    from dex_agents.client.session_client import SessionClient as SessionClient
    from dex_agents.shell.flow import create_agent_session_flow as create_agent_session_flow
    from dex_agents.shell.flow import session_flow_definition as session_flow_definition
    from dex_agents.shell.runner import AgentEventWriter as AgentEventWriter
    from dex_agents.shell.runner import AgentFrameworkRunner as AgentFrameworkRunner
    from dex_agents.shell.runner import AgentTurnContext as AgentTurnContext
    from dex_agents.shell.runner import DeferredToolExecution as DeferredToolExecution
    from dex_agents.shell.tool_context import current_tool_call as current_tool_call
    from dex_agents.shell.runner import ModelRetryAfterError as ModelRetryAfterError
    from dex_agents.shell.runner import NonRetryableModelError as NonRetryableModelError
    from dex_agents.pure.flow.rows import RetryPolicy as RetryPolicy
    from dex_agents.shell.runner import ToolExecutionError as ToolExecutionError
    from dex_agents.shell.runner import ToolExecutionResult as ToolExecutionResult
    from dex_agents.shell.timing import SessionTiming as SessionTiming
    from dex_agents.shell.worker import session_registry as session_registry
    from dex_agents.shell.worker import session_worker as session_worker


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = sorted(_EXPORTS)
