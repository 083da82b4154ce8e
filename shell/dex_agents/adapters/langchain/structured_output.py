"""Structured output by LangChain's "tool strategy": the schema is bound as one more tool.

As ``langchain.agents.create_agent(response_format=ToolStrategy(Schema))`` does: the Pydantic model
is bound beside the function tools under its class name, with ``tool_choice="any"``, and the turn's
final output is the model's one call of that tool; its validated arguments are answered with a
``ToolMessage`` ``"Returning structured response: <output>"``, so the stored history stays one
where every call has its result.

Invariants:
    * The output tool never runs as a deferred call and never runs inside ``RunModel``; a response
      that calls function tools beside it is handled by the model step (its output call is answered
      with ``OUTPUT_NOT_PROCESSED``).
    * A response whose only calls are output calls ends the turn only when there is exactly one and
      its arguments validate; otherwise ``StructuredOutputError`` fails the attempt, and ``RunModel``
      retries the model call (``create_agent`` would instead feed the error back in a second model
      call, which one ``RunModel`` cannot make).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, final

from langchain_core.messages import ToolMessage
from pydantic import BaseModel, ValidationError

OUTPUT_NOT_PROCESSED: Final = (
    "Output not processed: this response also called function tools, which run first. "
    "Read their results, then give the final output again."
)
"""What the model reads for an output-tool call that came beside function-tool calls."""

STRUCTURED_RESPONSE_PREFIX: Final = "Returning structured response: "
"""The start of the result of an accepted output call (``create_agent``'s text)."""


class StructuredOutputError(RuntimeError):
    """The response's output calls give no single valid output; the model call is retried."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class OutputCall:
    """An output-tool call of a response: its ID, and its arguments (``None``: not a JSON object)."""

    tool_call_id: str
    arguments: dict[str, object] | None


@final
@dataclass(frozen=True, slots=True)
class StructuredOutput:
    """The response format: a Pydantic model bound as the tool named after its class."""

    schema: type[BaseModel]

    @property
    def tool_name(self) -> str:
        return self.schema.__name__

    def answer(self, calls: Sequence[OutputCall]) -> ToolMessage:
        """The result of the response's single output call, once its arguments validate.

        Raises:
            StructuredOutputError: several output calls, or arguments that do not validate.
        """
        if len(calls) != 1:
            raise StructuredOutputError(
                f"the model called the output tool {self.tool_name!r} {len(calls)} times in one response; "
                "the model call is retried")
        (call,) = calls
        if call.arguments is None:
            raise StructuredOutputError(
                f"the model's {self.tool_name!r} output is not a JSON object; the model call is retried")
        try:
            parsed = self.schema.model_validate(call.arguments)
        except ValidationError as error:
            raise StructuredOutputError(
                f"the model's {self.tool_name!r} output does not validate ({error}); the model call is retried"
            ) from error
        return ToolMessage(content=f"{STRUCTURED_RESPONSE_PREFIX}{parsed}", tool_call_id=call.tool_call_id,
                           name=self.tool_name)


def structured_output(response_format: object) -> StructuredOutput | None:
    """The ``StructuredOutput`` of a factory's ``response_format`` (``None``: text output).

    Raises:
        TypeError: ``response_format`` is not a Pydantic model class.
    """
    if response_format is None:
        return None
    if isinstance(response_format, type) and issubclass(response_format, BaseModel):
        return StructuredOutput(response_format)
    raise TypeError(f"response_format must be a Pydantic model class (a BaseModel subclass), "
                    f"got {response_format!r}")


__all__ = [
    "OUTPUT_NOT_PROCESSED",
    "STRUCTURED_RESPONSE_PREFIX",
    "OutputCall",
    "StructuredOutput",
    "StructuredOutputError",
    "structured_output",
]
