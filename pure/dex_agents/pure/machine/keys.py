"""Deterministic keys and ids of a session: message sequence keys, turn ids, idempotency keys and
interrupt ids. The core mints no random id: every one of these is derived from facts already stored.

Invariants:
    * ``message_sequence_key`` is 12 digits, zero-padded, so keys sort like their sequences
      (sequences 1..999_999_999_999).
    * ``turn_id_for(n)`` is ``turn-<n>`` with ``n >= 1`` in plain decimal.
    * ``idempotency_key`` is ``<flowId>/<turnId>/<toolCallId>``, the same on every attempt of a call.
    * ``interrupt_id_for`` is ``<turnId>:<toolCallId>``; it holds no ``/``, so it is a valid Dex
      ChannelMap instance key.

Every function here is total over valid input and raises ``ValueError`` (a programmer error: the
reducers validate runner output before deriving keys) for anything else.
"""

from __future__ import annotations

MIN_MESSAGE_SEQUENCE = 1
"""The first message sequence of a session."""

MAX_MESSAGE_SEQUENCE = 999_999_999_999
"""The largest sequence a 12-digit key can hold."""

_MESSAGE_SEQUENCE_KEY_DIGITS = 12


def _require_int(name: str, value: int) -> None:
    # bool is an int subclass; a True sequence is always a caller bug.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {value!r}")


def _require_path_segment(name: str, value: str) -> None:
    if value == "":
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if "/" in value:
        raise ValueError(f"{name} must not contain '/', got {value!r}")


def message_sequence_key(sequence: int) -> str:
    """Return the ``AgentMessages`` map key of a message: its sequence, 12-digit zero-padded.

    >>> message_sequence_key(42)
    '000000000042'

    Raises:
        ValueError: ``sequence`` is not an int in 1..999_999_999_999.
    """
    _require_int("sequence", sequence)
    if not MIN_MESSAGE_SEQUENCE <= sequence <= MAX_MESSAGE_SEQUENCE:
        raise ValueError(
            f"message sequence must be in {MIN_MESSAGE_SEQUENCE}..{MAX_MESSAGE_SEQUENCE}, got {sequence}"
        )
    return f"{sequence:0{_MESSAGE_SEQUENCE_KEY_DIGITS}d}"


def turn_id_for(turn_number: int) -> str:
    """Return the id of a session's ``turn_number``-th turn (``turn_count + 1`` when it starts).

    >>> turn_id_for(3)
    'turn-3'

    Raises:
        ValueError: ``turn_number`` is not an int >= 1.
    """
    _require_int("turn_number", turn_number)
    if turn_number < 1:
        raise ValueError(f"turn number must be >= 1, got {turn_number}")
    return f"turn-{turn_number}"


def turn_number_of(turn_id: str) -> int:
    """Return ``n`` of the turn id ``turn-<n>`` (the inverse of ``turn_id_for``).

    >>> turn_number_of("turn-3")
    3

    Raises:
        ValueError: ``turn_id`` is not ``turn-<n>`` with ``n >= 1``.
    """
    number = turn_id.removeprefix("turn-")
    if number == turn_id or not (number.isascii() and number.isdigit()) or int(number) < 1:
        raise ValueError(f"a turn ID is turn-<n>, got {turn_id!r}")
    return int(number)


def idempotency_key(flow_id: str, turn_id: str, tool_call_id: str) -> str:
    """Return the idempotency key of one tool call: ``<flowId>/<turnId>/<toolCallId>``.

    The key is scoped to the turn, because tool call ids may repeat across turns.

    >>> idempotency_key("session-42", "turn-1", "call_a")
    'session-42/turn-1/call_a'

    Raises:
        ValueError: ``flow_id`` is empty, or ``turn_id`` / ``tool_call_id`` is empty or contains ``/``
            (either would make the key ambiguous).
    """
    if flow_id == "":
        raise ValueError(f"flow_id must be a non-empty string, got {flow_id!r}")
    _require_path_segment("turn_id", turn_id)
    _require_path_segment("tool_call_id", tool_call_id)
    return f"{flow_id}/{turn_id}/{tool_call_id}"


def interrupt_id_for(turn_id: str, tool_call_id: str) -> str:
    """Return the id of the approval interrupt of one tool call: ``<turnId>:<toolCallId>``.

    It contains no ``/``, so it can key an ``InterruptResolutions`` ChannelMap instance.

    >>> interrupt_id_for("turn-2", "call_a")
    'turn-2:call_a'

    Raises:
        ValueError: ``turn_id`` or ``tool_call_id`` is empty or contains ``/``.
    """
    _require_path_segment("turn_id", turn_id)
    _require_path_segment("tool_call_id", tool_call_id)
    return f"{turn_id}:{tool_call_id}"


MAX_MESSAGE_ID_LENGTH = 200
"""The longest user message ID ``send_user_message_once`` takes (it keys a map instance)."""


def message_id_problem(message_id: str) -> str | None:
    """``None`` when ``message_id`` can key a ``UserMessageReceipts`` instance, else what is wrong: it
    must be non-blank, at most ``MAX_MESSAGE_ID_LENGTH`` characters, without ``/`` (Dex instance keys
    cannot hold one) and encodable as UTF-8 (no lone surrogate).

    >>> message_id_problem("order-42/retry")
    "message_id must not contain '/', got 'order-42/retry'"
    """
    if message_id.strip() == "":
        return f"message_id must not be blank, got {message_id!r}"
    if len(message_id) > MAX_MESSAGE_ID_LENGTH:
        return f"message_id must be at most {MAX_MESSAGE_ID_LENGTH} characters, got {len(message_id)}"
    if "/" in message_id:
        return f"message_id must not contain '/', got {message_id!r}"
    if any(0xD800 <= ord(character) <= 0xDFFF for character in message_id):
        return f"message_id must not contain a lone surrogate, got {message_id!r}"
    return None


__all__ = [
    "MAX_MESSAGE_ID_LENGTH",
    "MAX_MESSAGE_SEQUENCE",
    "MIN_MESSAGE_SEQUENCE",
    "idempotency_key",
    "interrupt_id_for",
    "message_id_problem",
    "message_sequence_key",
    "turn_id_for",
    "turn_number_of",
]
