"""History compaction, decided: the policy, which messages a compaction summarizes, the input estimate,
and the texts the model reads.

A session's transcript is never cut. Once compacted, the model sees the agent's instructions, one
summary message (``summary_message_text``) and the stored messages after the summary's boundary
(``through_sequence``). A later compaction summarizes the previous summary plus the next span.

Invariants:
    * ``compaction_span`` returns whole turns only, oldest first, all after the current boundary, and
      never one of the last ``keep_recent_turns`` turns (the running turn counts as one): a tool call
      and its result are stored in the same turn, so the span never separates them.
    * ``estimated_input_tokens`` is ``ceil(characters / CHARACTERS_PER_TOKEN)`` over the summary and
      every stored item the model sees: a documented estimate, not a tokenizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, assert_never, final

from dex_agents.pure.values.session import AgentMessage, MessageRole, item_refers_to

CHARACTERS_PER_TOKEN: Final = 4
"""The estimate's ratio: about four characters of stored JSON per token (English text, most tokenizers)."""

DEFAULT_KEEP_RECENT_TURNS: Final = 2

DEFAULT_INSTRUCTIONS: Final = (
    "You compact the history of a conversation between a user and an AI assistant that uses tools, so "
    "the assistant can continue it. Write a concise summary that keeps everything the assistant needs: "
    "the user's goals and constraints, facts and identifiers (names, numbers, IDs, amounts, dates), what "
    "each tool call did and returned (which writes were made and their outcomes), decisions and promises "
    "made, and open questions. Write plain prose or short bullet points, no preamble."
)
"""The summarization call's system prompt unless ``CompactionPolicy.instructions`` gives one."""

TRANSCRIPT_HEADER: Final = "Conversation to summarize:"
"""The first line of every transcript a summarization call reads."""

SUMMARY_PREFIX: Final = "Summary of the earlier conversation (compacted to fit the model's context window):\n\n"


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionPolicy:
    """When and how a session compacts its history (``create_*_session_flow(compaction=...)``).

    Attributes:
        reactive: Compact when a model call is refused because its input exceeds the model's
            context window, then run the call again (on by default).
        trigger_tokens: Compact before a model call whose estimated input exceeds this many tokens
            (``None``: never proactively).
        keep_recent_turns: How many of the latest turns stay verbatim (>= 1; the running turn counts).
        instructions: The summarization call's system prompt.
    """

    reactive: bool = True
    trigger_tokens: int | None = None
    keep_recent_turns: int = DEFAULT_KEEP_RECENT_TURNS
    instructions: str = DEFAULT_INSTRUCTIONS

    def __post_init__(self) -> None:
        if self.trigger_tokens is not None and (type(self.trigger_tokens) is not int or self.trigger_tokens < 1):
            raise ValueError(f"trigger_tokens must be an int >= 1 or None, got {self.trigger_tokens!r}")
        if type(self.keep_recent_turns) is not int or self.keep_recent_turns < 1:
            raise ValueError(f"keep_recent_turns must be an int >= 1, got {self.keep_recent_turns!r}")
        if not self.instructions.strip():
            raise ValueError("instructions must be a non-blank str")


def compaction_span(messages: Sequence[AgentMessage], keep_recent_turns: int) -> tuple[AgentMessage, ...]:
    """The oldest whole turns of ``messages`` (those the model sees, in sequence order) before the last
    ``keep_recent_turns`` turns; empty when nothing can be summarized.

    >>> from dex_agents.pure.values.session import MessageRole
    >>> def user(n: int, turn: int) -> AgentMessage:
    ...     return AgentMessage(sequence=n, turn_id=f"turn-{turn}", role=MessageRole.USER, text="hi",
    ...                         tool_call_id=None, tool_name=None, tool_arguments=None, tool_output=None,
    ...                         framework_item="[]")
    >>> [m.sequence for m in compaction_span([user(1, 1), user(2, 2), user(3, 3)], 2)]
    [1]
    """
    turns: list[str] = []
    for message in messages:
        if not turns or turns[-1] != message.turn_id:
            turns.append(message.turn_id)
    kept = set(turns[-keep_recent_turns:])
    span: list[AgentMessage] = []
    for message in messages:
        if message.turn_id in kept:
            break
        span.append(message)
    return tuple(span)


def estimated_input_tokens(summary: str | None, messages: Sequence[AgentMessage]) -> int:
    """The estimated tokens of a model input holding ``summary`` and ``messages`` (see the invariants)."""
    characters = len(summary_message_text(summary)) if summary is not None else 0
    for message in messages:
        characters += len(message.framework_item) + len(message.text or "") * _refers(message, "text")
        characters += len(message.tool_output or "") * _refers(message, "tool_output")
    return -(-characters // CHARACTERS_PER_TOKEN)


def _refers(message: AgentMessage, field: str) -> int:
    """1 when the stored item holds ``field`` by reference (a long text stored once), else 0."""
    return 1 if item_refers_to(message.framework_item, field) else 0


def summary_message_text(summary: str) -> str:
    """The user message that stands for the summarized history in the model input."""
    return SUMMARY_PREFIX + summary


def render_transcript(previous_summary: str | None, messages: Sequence[AgentMessage]) -> str:
    """The text a summarization call reads: the previous summary, then each message of the span by its
    display fields (who said it, the call a response made, each tool's result)."""
    lines = [TRANSCRIPT_HEADER]
    if previous_summary is not None:
        lines.append(f"Summary of the conversation before this part:\n{previous_summary}\n")
    for message in messages:
        match message.role:
            case MessageRole.USER:
                lines.append(f"User: {message.text or ''}")
            case MessageRole.ASSISTANT:
                if message.text:
                    lines.append(f"Assistant: {message.text}")
                if message.tool_name is not None:
                    lines.append(f"Assistant called tool {message.tool_name} with {message.tool_arguments or '{}'}")
                elif not message.text:
                    lines.append("Assistant called tools.")
            case MessageRole.TOOL:
                lines.append(f"Tool {message.tool_name or ''} returned: {message.tool_output or ''}")
            case _:
                assert_never(message.role)
    return "\n".join(lines)


__all__ = [
    "CHARACTERS_PER_TOKEN",
    "DEFAULT_INSTRUCTIONS",
    "DEFAULT_KEEP_RECENT_TURNS",
    "SUMMARY_PREFIX",
    "TRANSCRIPT_HEADER",
    "CompactionPolicy",
    "compaction_span",
    "estimated_input_tokens",
    "render_transcript",
    "summary_message_text",
]
