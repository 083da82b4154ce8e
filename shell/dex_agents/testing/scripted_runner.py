"""``ScriptedAgentRunner``: a deterministic runner for tests and the demo, with no model key.

A script maps a user message's text to the model calls of its turn, in order. Each
``ScriptedModelCall`` either asks for tools or answers with text; it can also stream reasoning, fail
(raise) or stop at a ``FileGate`` before or after its output, for crash tests. Tools are async
functions of the ``DeferredToolExecution``; an ``InvocationLog`` (optional) records every real run.

Invariants (the runner contract): the runner keeps no state between calls. Everything a resumed
model call needs (the index of the next scripted call and the messages the turn produced so far)
travels in ``framework_run_state``; messages are rebuilt only from ``framework_item`` JSON. A user
message without a script gets one answer, ``"echo: <text> (<n> messages)"``, where ``n`` counts
the stored messages the model call saw (so history replay is visible).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, final

from pyrsistent import pvector

from dex_agents.pure.values.runner import AgentTurnOutcome, DeferredToolCall, ToolCallsRequested, TurnCompleted
from dex_agents.pure.machine.texts import describe_tool_call_outcome
from dex_agents.pure.values.session import AgentUsage, FrameworkMessage, MessageRole, ToolEffect
from dex_agents.shell.runner import (
    AgentTurnContext,
    DeferredToolExecution,
    HistorySummaryRequest,
    HistorySummaryResult,
    ToolExecutionResult,
)
from dex_agents.testing.coordination import FileGate, InvocationLog

ScriptedTool = Callable[[DeferredToolExecution], Awaitable[str]]
"""A tool: gets the execution (arguments in ``call.tool_call.arguments``), returns the output text;
raises ``ToolExecutionError`` for a failure the model should see."""

MODEL_CALL_USAGE: Final = AgentUsage(requests=1, input_tokens=10, output_tokens=5)
"""Usage each scripted model call reports."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedToolCall:
    """One tool call the scripted model asks for. ``effect`` is the framework effect passed to
    ``resolve_tool_policy`` (``None``: the Flow's policies and default decide)."""

    tool_call_id: str
    tool_name: str
    arguments: str = "{}"
    effect: ToolEffect | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedModelCall:
    """One model call of a turn: ``tool_calls`` (asks for tools) or ``text`` (the final answer).

    Attributes:
        text: The answer, streamed as text deltas word by word, then stored.
        reasoning: Reasoning streamed before the answer or the tool calls.
        tool_calls: Tools to ask for (the call then ends with ``ToolCallsRequested``).
        fail_attempts: Raise ``RuntimeError`` on attempts ``1..fail_attempts`` of this call.
        gate_before_output: Stop at ``FileGate(gate_directory, name)`` before writing any output.
        gate_after_output: Stop at that gate after streaming the output, before returning.
    """

    text: str | None = None
    reasoning: str | None = None
    tool_calls: Sequence[ScriptedToolCall] = ()
    fail_attempts: int = 0
    gate_before_output: str | None = None
    gate_after_output: str | None = None


def _item(role: str, **fields: object) -> str:
    return json.dumps({"role": role, **fields}, sort_keys=True, separators=(",", ":"))


def user_message(text: str) -> FrameworkMessage:
    """The scripted framework's user message (its ``framework_item`` is deterministic JSON)."""
    return FrameworkMessage(role=MessageRole.USER, text=text, tool_call_id=None, tool_name=None,
                            tool_arguments=None, tool_output=None, framework_item=_item("user", content=text))


def _assistant_text(text: str) -> FrameworkMessage:
    return FrameworkMessage(role=MessageRole.ASSISTANT, text=text, tool_call_id=None, tool_name=None,
                            tool_arguments=None, tool_output=None, framework_item=_item("assistant", content=text))


def _tool_request(call: ScriptedToolCall) -> FrameworkMessage:
    return FrameworkMessage(role=MessageRole.ASSISTANT, text=None, tool_call_id=call.tool_call_id,
                            tool_name=call.tool_name, tool_arguments=call.arguments, tool_output=None,
                            framework_item=_item("assistant", tool_call={"id": call.tool_call_id, "name": call.tool_name,
                                                                       "arguments": call.arguments}))


def _tool_result(tool_call_id: str, tool_name: str, output: str) -> FrameworkMessage:
    return FrameworkMessage(role=MessageRole.TOOL, text=None, tool_call_id=tool_call_id, tool_name=tool_name,
                            tool_arguments=None, tool_output=output,
                            framework_item=_item("tool", tool_call_id=tool_call_id, name=tool_name, content=output))


