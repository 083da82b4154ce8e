"""Every use of dex-python-sdk internals, in one place, for the pinned SDK version only.

The SDK's public API lacks four things the session needs: a way to see that a queued output frame
was written (the heartbeat proof before a single-attempt tool), a cheap version lookup on the pull
Worker's stream registrations, committed-state reads for clients and Workers (sync and async channels
with the Client's credential, blob hydration, the Registry's value mapping, the SDK's translation of
gRPC errors), and channels that take answers over gRPC's 4 MiB default (``large_message_channels``:
a snapshot of a long session, the hydration of several large values). Each is reached here and
nowhere else (``dex_agents.client.server_calls`` and ``shell.history`` use the reads).

Invariants:
    * ``PINNED_SDK_VERSION`` is the version these reads were written against; ``check_pinned_sdk()``
      says whether the installed SDK is it, and a test pins both the version and every name used.
    * Each accessor degrades to the safe side when its name is missing: no output queue means the
      single-attempt tool does not run; no version lookup means nothing is patched.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.metadata
import threading
from collections.abc import Callable, Iterator
from typing import Any, Final, cast

import grpc

import dex._pull_worker as _pull_worker
import dex.async_client as _async_client
import dex.async_worker as _async_worker
import dex.client as _client
import dex.worker as _worker
from dex import AsyncContext, Credential, RetryAfterError
from dex._async_value_hydrator import AsyncValueHydrator
from dex._credential_transport import (
    AsyncCredentialRunner,
    _AsyncCredentialInterceptor,
    _SyncCredentialInterceptor,
    async_channel,
    sync_channel,
)
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


LARGE_MESSAGE_BYTES: Final = 256 * 1024 * 1024
"""The largest message a channel of ``large_message_channel`` receives (gRPC's default is 4 MiB)."""


_LARGE_MESSAGE_OPTIONS: Final = (("grpc.max_receive_message_length", LARGE_MESSAGE_BYTES),
                                  ("grpc.max_send_message_length", LARGE_MESSAGE_BYTES))


def large_message_channel(server_address: str, credential: Credential | None) -> grpc.Channel:
    """A sync channel like the SDK's Client's (the same credential interceptor), receiving messages up to
    ``LARGE_MESSAGE_BYTES``: reads of committed state may return a long session's history at once."""
    channel = grpc.insecure_channel(server_address, options=list(_LARGE_MESSAGE_OPTIONS))
    if credential is None:
        return channel
    return grpc.intercept_channel(channel, _SyncCredentialInterceptor(credential))


def large_message_async_channel(server_address: str,
                                 credential_runner: AsyncCredentialRunner | None) -> grpc.aio.Channel:
    """``async_channel`` of the SDK, receiving messages up to ``LARGE_MESSAGE_BYTES``."""
    interceptors = [] if credential_runner is None else [
        cast(grpc.aio.ClientInterceptor, _AsyncCredentialInterceptor(credential_runner))]
    return grpc.aio.insecure_channel(server_address, options=list(_LARGE_MESSAGE_OPTIONS),
                                     interceptors=interceptors or None)


_CHANNEL_FACTORIES: Final[tuple[tuple[Any, str, Callable[..., Any]], ...]] = (
    (_client, "sync_channel", large_message_channel),
    (_worker, "sync_channel", large_message_channel),
    (_async_client, "async_channel", large_message_async_channel),
    (_async_worker, "async_channel", large_message_async_channel),
)
_PATCHING: Final = threading.Lock()


@contextlib.contextmanager
def large_message_channels() -> Iterator[None]:
    """While the block runs, the SDK's ``Client``, ``AsyncClient``, ``Worker`` and ``AsyncWorker`` built in it
    open their channel to Dex with a receive limit of ``LARGE_MESSAGE_BYTES`` instead of gRPC's 4 MiB.

    That channel carries RPC answers (a snapshot of a session with megabytes of history) and the
    ``LoadBlobs`` answers that hydrate large values (several megabytes when a task references several
    large values the BlobCache lacks). The pull stream's own channel, which carries the task frames,
    keeps its limit: large values reach it as blob references. Blocks run one at a time.
    """
    with _PATCHING:
        originals = [(module, name, getattr(module, name)) for module, name, _ in _CHANNEL_FACTORIES]
        try:
            for module, name, factory in _CHANNEL_FACTORIES:
                setattr(module, name, factory)
            yield
        finally:
            for module, name, original in originals:
                setattr(module, name, original)


class RaisableRetryAfter(RetryAfterError):
    """``dex.RetryAfterError`` that can travel as an exception: the SDK's is a frozen dataclass, so Python
    code that sets a raised exception's ``__traceback__`` (``contextlib``'s context managers do, around
    every Step method here) fails on it with ``FrozenInstanceError``, and the retry-after is lost. The
    exception machinery's attributes (``__traceback__``, ``__cause__``, ...) may be set; its fields stay frozen."""

    def __setattr__(self, name: str, value: object) -> None:
        if name.startswith("__") and name.endswith("__"):
            object.__setattr__(self, name, value)
        else:
            super().__setattr__(name, value)


def raisable_retry_after(after_seconds: int, cause: BaseException) -> RetryAfterError:
    """``dex.retry_after(after_seconds, cause)`` that survives being raised (``RaisableRetryAfter``)."""
    if after_seconds <= 0:
        raise ValueError("after_seconds must be positive")
    return RaisableRetryAfter(after_seconds=after_seconds, cause=cause)


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
    "LARGE_MESSAGE_BYTES",
    "PINNED_SDK_VERSION",
    "AsyncCredentialRunner",
    "AsyncValueHydrator",
    "ValueHydrator",
    "ValueMapper",
    "check_pinned_sdk",
    "installed_sdk_version",
    "invocation_output_queue",
    "RaisableRetryAfter",
    "async_channel",
    "large_message_async_channel",
    "large_message_channel",
    "large_message_channels",
    "memoize_sdk_version",
    "raisable_retry_after",
    "sync_channel",
    "translate_rpc_error",
]
