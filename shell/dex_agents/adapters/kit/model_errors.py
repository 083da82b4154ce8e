"""How every adapter reads a failed model call: the HTTP statuses a retry cannot pass, and the errors
that say the input exceeds the model's context window.

A 4xx answer says the request itself is wrong, so the same request fails again; except the client
statuses a later attempt can pass: 408 (timeout), 409 (conflict), 425 (too early) and 429 (rate
limit; an adapter may still call a 429 final when the provider says the quota is spent).

A context-window error is recognised on the error or on any error it was raised from or while
handling (``error_chain``): one of the framework's own types, a provider error whose code (or its
body's ``error.code``) is OpenAI's ``context_length_exceeded``, or Anthropic's "prompt is too long".
"""

from __future__ import annotations

from typing import Final

from dex_agents.shell.error_chain import error_chain

RETRYABLE_CLIENT_STATUSES: Final = frozenset({408, 409, 425, 429})

CONTEXT_LENGTH_EXCEEDED: Final = "context_length_exceeded"
"""OpenAI's error code for an input longer than the model's context window."""

PROMPT_TOO_LONG: Final = "prompt is too long"
"""Anthropic's message for it (compared case-insensitively)."""


def is_final_client_status(status: int) -> bool:
    """Whether ``status`` is a 4xx that a retry of the same request cannot pass.

    >>> [is_final_client_status(status) for status in (400, 429, 500)]
    [True, False, False]
    """
    return 400 <= status < 500 and status not in RETRYABLE_CLIENT_STATUSES


def error_code(error: BaseException) -> object:
    """A provider error's code: its ``code`` attribute, else its body's (``{"error": {"code"}}``)."""
    code = getattr(error, "code", None)
    if code is not None:
        return code
    body = getattr(error, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    return inner.get("code") if isinstance(inner, dict) else None


def says_context_window_exceeded(error: BaseException, *framework_errors: type[BaseException]) -> bool:
    """Whether ``error`` says the input exceeds the context window (see the module docstring).

    >>> says_context_window_exceeded(RuntimeError("400: Prompt is too long: 210000 tokens"))
    True
    """
    return any(isinstance(found, framework_errors) or error_code(found) == CONTEXT_LENGTH_EXCEEDED
               or PROMPT_TOO_LONG in str(found).lower() for found in error_chain(error))


__all__ = [
    "CONTEXT_LENGTH_EXCEEDED",
    "PROMPT_TOO_LONG",
    "RETRYABLE_CLIENT_STATUSES",
    "error_chain",
    "error_code",
    "is_final_client_status",
    "says_context_window_exceeded",
]
