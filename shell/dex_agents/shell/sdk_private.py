"""Every use of dex-python-sdk internals, in one place, for the pinned SDK version only.

The SDK's public API lacks three things the session needs: a way to see that a queued output frame
was written (the heartbeat proof before a single-attempt tool), a cheap version lookup on the pull
Worker's stream registrations, and committed-state reads for clients (sync and async channels with
the Client's credential, blob hydration, the Registry's value mapping, the SDK's translation of gRPC
errors). Each is reached here and nowhere else (``dex_agents.client.server_calls`` uses the last).

Invariants:
    * ``PINNED_SDK_VERSION`` is the version these reads were written against; ``check_pinned_sdk()``
      says whether the installed SDK is it, and a test pins both the version and every name used.
    * Each accessor degrades to the safe side when its name is missing: no output queue means the
      single-attempt tool does not run; no version lookup means nothing is patched.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.metadata
from collections.abc import Callable
from typing import Final

import dex._pull_worker as _pull_worker
from dex import AsyncContext
from dex._async_value_hydrator import AsyncValueHydrator
from dex._credential_transport import AsyncCredentialRunner, async_channel, sync_channel
from dex._grpc_errors import translate_rpc_error
from dex._value_hydrator import ValueHydrator
from dex._value_mapper import ValueMapper

PINNED_SDK_VERSION: Final = "1.23.0"
"""The dex-python-sdk version whose internals this module reads (pyproject pins the same)."""

_VERSION_LOOKUP: Final = "sdk_version"


def installed_sdk_version() -> str:
    """The installed dex-python-sdk's version."""
    return importlib.metadata.version("dex-python-sdk")


def check_pinned_sdk() -> bool:
    """Whether the installed SDK is the one these internals were written against."""
    return installed_sdk_version() == PINNED_SDK_VERSION


def invocation_output_queue(context: AsyncContext) -> asyncio.Queue[object] | None:
    """The per-invocation queue of output frames an ``AsyncWorker`` writes one at a time, or ``None``
    when this SDK has none (the frame a Step queued has been written once the queue is empty again)."""
    emitter = getattr(context, "_output_emitter", None)
    queue = getattr(emitter, "queue", None)
    return queue if isinstance(queue, asyncio.Queue) else None


def memoize_sdk_version() -> bool:
    """Make the pull Worker's per-stream ``sdk_version`` lookup compute once (idempotent).

    SDK 1.23.0 parses the installed package's metadata for every ``PollWorkerTask`` stream it opens
    (1-6 ms of CPU each, about one stream per turn); the version cannot change while the process
    runs, so the answer is the SDK's own, computed once. Returns whether it is now memoized.
    """
    current: object = getattr(_pull_worker, _VERSION_LOOKUP, None)
    if current is None or not callable(current):
        return False
    if getattr(current, "cache_info", None) is not None:
        return True
    lookup: Callable[[], str] = current
    setattr(_pull_worker, _VERSION_LOOKUP, functools.cache(lookup))
    return True


__all__ = [
    "PINNED_SDK_VERSION",
    "AsyncCredentialRunner",
    "AsyncValueHydrator",
    "ValueHydrator",
    "ValueMapper",
    "check_pinned_sdk",
    "installed_sdk_version",
    "invocation_output_queue",
    "async_channel",
    "memoize_sdk_version",
    "sync_channel",
    "translate_rpc_error",
]
