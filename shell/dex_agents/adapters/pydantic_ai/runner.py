"""A Pydantic AI ``Agent`` as a session runner (the runner contract of ``dex_agents.shell.runner``).

How a turn runs:
    * ``run_model_step`` rebuilds the history from the stored ``framework_item``s only, walks the
      run with ``agent.iter()`` and stops at the first node that would call tools, without running
      it: one model call per ``RunModel``, no tool runs inside it. Tool calls become
      ``DeferredToolCall``s; the run state is the turn's partial messages (ModelMessagesTypeAdapter
      JSON). On resume every call's final record is fed back as a ``ToolReturnPart`` whose content is
      ``describe_tool_call_outcome(record)`` (success, failure, rejection, outcome unknown).
    * ``execute_deferred_tool_call`` runs the real tool with validated arguments. ``ModelRetry``,
      ``ToolFailed``, argument validation errors and unknown tools become ``ToolExecutionError`` (the
      model reads the error text).

Tool effects: a tool's effect comes from ``tool_policies`` first, then from its metadata
``{"dex_effect": "read" | "idempotent_write" | "non_idempotent_write" | "unclassified"}``
(``Tool(..., metadata={"dex_effect": "read"})`` or ``@agent.tool_plain(metadata=...)``), then from MCP
annotations (``metadata["annotations"]``, as Pydantic AI's MCP toolsets set them), then the Flow's
default effect. A call of an unknown tool is classified ``read`` so it fails at once without approval.

Structured output: output tools (``ToolOutput``) are not deferred; a response that calls one is left
to Pydantic AI, which validates it and ends the run. A run that would make a second model call in one
step (an output validation retry) fails the attempt.

Not deferrable (at-least-once, repeated with ``RunModel``): tools that a Pydantic AI capability runs
inside the model call, and provider-native tools (these run at the provider).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, Generic, TypeVar, final

from pydantic import ValidationError
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    RetryPromptPart,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import infer_model
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.usage import RunUsage
from pyrsistent import pvector

from dex_agents.pure.policies import tool_effect_from_mcp_annotations
from dex_agents.pure.runner_values import (
    AgentTurnOutcome,
    DeferredToolCall,
    McpToolAnnotations,
    ToolCallsRequested,
    ToolPolicy,
    TurnCompleted,
)
from dex_agents.pure.texts import describe_tool_call_outcome
from dex_agents.pure.usage import add_agent_usage, empty_agent_usage
from dex_agents.pure.values import AgentUsage, FrameworkMessage, MessageRole, ToolCallStatus, ToolEffect
from dex_agents.shell.flow import AgentSessionFlow, create_agent_session_flow
from dex_agents.shell.runner import (
    AgentEventWriter,
    AgentTurnContext,
    DeferredToolExecution,
    ToolExecutionError,
    ToolExecutionResult,
)

DEX_EFFECT_METADATA_KEY: Final = "dex_effect"
"""The ``ToolDefinition.metadata`` key that carries a tool's effect (a ``ToolEffect`` value)."""

_RUN_STATE_VERSION: Final = 1
_OUTCOMES: Final[Mapping[ToolCallStatus, str]] = {
    ToolCallStatus.SUCCEEDED: "success",
    ToolCallStatus.REJECTED: "denied",
}

DepsT = TypeVar("DepsT")


def _dump(messages: Sequence[ModelMessage]) -> str:
    return ModelMessagesTypeAdapter.dump_json(list(messages)).decode()


def _load(item: str) -> list[ModelMessage]:
    return list(ModelMessagesTypeAdapter.validate_json(item))


def _effect_from_metadata(tool_def: ToolDefinition | None) -> ToolEffect | None:
    if tool_def is None:
        return ToolEffect.READ  # an unknown tool fails at once, without an approval
    metadata = tool_def.metadata or {}
    value = metadata.get(DEX_EFFECT_METADATA_KEY)
    if isinstance(value, str):
        try:
            return ToolEffect(value)
        except ValueError:
            pass
    annotations = metadata.get("annotations")
    if isinstance(annotations, Mapping):

        def hint(key: str) -> bool | None:
            found = annotations.get(key)
            return found if isinstance(found, bool) else None

        return tool_effect_from_mcp_annotations(
            McpToolAnnotations(
                read_only_hint=hint("readOnlyHint"),
                destructive_hint=hint("destructiveHint"),
                idempotent_hint=hint("idempotentHint"),
                open_world_hint=hint("openWorldHint"),
            )
        )
    return None


