"""An OpenAI Agents SDK ``Agent`` as a ``TurnBinding`` of the turn template, and its Flow factory.

``Items`` (the message type) is one stored message's Responses-API input items, stored as they are; the
model input is the stored lists concatenated. A user message is one ``{"type": "message", "role":
"user", "content": text}`` item; a response is one message holding all its output items, in the model's
order (never split); a tool result is one message holding one ``function_call_output`` item.

``is_non_retryable`` (the turn fails at once): an ``openai`` 4xx status error other than 408, 409, 425
and 429, a 429 whose code is ``insufficient_quota``, a bare ``OpenAIError`` (e.g. missing credentials),
the SDK's ``UserError`` and ``ModelRefusalError``, a guardrail tripwire. ``is_context_window_exceeded``:
a status error coded ``context_length_exceeded`` or a "prompt is too long" error anywhere in the chain.

The factory refuses (``ValueError``) what could not run durably: handoffs, tools the SDK runs on the
Worker outside a function call (``ComputerTool``, ``LocalShellTool``, ``ShellTool``, ``ApplyPatchTool``,
``CustomTool``, ``ProgrammaticToolCallingTool``, a client-executed ``ToolSearchTool``), a ``HostedMCPTool``
asking for approvals, a ``tool_use_behavior`` other than ``"run_llm_again"``, a ``SandboxAgent``, two
function tools with one name, an output type without a schema, a ``dex_effect`` that is not an effect.
Hosted tools run at the provider inside the model call (at least once).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Final, Unpack, final

from agents import Agent, RunConfig
from agents.exceptions import (InputGuardrailTripwireTriggered, ModelRefusalError, OutputGuardrailTripwireTriggered,
    UserError)
from agents.tool import (ApplyPatchTool, ComputerTool, CustomTool, FunctionTool, HostedMCPTool, LocalShellTool,
    ProgrammaticToolCallingTool, ShellTool, ToolSearchTool)
from openai import APIStatusError, OpenAIError

from dex_agents.adapters.kit import SessionFlowOptions, assistant_message, is_final_client_status, tool_message
from dex_agents.adapters.kit.model_errors import says_context_window_exceeded
from dex_agents.adapters.kit.turn import (CallRef, ModelAnswer, ModelCall, RoundAnswer, ToolRun, TurnRunner,
    create_session_flow)
from dex_agents.adapters.openai_agents import model, tools
from dex_agents.adapters.openai_agents.effects import tool_effect
from dex_agents.adapters.openai_agents.model import Items
from dex_agents.pure.values.session import FrameworkMessage
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.runner import AgentEventWriter, HistorySummaryResult

_LOCAL_TOOLS: Final = (ComputerTool, LocalShellTool, ShellTool, ApplyPatchTool, CustomTool, ProgrammaticToolCallingTool)


def load_items(data: str | object) -> Items:
    """The input items of one stored message (JSON text or data); ``ValueError`` when they are not."""
    items = json.loads(data) if isinstance(data, str) else data
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ValueError("a stored OpenAI Agents message is not a JSON list of input items")
    return items


def function_calls(items: Items) -> Items:
    """The ``function_call`` items of a response, in order."""
    return [item for item in items if item.get("type") == "function_call"]


def _chain(error: BaseException, *, implicit: bool = False) -> Iterable[BaseException]:
    """``error`` and the errors it was raised from (``implicit``: also those it was raised while handling)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (current.__context__ if implicit else None)


def is_non_retryable(error: BaseException) -> bool:
    """Whether a retry of the model call cannot succeed after ``error`` (or an error it was raised from)."""
    for cause in _chain(error):
        if isinstance(cause, UserError | ModelRefusalError | InputGuardrailTripwireTriggered
                      | OutputGuardrailTripwireTriggered) or type(cause) is OpenAIError:  # bare: e.g. no credentials
            return True
        if isinstance(cause, APIStatusError):
            status = cause.status_code
            return cause.code == "insufficient_quota" if status == 429 else is_final_client_status(status)
    return False


def is_context_window_exceeded(error: BaseException) -> bool:
    """Whether ``error`` (or any error in its chain) says the input exceeds the model's context window."""
    return says_context_window_exceeded(error)


