"""The HTTP statuses every adapter's ``is_non_retryable`` agrees on.

A 4xx answer says the request itself is wrong, so the same request fails again; except the client
statuses a later attempt can pass: 408 (timeout), 409 (conflict), 425 (too early) and 429 (rate
limit; an adapter may still call a 429 final when the provider says the quota is spent).
"""

from __future__ import annotations

from typing import Final

RETRYABLE_CLIENT_STATUSES: Final = frozenset({408, 409, 425, 429})


def is_final_client_status(status: int) -> bool:
    """Whether ``status`` is a 4xx that a retry of the same request cannot pass.

    >>> [is_final_client_status(status) for status in (400, 429, 500)]
    [True, False, False]
    """
    return 400 <= status < 500 and status not in RETRYABLE_CLIENT_STATUSES


__all__ = ["RETRYABLE_CLIENT_STATUSES", "is_final_client_status"]