def _message_from_item(item: str) -> FrameworkMessage:
    data = json.loads(item)
    if "tool_call" in data:
        call = data["tool_call"]
        return _tool_request(ScriptedToolCall(tool_call_id=call["id"], tool_name=call["name"], arguments=call["arguments"]))
    if data["role"] == "tool":
        return _tool_result(data["tool_call_id"], data["name"], data["content"])
    return _assistant_text(data["content"])


@final
@dataclass(frozen=True, slots=True)
class ScriptedAgentRunner:
    """The scripted runner (see the module docstring).

    Attributes:
        script: Model calls by user message text.
        tools: Tool functions by name.
        gate_directory: Where ``FileGate``s named in the script live (shared with the test process).
        invocation_log: Records ``<tool_name>:<idempotency_key>`` for every real tool run.
    """

    script: Mapping[str, Sequence[ScriptedModelCall]] = field(default_factory=dict)
    tools: Mapping[str, ScriptedTool] = field(default_factory=dict)
    gate_directory: Path | None = None
    invocation_log: InvocationLog | None = None

    def build_user_message(self, text: str) -> FrameworkMessage:
        return user_message(text)

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        user_text = next((m.text or "" for m in turn.messages if m.turn_id == turn.turn_id and m.role is MessageRole.USER),
                         "")
        calls = self.script.get(user_text) or (
            ScriptedModelCall(text=f"echo: {user_text} ({len(turn.messages)} messages)"),
        )
        index, produced = self._resumed(turn)
        if index >= len(calls):
            raise RuntimeError(f"the script of {user_text!r} has {len(calls)} model calls; call {index + 1} was asked for")
        call = calls[index]
        await self._gate(call.gate_before_output)
        if turn.attempt <= call.fail_attempts:
            raise RuntimeError(f"scripted model failure (attempt {turn.attempt})")
        if call.reasoning:
            turn.events.write_reasoning_delta(call.reasoning)
        if call.tool_calls:
            produced = [*produced, *(_tool_request(tool_call) for tool_call in call.tool_calls)]
            await self._gate(call.gate_after_output)
            state = json.dumps({"next_call": index + 1, "items": [m.framework_item for m in produced]})
            deferred = [
                DeferredToolCall(tool_call_id=c.tool_call_id, tool_name=c.tool_name, arguments=c.arguments,
                                 policy=turn.resolve_tool_policy(c.tool_name, c.effect))
                for c in call.tool_calls
            ]
            return ToolCallsRequested(framework_run_state=state, tool_calls=pvector(deferred), usage=MODEL_CALL_USAGE)
        text = call.text or ""
        for position, word in enumerate(text.split(" ")):
            turn.events.write_text_delta(word if position == 0 else " " + word)
        await self._gate(call.gate_after_output)
        return TurnCompleted(new_messages=pvector([*produced, _assistant_text(text)]), usage=MODEL_CALL_USAGE)

    def _resumed(self, turn: AgentTurnContext) -> tuple[int, list[FrameworkMessage]]:
        """The next scripted call's index and the messages the turn produced so far (with tool results)."""
        if turn.framework_run_state is None:
            return 0, []
        state = json.loads(turn.framework_run_state)
        produced = [_message_from_item(item) for item in state["items"]]
        answered = {m.tool_call_id for m in produced if m.role is MessageRole.TOOL}
        for record in turn.tool_calls:
            if record.tool_call_id not in answered:
                produced.append(_tool_result(record.tool_call_id, record.tool_name, describe_tool_call_outcome(record)))
        return int(state["next_call"]), produced

    async def summarize_history(self, request: HistorySummaryRequest) -> HistorySummaryResult:
        """``summary of <n> messages``: ``n`` counts the span and what the previous summary covered."""
        previous = int(request.previous_summary.split()[2]) if request.previous_summary else 0
        return HistorySummaryResult(text=f"summary of {previous + len(request.messages)} messages",
                                    usage=MODEL_CALL_USAGE)

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        tool = self.tools.get(call.tool_call.tool_name)
        if tool is None:
            raise RuntimeError(f"no scripted tool {call.tool_call.tool_name!r}")
        if self.invocation_log is not None:
            self.invocation_log.record(f"{call.tool_call.tool_name}:{call.idempotency_key}")
        return ToolExecutionResult(output=await tool(call))

    async def _gate(self, name: str | None) -> None:
        if name is None:
            return
        if self.gate_directory is None:
            raise RuntimeError(f"the script names gate {name!r} but the runner has no gate_directory")
        await FileGate(self.gate_directory, name).mark_reached_async()


__all__ = [
    "MODEL_CALL_USAGE",
    "ScriptedAgentRunner",
    "ScriptedModelCall",
    "ScriptedTool",
    "ScriptedToolCall",
    "user_message",
]
