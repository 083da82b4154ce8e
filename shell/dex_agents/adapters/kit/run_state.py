"""A versioned run-state envelope: what an adapter keeps between a turn's model calls.

The session stores ``framework_run_state`` opaquely; an adapter wraps its own state in this
envelope so that a state written by another adapter, another format version or a corrupted store is
refused on read with a clear error instead of being misread. The envelope also records the round:
the tool call IDs the latest model response deferred, in the order the model made them, which is
what ``latest_round_results`` feeds back (never an earlier round's results).

Wire form (compact JSON, keys sorted)::

    {"adapter": "pydantic_ai", "round": ["call-1", "call-2"], "state": <adapter JSON>, "version": 1}

Invariants: ``decode_run_state(encode_run_state(s))`` equals ``s``; decoding checks the adapter name,
the version, the round (a non-empty list of distinct non-empty strings) and nothing of ``state``,
which belongs to the adapter.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import final


class RunStateError(ValueError):
    """A run state that this adapter version cannot read (another adapter, another version, corrupt).

    Decoding is deterministic, so a retry cannot help: adapters raise it as a non-retryable error."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RunState:
    """A decoded envelope.

    Attributes:
        adapter: The adapter that wrote it (e.g. ``"pydantic_ai"``).
        version: The adapter's run-state format version.
        round_call_ids: The tool call IDs the latest model response deferred, in the model's order.
        state: The adapter's own JSON value (``json.loads`` types).
    """

    adapter: str
    version: int
    round_call_ids: tuple[str, ...]
    state: object


def encode_run_state(adapter: str, version: int, round_call_ids: Sequence[str], state: object) -> str:
    """The envelope's JSON text; ``state`` must be JSON-serialisable (``json.dumps`` types)."""
    if not round_call_ids:
        raise ValueError("a run state needs the round's tool call IDs (at least one)")
    return json.dumps(
        {"adapter": adapter, "round": list(round_call_ids), "state": state, "version": version},
        separators=(",", ":"),
        sort_keys=True,
    )


def decode_run_state(text: str, *, adapter: str, version: int) -> RunState:
    """The envelope in ``text``, checked to be ``adapter``'s format ``version``.

    Raises:
        RunStateError: the text is not an envelope, or it belongs to another adapter or version.
    """
    try:
        data = json.loads(text)
    except ValueError as error:
        raise RunStateError(f"the turn's run state is not JSON: {error}") from error
    if not isinstance(data, dict) or set(data) != {"adapter", "round", "state", "version"}:
        raise RunStateError("the turn's run state is not a dex-agents run-state envelope")
    if data["adapter"] != adapter:
        raise RunStateError(f"the turn's run state was written by adapter {data['adapter']!r}, not {adapter!r}")
    found = data["version"]
    if type(found) is not int or found != version:
        raise RunStateError(
            f"the turn's run state has format version {found!r}; this {adapter} adapter reads version {version}"
        )
    round_ids = data["round"]
    if (
        not isinstance(round_ids, list)
        or not round_ids
        or not all(isinstance(call_id, str) and call_id for call_id in round_ids)
        or len(set(round_ids)) != len(round_ids)
    ):
        raise RunStateError("the turn's run state has no valid round (a list of distinct tool call IDs)")
    return RunState(adapter=adapter, version=version, round_call_ids=tuple(round_ids), state=data["state"])


__all__ = ["RunState", "RunStateError", "decode_run_state", "encode_run_state"]