@final
class OpenAIAgentsBinding:
    """The ``TurnBinding[Items]`` of an ``agents.Agent``; ``context`` is the SDK's run context object of
    every Step of this Worker (what a Step changes in it stays in that Worker process)."""

    adapter: Final = "openai_agents"
    run_state_version: Final = 2
    is_non_retryable = staticmethod(is_non_retryable)
    is_context_window_exceeded = staticmethod(is_context_window_exceeded)

    def __init__(self, agent: Agent[Any], context: object = None) -> None:
        self.agent, self.context, self.config = agent, context, RunConfig()  # the SDK's default provider, tracing

    def user_item(self, text: str) -> str:
        return json.dumps([{"type": "message", "role": "user", "content": text}])

    def parse_item(self, data: str | object) -> Sequence[Items]:
        return [load_items(data)]

    def copy_message(self, message: Items) -> Items:
        return [dict(item) for item in message]

    def dump_messages(self, messages: Sequence[Items]) -> object:
        return list(messages)

    def load_messages(self, data: object) -> list[Items]:
        if not isinstance(data, list):
            raise ValueError("the turn's messages are not a JSON list")
        return [load_items(items) for items in data]

    def to_framework_messages(self, messages: Sequence[Items]) -> list[FrameworkMessage]:
        """Responses and tool results (a result's tool name is that of its call in ``messages``)."""
        names = {call.get("call_id"): str(call.get("name")) for items in messages for call in function_calls(items)}
        stored: list[FrameworkMessage] = []
        for items in messages:
            if len(items) == 1 and items[0].get("type") == "function_call_output":
                call_id, output = str(items[0].get("call_id")), items[0].get("output")
                stored.append(tool_message(json.dumps(items), tool_call_id=call_id, tool_name=names.get(call_id, ""),
                                           output=output if isinstance(output, str) else json.dumps(output)))
                continue
            texts = [str(part.get("text") or "") for item in items if item.get("role") == "assistant"
                     for part in item.get("content") or []
                     if isinstance(part, dict) and part.get("type") == "output_text"]
            calls = function_calls(items)
            single = calls[0] if len(calls) == 1 else None
            stored.append(assistant_message(
                json.dumps(items), text="".join(texts) if texts else None,
                tool_call_id=str(single["call_id"]) if single else None,
                tool_name=str(single["name"]) if single else None,
                tool_arguments=str(single.get("arguments") or "") if single else None))
        return stored

    def response_calls(self, message: Items) -> Sequence[CallRef] | None:
        if not message or any(item.get("type") == "function_call_output"
                              or item.get("role") in ("user", "system", "developer") for item in message):
            return None  # not a response
        return [CallRef(tool_call_id=str(call.get("call_id")), tool_name=str(call.get("name")))
                for call in function_calls(message)]

    def answer_round(self, answers: Sequence[RoundAnswer]) -> list[Items]:
        return [[{"type": "function_call_output", "call_id": answer.tool_call_id, "output": answer.text}]
                for answer in answers]

    async def call_model(self, call: ModelCall[Items]) -> ModelAnswer[Items]:
        return await model.call_model(self.agent, self.context, self.config, call)

    async def run_tool(self, run: ToolRun[Items]) -> str:
        return await tools.run_tool(self.agent, self.context, self.config, run)

    async def arguments_validator(self, tool_name: str) -> tools.ArgumentsValidator | None:
        return await tools.arguments_validator(self.agent, self.context, tool_name)

    async def summarize(self, instructions: str, transcript: str, events: AgentEventWriter) -> HistorySummaryResult:
        return await model.summarize(self.agent, self.config, instructions, transcript)


def OpenAIAgentsRunner(agent: Agent[Any], *, context: object = None) -> TurnRunner[Items]:
    """The session runner of ``agent`` (``context``: the SDK run context object of every Step)."""
    return TurnRunner(OpenAIAgentsBinding(agent, context))


def check_agent(agent: Agent[Any]) -> None:
    """Raise ``ValueError`` for what the adapter cannot run durably (see the module docstring)."""
    if not isinstance(agent, Agent):
        raise ValueError(f"expected an agents.Agent, got {type(agent).__name__}")
    if type(agent).__name__ == "SandboxAgent":
        raise ValueError("a SandboxAgent runs its sandbox actions inside the SDK's run loop; use an Agent")
    if agent.handoffs:
        raise ValueError(f"agent {agent.name!r} has handoffs, which switch agents inside the SDK's run loop and "
                         "cost a model call the session cannot defer; use agents as tools (agent.as_tool(...))")
    if agent.tool_use_behavior != "run_llm_again":
        raise ValueError(f"agent {agent.name!r} has tool_use_behavior={agent.tool_use_behavior!r}; the session "
                         "always gives tool results back to the model (tool_use_behavior='run_llm_again')")
    names: set[str] = set()
    for tool in agent.tools:
        if isinstance(tool, _LOCAL_TOOLS):
            raise ValueError(f"agent {agent.name!r}: {type(tool).__name__} {getattr(tool, 'name', '')!r} runs on the "
                             "Worker outside a function call, which the session cannot defer to its own Step; wrap "
                             "the action in a function tool instead")
        if isinstance(tool, ToolSearchTool) and tool.execution == "client":
            raise ValueError(f"agent {agent.name!r}: a client-executed ToolSearchTool needs a second model call in "
                             "the same step")
        if isinstance(tool, HostedMCPTool) and tool.tool_config.get("require_approval", "always") != "never":
            raise ValueError(f"agent {agent.name!r}: HostedMCPTool {tool.tool_config.get('server_label', '')!r} asks "
                             "for approvals, which need a model round trip the session cannot make durable; set "
                             "require_approval='never' or use an MCP server (Agent(mcp_servers=...))")
        if isinstance(tool, FunctionTool):
            if tool.name in names:
                raise ValueError(f"agent {agent.name!r} has two function tools named {tool.name!r}")
            names.add(tool.name)
            tool_effect(tool)  # raises for a dex_effect that is not an effect
    try:
        model.output_schema(agent)
    except UserError as error:
        raise ValueError(f"agent {agent.name!r}: {error}") from error


def create_openai_agents_session_flow(agent: Agent[Any], flow_type: str, *, context: object = None,
                                      **options: Unpack[SessionFlowOptions]) -> AgentSessionFlow:
    """A session Flow of type ``flow_type`` driven by ``agent``; ``context`` is the SDK run context object
    of every Step; ``options`` are ``create_agent_session_flow``'s (``ValueError``: see the module docstring)."""
    check_agent(agent)
    return create_session_flow(OpenAIAgentsBinding(agent, context), flow_type, **options)


__all__ = ["Items", "OpenAIAgentsBinding", "OpenAIAgentsRunner", "check_agent", "create_openai_agents_session_flow",
           "is_context_window_exceeded", "is_non_retryable", "load_items"]
