"""``run_model_step`` for a Pydantic AI ``Agent``: exactly one model call, no tool run.

How one call runs:
    * The model input is the stored history (``framework_item``s), then, when the turn resumes, the
      turn's partial messages from the run state and one request answering every call of the latest
      response: the round's final records (``latest_round_results``) for the deferred calls, and a
      note for any output-tool call that was not processed because function tools ran first.
    * ``agent.iter`` is walked node by node. The model request is streamed when the model can stream
      (text and reasoning deltas go to the events as they arrive) and made as a plain request
      otherwise (its text goes out as one delta per part after the response).
    * If the response calls any function tool (or an unknown tool), every such call is deferred,
      whatever else the response holds; nothing runs inside ``RunModel``. Otherwise Pydantic AI
      finishes the run (validating the output) and the turn completes.
    * Messages produced are what the run itself reports (``new_messages()``), never positions in a
      history that Pydantic AI may have merged.

The run state (``dex_agents.adapters.kit`` envelope, adapter ``pydantic_ai``, version
``RUN_STATE_VERSION``) holds the turn's partial messages, the output-tool calls left unanswered, and
each deferred call's serialised ``RunContext`` (Pydantic AI's ``DurableRunContext`` form), which the
tool Step restores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final

from pydantic import ValidationError
from pydantic_ai import Agent
from pydantic_ai._agent_graph import build_run_context  # private; pinned by the extra (2.68.x), covered by tests
from pydantic_ai.durable_exec import DurableRunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models import Model
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_core import to_jsonable_python
from pyrsistent import pvector

from dex_agents.adapters.kit import (
    RunState,
    RunStateError,
    ToolOutcome,
    decode_run_state,
    encode_run_state,
    latest_round_results,
    model_call_usage,
    tool_effect_from_metadata,
)
from dex_agents.adapters.pydantic_ai.messages import dump_messages_data, load_history, load_messages, to_framework_messages
from dex_agents.pure.runner_values import AgentTurnOutcome, DeferredToolCall, ToolCallsRequested, TurnCompleted
from dex_agents.pure.values import AgentUsage, ToolEffect
from dex_agents.shell.runner import AgentEventWriter, AgentTurnContext, NonRetryableModelError

RUN_STATE_ADAPTER: Final = "pydantic_ai"
RUN_STATE_VERSION: Final = 2
"""Version 1 (before the kit) was not an envelope; a turn suspended by it fails with a clear error."""

OUTPUT_NOT_PROCESSED: Final = (
    "Output not processed: this response also called function tools, which ran first. "
    "Read their results, then give the final output again."
)
"""What the model reads for an output-tool call that came beside function-tool calls."""

_PYDANTIC_OUTCOMES: Final = {
    ToolOutcome.SUCCESS: "success",
    ToolOutcome.FAILED: "failed",
    ToolOutcome.DENIED: "denied",
    ToolOutcome.UNKNOWN: "interrupted",
}


def can_stream(model: Model) -> bool:
    """Whether ``model`` implements streamed requests (a ``FunctionModel`` needs a ``stream_function``)."""
    if isinstance(model, FunctionModel):
        return model.stream_function is not None
    if isinstance(model, WrapperModel):
        return can_stream(model.wrapped)
    return type(model).request_stream is not Model.request_stream


def forward_event(event: object, writer: AgentEventWriter) -> None:
    """Text and thinking deltas; the first chunk of a part arrives only in its ``PartStartEvent``."""
    if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart | ThinkingPart):
        write_part(event.part, writer)
    elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
        if event.delta.content_delta:
            writer.write_text_delta(event.delta.content_delta)
    elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, ThinkingPartDelta):
        if event.delta.content_delta:
            writer.write_reasoning_delta(event.delta.content_delta)


def write_part(part: object, writer: AgentEventWriter) -> None:
    """A whole text or thinking part as one delta (a part of a response that was not streamed)."""
    if isinstance(part, TextPart) and part.content:
        writer.write_text_delta(part.content)
    elif isinstance(part, ThinkingPart) and part.content:
        writer.write_reasoning_delta(part.content)


def usage_of(response: ModelResponse) -> AgentUsage:
    """The usage of one model response."""
    usage = response.usage
    return model_call_usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                            cache_read_tokens=usage.cache_read_tokens, cache_write_tokens=usage.cache_write_tokens)


def _resume_request(last_response: ModelResponse, turn: AgentTurnContext, decoded: RunState) -> ModelRequest:
    """One request answering every call of ``last_response``, in the model's order."""
    results = {result.tool_call_id: result for result in latest_round_results(decoded, turn.tool_calls)}
    parts: list[ToolReturnPart] = []
    for call in last_response.tool_calls:
        result = results.get(call.tool_call_id)
        if result is None:
            parts.append(ToolReturnPart(call.tool_name, OUTPUT_NOT_PROCESSED, tool_call_id=call.tool_call_id,
                                        outcome="failed"))
        else:
            parts.append(ToolReturnPart(call.tool_name, result.text, tool_call_id=call.tool_call_id,
                                        outcome=_PYDANTIC_OUTCOMES[result.outcome]))  # type: ignore[arg-type]
    return ModelRequest(parts=parts)


