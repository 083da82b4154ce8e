"""The adapter kit: what every framework adapter needs besides message conversion.

* ``encode_run_state`` / ``decode_run_state``: a versioned run-state envelope, checked on read, that
  also remembers which tool calls the latest model response deferred (its round).
* ``latest_round_results``: the final records of that round, in deferral order, as the text and
  outcome the model should read.
* ``tool_effect_from_metadata``: a tool's effect from framework metadata (``dex_effect``, MCP
  annotations).
* ``model_call_usage``: one model call's usage, normalised to ``AgentUsage``.
* ``user_message``, ``assistant_message``, ``tool_message``: ``FrameworkMessage`` builders.
* ``unknown_tool_error``, ``invalid_arguments_error``: the ``ToolExecutionError``s every adapter raises.
* ``RETRYABLE_CLIENT_STATUSES``, ``is_final_client_status``: the 4xx statuses a model-call retry can or
  cannot pass, for every adapter's ``is_non_retryable``; ``says_context_window_exceeded``: the errors
  that say the input exceeds the context window (``error_chain``: an error and those behind it).
* ``ArgumentsValidator``, ``json_schema_validator``, ``checked_arguments``: a tool's arguments checked
  by the framework's own schema (an approver's edit before it runs; ``kit.arguments``).
* ``kit.turn``: the turn template (``TurnBinding``, ``TurnRunner``, ``create_session_flow``).
* ``subagent_tool(child, name=..., description=...)``: a tool whose calls run as child sessions of
  another agent (``SubAgentTool``; give it to the parent Flow's ``sub_agents`` and its framework form,
  each adapter's ``native_subagent_tool``, to the parent agent); ``native_function(tool)``: that form
  as a plain async function (the OpenAI Chat adapter's tools are plain functions).
* ``SessionFlowOptions``: the typed options an adapter's Flow factory passes through to
  ``create_agent_session_flow`` (``**options: Unpack[SessionFlowOptions]``).
"""

from dex_agents.adapters.kit.arguments import ArgumentsValidator, checked_arguments, json_schema_validator
from dex_agents.adapters.kit.messages import assistant_message, tool_message, user_message
from dex_agents.adapters.kit.model_errors import (
    RETRYABLE_CLIENT_STATUSES,
    error_chain,
    is_final_client_status,
    says_context_window_exceeded,
)
from dex_agents.adapters.kit.options import SessionFlowOptions
from dex_agents.adapters.kit.run_state import RunState, RunStateError, decode_run_state, encode_run_state
from dex_agents.adapters.kit.tool_errors import invalid_arguments_error, unknown_tool_error
from dex_agents.adapters.kit.tool_effects import DEX_EFFECT_METADATA_KEY, tool_effect_from_metadata
from dex_agents.adapters.kit.tool_results import ToolOutcome, ToolResult, latest_round_results
from dex_agents.adapters.kit.usage import model_call_usage
from dex_agents.adapters.kit.subagents import native_function
from dex_agents.shell.subagents import SubAgentTool, subagent_tool


__all__ = [
    "ArgumentsValidator",
    "DEX_EFFECT_METADATA_KEY",
    "RETRYABLE_CLIENT_STATUSES",
    "RunState",
    "RunStateError",
    "SessionFlowOptions",
    "SubAgentTool",
    "ToolOutcome",
    "ToolResult",
    "assistant_message",
    "checked_arguments",
    "decode_run_state",
    "encode_run_state",
    "error_chain",
    "invalid_arguments_error",
    "is_final_client_status",
    "json_schema_validator",
    "latest_round_results",
    "model_call_usage",
    "native_function",
    "says_context_window_exceeded",
    "subagent_tool",
    "tool_effect_from_metadata",
    "tool_message",
    "unknown_tool_error",
    "user_message",
]
