"""The scripted model of the conformance suite, independent of any framework.

An adapter's conformance fixture wraps a ``ScriptedModel`` in its framework's test model: it turns
the framework's model input into ``SeenMessage``s, calls ``respond``, and turns the ``ModelReply``
into the framework's response (streamed when the suite asks for a streaming model, one plain
response otherwise), or raises the framework's error for a ``ScriptedFailure``.

Invariants:
    * ``respond`` is a pure function of what the model sees (``Script``), so a model call rerun
      after a crash, in another process, answers the same.
    * Every call is appended to the ``ModelCallLog`` (a JSON-lines file in the test's state
      directory) before it answers or raises, so the suite asserts exactly what each call received,
      across Worker processes.
    * When the gate ``model-<n>`` is armed (``arm_gate``), the ``n``-th model call of the session
      (1-based, counting reruns) pauses there until the test releases it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final, final

from dex_agents.testing.coordination import FileGate, InvocationLog

MODEL_CALLS_LOG: Final = "model-calls"


@final
@dataclass(frozen=True, slots=True)
class SeenCall:
    """A tool call in an assistant message the model receives (arguments as a JSON object)."""

    tool_call_id: str
    tool_name: str
    arguments: object


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SeenMessage:
    """One message of the model's input, normalised.

    ``role`` is ``user`` (``text``), ``assistant`` (``text`` and/or ``tool_calls``) or ``tool``
    (``tool_call_id`` and the result ``text``). An adapter maps framework messages one to one where
    it can, and splits a framework message that holds several tool results into one per result.
    """

    role: str
    text: str | None = None
    tool_calls: tuple[SeenCall, ...] = ()
    tool_call_id: str | None = None


def user(text: str) -> SeenMessage:
    """A user message."""
    return SeenMessage(role="user", text=text)


def assistant(text: str | None = None, *calls: SeenCall) -> SeenMessage:
    """An assistant message."""
    return SeenMessage(role="assistant", text=text, tool_calls=tuple(calls))


def tool_result(tool_call_id: str, text: str) -> SeenMessage:
    """A tool result."""
    return SeenMessage(role="tool", tool_call_id=tool_call_id, text=text)


@final
@dataclass(frozen=True, slots=True)
class ScriptedFailure:
    """The model call fails. ``retryable=False``: an error a retry cannot fix (a rejected request);
    adapters raise the framework's error that their runner maps to ``NonRetryableModelError``.
    ``context_window=True``: the input exceeds the model's context window; adapters raise the
    framework's error for it, which their binding maps to ``ContextWindowExceededError``."""

    message: str
    retryable: bool = True
    context_window: bool = False


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelReply:
    """What one model call answers.

    Attributes:
        text: Assistant text (streamed in several chunks by a streaming model).
        reasoning: Provider reasoning text, streamed as thinking before the text.
        tool_calls: Function tool calls, in order.
        output: A structured final output (``{"status": ...}``), returned through the framework's
            structured-output mechanism (an output tool call where the framework uses one).
        input_tokens, output_tokens: The call's usage.
        failure: Raise instead of answering.
    """

    text: str | None = None
    reasoning: str | None = None
    tool_calls: tuple[SeenCall, ...] = ()
    output: dict[str, str] | None = None
    input_tokens: int = 10
    output_tokens: int = 5
    failure: ScriptedFailure | None = None


Script = Callable[[Sequence[SeenMessage]], ModelReply]
"""A scenario's model: the reply to a model input."""


def seen_to_json(messages: Sequence[SeenMessage]) -> str:
    """The JSON form the call log stores (one line)."""
    return json.dumps([asdict(message) for message in messages], sort_keys=True, separators=(",", ":"))


def seen_from_json(line: str) -> list[SeenMessage]:
    """``seen_to_json``'s inverse."""
    messages: list[SeenMessage] = []
    for item in json.loads(line):
        calls = tuple(SeenCall(**call) for call in item["tool_calls"])
        messages.append(SeenMessage(role=item["role"], text=item["text"], tool_calls=calls,
                                    tool_call_id=item["tool_call_id"]))
    return messages


def gate_armed(directory: Path, name: str) -> bool:
    """Whether the test armed the gate ``name`` (``arm_gate``)."""
    return (directory / f"{name}.armed").exists()


def arm_gate(directory: Path, name: str) -> FileGate:
    """Arm the gate ``name``: the Worker code that passes it pauses there (see ``FileGate``)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.armed").touch()
    return FileGate(directory, name)


async def pause_if_armed(directory: Path, name: str) -> None:
    """Worker side: wait at the gate ``name`` when it is armed."""
    if gate_armed(directory, name):
        await FileGate(directory, name).mark_reached_async()


@final
@dataclass(frozen=True, slots=True)
class ScriptedModel:
    """A scenario's model, logging every call to ``state_directory``.

    Attributes:
        script: The scenario's replies.
        state_directory: Where the call log and the gates live.
        streaming: Whether the adapter must build a streaming model (else a model without streaming).
    """

    script: Script
    state_directory: Path
    streaming: bool = field(default=True)

    async def respond(self, seen: Sequence[SeenMessage]) -> ModelReply:
        """Log the call, pause at its gate when armed, and answer."""
        log = InvocationLog(self.state_directory, MODEL_CALLS_LOG)
        log.record(seen_to_json(seen))
        await pause_if_armed(self.state_directory, f"model-{log.count()}")
        return self.script(seen)


def model_calls(state_directory: Path) -> list[list[SeenMessage]]:
    """What every model call of the test received, in order."""
    return [seen_from_json(line) for line in InvocationLog(state_directory, MODEL_CALLS_LOG).entries()]


__all__ = [
    "MODEL_CALLS_LOG",
    "ModelReply",
    "Script",
    "ScriptedFailure",
    "ScriptedModel",
    "SeenCall",
    "SeenMessage",
    "arm_gate",
    "assistant",
    "gate_armed",
    "model_calls",
    "pause_if_armed",
    "seen_from_json",
    "seen_to_json",
    "tool_result",
    "user",
]
