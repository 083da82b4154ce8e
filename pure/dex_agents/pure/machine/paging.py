"""Message paging for ``list_agent_messages``: newest first pages, each returned oldest first.

A page holds the newest ``limit`` messages with ``sequence < before_sequence`` (every message when
``before_sequence`` is ``None``), in ascending sequence order. ``next_before_sequence`` is the
``before_sequence`` that asks for the next older page: the sequence of the page's oldest message
when an older message exists, else ``None``. Paging from ``None`` and following
``next_before_sequence`` until it is ``None`` therefore yields every message exactly once.

``limit``: ``None`` means 50; anything else is clamped to 1..200 (``0`` and negatives give 1).
``before_sequence`` may be anything: beyond the newest message it pages from the newest, at 1 or
below it gives an empty page with ``next_before_sequence`` ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyrsistent import pvector

from dex_agents.pure.values.rpc import AgentMessagePage
from dex_agents.pure.values.session import AgentMessage

DEFAULT_PAGE_LIMIT = 50
"""Page size when the caller gives none."""

MIN_PAGE_LIMIT = 1
"""The smallest page size a limit is clamped to."""

MAX_PAGE_LIMIT = 200
"""The largest page size a limit is clamped to."""


def clamp_limit(limit: int | None) -> int:
    """The effective page size: 50 for ``None``, else ``limit`` clamped to 1..200.

    >>> [clamp_limit(value) for value in (None, 0, -5, 1, 200, 201)]
    [50, 1, 1, 1, 200, 200]
    """
    if limit is None:
        return DEFAULT_PAGE_LIMIT
    return max(MIN_PAGE_LIMIT, min(MAX_PAGE_LIMIT, limit))


def page_window(message_count: int, before_sequence: int | None, limit: int | None) -> tuple[int, int]:
    """The sequences ``(low, high)`` a page of the messages ``1..message_count`` is drawn from: the page's
    own and the one just older than it, which tells ``page_messages`` whether an older page exists.
    Paging those messages gives the page that paging all of them gives. ``low > high`` when the page
    is empty.

    >>> [page_window(120, None, None), page_window(120, 71, None), page_window(120, 30, 50), page_window(120, 1, 5)]
    [(70, 120), (20, 70), (1, 29), (1, 0)]
    """
    newest = message_count if before_sequence is None else min(message_count, before_sequence - 1)
    if newest < 1:
        return (1, 0)
    return (max(1, newest - clamp_limit(limit)), newest)


def page_messages(
    messages: Sequence[AgentMessage], before_sequence: int | None, limit: int | None
) -> AgentMessagePage:
    """Return one page of ``messages`` (see the module docstring for the rules).

    ``messages`` need not be sorted (a loaded map may come in any order) and is not modified. Their
    sequences must be unique, as they are within a session: paging continues below a page's oldest
    sequence.
    """
    page_size = clamp_limit(limit)
    older = sorted(
        (message for message in messages if before_sequence is None or message.sequence < before_sequence),
        key=lambda message: message.sequence,
    )
    page = older[-page_size:]
    has_older = len(older) > len(page)
    return AgentMessagePage(
        messages=pvector(page),
        next_before_sequence=page[0].sequence if has_older else None,
    )


__all__ = [
    "DEFAULT_PAGE_LIMIT",
    "MAX_PAGE_LIMIT",
    "MIN_PAGE_LIMIT",
    "clamp_limit",
    "page_messages",
    "page_window",
]
