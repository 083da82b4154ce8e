"""What the Pydantic AI adapter's tests share beside the conformance fixture: how a scripted
``FunctionModel`` streams a response."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pydantic_ai.messages import ModelResponsePart, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.models.function import DeltaThinkingCalls, DeltaThinkingPart, DeltaToolCall, DeltaToolCalls


def streamed_parts(parts: Sequence[ModelResponsePart]) -> Iterator[str | DeltaToolCalls | DeltaThinkingCalls]:
    """What a ``FunctionModel``'s ``stream_function`` yields for ``parts``: each text in two chunks (so
    every text arrives in more than one delta), each thinking part and tool call whole."""
    for index, part in enumerate(parts):
        if isinstance(part, TextPart):
            middle = len(part.content) // 2
            yield part.content[:middle]
            yield part.content[middle:]
        elif isinstance(part, ThinkingPart):
            yield {index: DeltaThinkingPart(content=part.content)}
        elif isinstance(part, ToolCallPart):
            yield {index: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(),
                                        tool_call_id=part.tool_call_id)}


__all__ = ["streamed_parts"]