def _usage_of(response: ModelResponse) -> AgentUsage:
    usage = response.usage
    return AgentUsage(
        requests=1,
        input_tokens=max(0, usage.input_tokens),
        output_tokens=max(0, usage.output_tokens),
        cache_read_tokens=max(0, usage.cache_read_tokens),
        cache_write_tokens=max(0, usage.cache_write_tokens),
    )


def _forward(event: object, writer: AgentEventWriter) -> None:
    """Text and thinking deltas; the first chunk of a part arrives only in its ``PartStartEvent``."""
    if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
        if event.part.content:
            writer.write_text_delta(event.part.content)
    elif isinstance(event, PartStartEvent) and isinstance(event.part, ThinkingPart):
        if event.part.content:
            writer.write_reasoning_delta(event.part.content)
    elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
        if event.delta.content_delta:
            writer.write_text_delta(event.delta.content_delta)
    elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, ThinkingPartDelta):
        if event.delta.content_delta:
            writer.write_reasoning_delta(event.delta.content_delta)


def _content_text(content: object) -> str:
    return content if isinstance(content, str) else json.dumps(content, default=str)


def to_framework_messages(messages: Sequence[ModelMessage]) -> list[FrameworkMessage]:
    """One ``FrameworkMessage`` per response, per tool return or retry prompt, and per other request."""
    result: list[FrameworkMessage] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            texts = [part.content for part in message.parts if isinstance(part, TextPart)]
            calls = [part for part in message.parts if isinstance(part, ToolCallPart)]
            single = calls[0] if len(calls) == 1 else None
            result.append(
                FrameworkMessage(
                    role=MessageRole.ASSISTANT,
                    text="".join(texts) if texts else None,
                    tool_call_id=single.tool_call_id if single else None,
                    tool_name=single.tool_name if single else None,
                    tool_arguments=single.args_as_json_str() if single else None,
                    tool_output=None,
                    framework_item=_dump([message]),
                )
            )
            continue
        tool_parts = [part for part in message.parts if isinstance(part, ToolReturnPart | RetryPromptPart)]
        other_parts = [part for part in message.parts if not isinstance(part, ToolReturnPart | RetryPromptPart)]
        if other_parts:
            user_texts = [_content_text(part.content) for part in other_parts if isinstance(part, UserPromptPart)]
            request = ModelRequest(parts=other_parts, instructions=message.instructions)
            result.append(
                FrameworkMessage(
                    role=MessageRole.USER,
                    text="\n".join(user_texts) if user_texts else None,
                    tool_call_id=None,
                    tool_name=None,
                    tool_arguments=None,
                    tool_output=None,
                    framework_item=_dump([request]),
                )
            )
        for part in tool_parts:
            output = part.model_response() if isinstance(part, RetryPromptPart) else _content_text(part.content)
            result.append(
                FrameworkMessage(
                    role=MessageRole.TOOL,
                    text=None,
                    tool_call_id=part.tool_call_id,
                    tool_name=part.tool_name,
                    tool_arguments=None,
                    tool_output=output,
                    framework_item=_dump([ModelRequest(parts=[part])]),
                )
            )
    return result