def _decoded_state(turn: AgentTurnContext) -> RunState:
    assert turn.framework_run_state is not None
    try:
        return decode_run_state(turn.framework_run_state, adapter=RUN_STATE_ADAPTER, version=RUN_STATE_VERSION)
    except RunStateError as error:
        raise NonRetryableModelError(str(error)) from error


def _carried_messages(turn: AgentTurnContext) -> list[ModelMessage]:
    """The turn's messages so far, ending with the request that answers the latest round."""
    if turn.framework_run_state is None:
        return []
    decoded = _decoded_state(turn)
    state = decoded.state
    try:
        messages = load_messages(state["messages"] if isinstance(state, dict) else None)
    except (ValidationError, KeyError) as error:
        raise NonRetryableModelError(f"the turn's run state holds no readable Pydantic AI messages: {error}") from error
    last = messages[-1] if messages else None
    if not isinstance(last, ModelResponse):
        raise NonRetryableModelError("the turn's run state does not end with the model response that called tools")
    return [*messages, _resume_request(last, turn, decoded)]


def _framework_effect(run: Any, call: ToolCallPart) -> ToolEffect | None:
    definition = run.ctx.deps.tool_manager.get_tool_def(call.tool_name)
    if definition is None:
        return ToolEffect.READ  # an unknown tool fails at once, without an approval
    try:
        return tool_effect_from_metadata(call.tool_name, definition.metadata)
    except ValueError as error:  # a toolset's metadata (static tools are checked at Flow creation)
        raise NonRetryableModelError(str(error)) from error


def _is_deferred(run: Any, call: ToolCallPart) -> bool:
    definition = run.ctx.deps.tool_manager.get_tool_def(call.tool_name)
    return definition is None or definition.kind != "output"


def _serialised_contexts(run: Any, calls: Sequence[ToolCallPart]) -> dict[str, object]:
    """Each deferred call's ``RunContext`` as ``DurableRunContext`` JSON data."""
    context = build_run_context(run.ctx)
    serialised: dict[str, object] = {}
    for call in calls:
        for_call = replace(context, tool_name=call.tool_name, tool_call_id=call.tool_call_id,
                           retry=context.retries.get(call.tool_name, 0), tool_call_approved=True)
        serialised[call.tool_call_id] = to_jsonable_python(
            DurableRunContext.serialize_run_context(for_call), fallback=repr)
    return serialised


async def _call_model(run: Any, node: Any, writer: AgentEventWriter) -> Any:
    """Make the one model request of ``node``; return the next node (the response's ``CallToolsNode``)."""
    if can_stream(run.ctx.deps.model):
        async with node.stream(run.ctx) as stream:
            async for event in stream:
                forward_event(event, writer)
        return await run.next(node)
    following = await run.next(node)
    for part in following.model_response.parts:
        write_part(part, writer)
    return following


async def run_model_step(agent: Agent[Any, Any], deps: object, turn: AgentTurnContext) -> AgentTurnOutcome:
    """One model call of ``turn`` (see the module docstring)."""
    carried = _carried_messages(turn)
    async with agent.iter(message_history=[*load_history(turn.messages), *carried], deps=deps) as run:
        node = run.next_node
        while not Agent.is_model_request_node(node):  # the user-prompt node (it adds no prompt here)
            if Agent.is_end_node(node) or Agent.is_call_tools_node(node):
                raise RuntimeError(f"Pydantic AI reached {type(node).__name__} before any model request")
            node = await run.next(node)
        node = await _call_model(run, node, turn.events)
        if not Agent.is_call_tools_node(node):
            raise RuntimeError(f"Pydantic AI followed the model request with {type(node).__name__}")
        response = node.model_response
        usage = usage_of(response)
        deferred = [call for call in response.tool_calls if _is_deferred(run, call)]
        if deferred:
            not_deferred = [call for call in response.tool_calls if call not in deferred]
            state = {
                "contexts": _serialised_contexts(run, deferred),
                "messages": dump_messages_data([*carried, *run.new_messages()]),
                "not_deferred": [call.tool_call_id for call in not_deferred],
            }
            return ToolCallsRequested(
                framework_run_state=encode_run_state(RUN_STATE_ADAPTER, RUN_STATE_VERSION,
                                                     [call.tool_call_id for call in deferred], state),
                tool_calls=pvector(
                    DeferredToolCall(tool_call_id=call.tool_call_id, tool_name=call.tool_name,
                                     arguments=call.args_as_json_str(),
                                     policy=turn.resolve_tool_policy(call.tool_name, _framework_effect(run, call)))
                    for call in deferred
                ),
                usage=usage,
            )
        node = await run.next(node)
        if not Agent.is_end_node(node):
            raise RuntimeError(
                "Pydantic AI needs another model call to finish this response (its output did not validate); "
                "the model call is retried")
        produced = [*carried, *run.new_messages()]
    return TurnCompleted(new_messages=pvector(to_framework_messages(produced)), usage=usage)


__all__ = ["OUTPUT_NOT_PROCESSED", "RUN_STATE_ADAPTER", "RUN_STATE_VERSION", "can_stream", "run_model_step"]