@final
class PydanticAIRunner(Generic[DepsT]):
    """``AgentFrameworkRunner`` for a Pydantic AI ``Agent`` (keeps no state between calls)."""

    def __init__(self, agent: Agent[DepsT, Any], *, deps: DepsT = None) -> None:  # type: ignore[assignment]
        self._agent = agent
        self._deps = deps

    def build_user_message(self, text: str) -> FrameworkMessage:
        # No timestamp: UserPromptPart(text) stamps now(), which is not deterministic.
        item = json.dumps([{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": text}]}])
        return FrameworkMessage(
            role=MessageRole.USER,
            text=text,
            tool_call_id=None,
            tool_name=None,
            tool_arguments=None,
            tool_output=None,
            framework_item=item,
        )

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        history = [message for stored in turn.messages for message in _load(stored.framework_item)]
        carried: list[ModelMessage] = []
        if turn.framework_run_state is not None:
            state = json.loads(turn.framework_run_state)
            carried = _load(state["turn"])
            carried.append(
                ModelRequest(
                    parts=[
                        ToolReturnPart(
                            tool_name=record.tool_name,
                            tool_call_id=record.tool_call_id,
                            content=describe_tool_call_outcome(record),
                            outcome=_OUTCOMES.get(record.status, "failed"),  # type: ignore[arg-type]
                        )
                        for record in sorted(turn.tool_calls, key=lambda r: r.deferral_order)
                    ]
                )
            )
        start = len(history) + len(carried)
        usage = empty_agent_usage()
        model_calls = 0
        async with self._agent.iter(message_history=[*history, *carried], deps=self._deps) as run:
            node = run.next_node
            while not Agent.is_end_node(node):
                if Agent.is_model_request_node(node):
                    if model_calls:
                        raise RuntimeError("Pydantic AI asked for a second model call in one RunModel step")
                    model_calls += 1
                    async with node.stream(run.ctx) as stream:
                        async for event in stream:
                            _forward(event, turn.events)
                elif Agent.is_call_tools_node(node):
                    response = node.model_response
                    usage = add_agent_usage(usage, _usage_of(response))
                    tool_manager = run.ctx.deps.tool_manager
                    calls = response.tool_calls
                    definitions = {call.tool_name: tool_manager.get_tool_def(call.tool_name) for call in calls}
                    is_output = any(d is not None and d.kind == "output" for d in definitions.values())
                    if calls and not is_output:
                        produced = [*carried, *run.all_messages()[start:]]
                        return ToolCallsRequested(
                            framework_run_state=json.dumps({"v": _RUN_STATE_VERSION, "turn": _dump(produced)}),
                            tool_calls=pvector(
                                DeferredToolCall(
                                    tool_call_id=call.tool_call_id,
                                    tool_name=call.tool_name,
                                    arguments=call.args_as_json_str(),
                                    policy=turn.resolve_tool_policy(
                                        call.tool_name, _effect_from_metadata(definitions[call.tool_name])
                                    ),
                                )
                                for call in calls
                            ),
                            usage=usage,
                        )
                node = await run.next(node)
            produced = [*carried, *run.all_messages()[start:]]
        return TurnCompleted(new_messages=pvector(to_framework_messages(produced)), usage=usage)

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        record = call.tool_call
        try:
            model = infer_model(self._agent.model) if self._agent.model is not None else TestModel()
        except Exception:  # noqa: BLE001 - tools rarely read ctx.model; a missing key must not fail them
            model = TestModel()
        ctx: RunContext[Any] = RunContext(
            deps=self._deps,
            model=model,
            usage=RunUsage(),
            tool_name=record.tool_name,
            tool_call_id=record.tool_call_id,
            tool_call_approved=True,
        )
        for toolset in self._agent.toolsets:
            async with toolset:
                tools = await toolset.get_tools(ctx)
                tool = tools.get(record.tool_name)
                if tool is None or tool.tool_def.kind != "function":
                    continue
                try:
                    arguments = tool.args_validator.validate_json(record.arguments or "{}")
                except ValidationError as error:
                    raise ToolExecutionError(f"Invalid arguments for tool {record.tool_name!r}: {error}") from error
                try:
                    output = await toolset.call_tool(record.tool_name, arguments, ctx, tool)
                except (ModelRetry, ToolFailed) as error:
                    raise ToolExecutionError(str(error.message)) from error
                except ValidationError as error:
                    raise ToolExecutionError(f"Invalid arguments for tool {record.tool_name!r}: {error}") from error
                if isinstance(output, str):
                    return ToolExecutionResult(output=output)
                return ToolExecutionResult(output=ToolReturnPart(record.tool_name, output).model_response_str())
        raise ToolExecutionError(f"Unknown tool {record.tool_name!r}")


def create_pydantic_ai_session_flow(
    agent: Agent[Any, Any],
    flow_type: str,
    *,
    deps: object = None,
    tool_policies: Mapping[str, ToolPolicy] | None = None,
    **options: Any,
) -> AgentSessionFlow:
    """A session Flow of type ``flow_type`` driven by ``agent``; ``options`` go to ``create_agent_session_flow``."""
    return create_agent_session_flow(
        PydanticAIRunner(agent, deps=deps), flow_type, tool_policies=tool_policies, **options
    )
