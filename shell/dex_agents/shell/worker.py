"""The Registry and Worker a session Flow needs: the session's codecs and async handlers.

Invariants: the Client and every Worker of the session Flows use a Registry from
``session_registry`` (same codecs on both sides); session Steps are ``async`` handlers, so they
run on ``AsyncWorker`` (the sync ``Worker`` rejects them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from dex import AsyncWorker, BlobCache, Codec, Credential, Flow, PullWorkerOptions, Registry, WorkerOptions

from dex_agents.shell import tracing
from dex_agents.shell.codecs import session_codec_registry
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.history import CommittedReader
from dex_agents.shell.sdk_private import large_message_channels, memoize_sdk_version
from dex_agents.shell.start_confirmation import StartReader

DEFAULT_MAX_CONCURRENT_TASKS: Final = 8
"""Task slots of a session Worker (RPCs and Steps share them; one is reserved for RPCs)."""
IDLE_STREAMS_PER_QUEUE: Final = 2
"""Idle task streams a session Worker keeps open (the SDK's default is 1). A turn runs two tasks at
once (``CallTool`` beside ``ResumeTurn``'s wait), after which the SDK holds two idle streams; with one
wanted it closes one and later opens another, a stream closed, opened and registered per turn (about
1 ms of CPU in the Worker and 1 ms in the engine per fresh turn, in alternating runs of
``benchmarks.side_by_side``; see the README's benchmarks)."""


def session_registry(flows: Sequence[Flow[Any]], *, codecs: Mapping[object, Codec[Any]] | None = None) -> Registry:
    """A Registry of ``flows`` with the session codecs (plus ``codecs`` for an application's own types)."""
    return Registry(list(flows), session_codec_registry(codecs), allow_async_handlers=True)


def session_worker(
    registry: Registry,
    blob_cache: BlobCache,
    server_address: str,
    *,
    max_concurrent_tasks: int = DEFAULT_MAX_CONCURRENT_TASKS,
    credential: Credential | None = None,
) -> AsyncWorker:
    """A pull ``AsyncWorker`` serving ``registry``'s Flows from the Dex server at ``server_address``.

    Building one memoizes the SDK's version lookup for its stream registrations (see
    ``sdk_private``), gives its channel to Dex a receive limit above gRPC's 4 MiB (the ``LoadBlobs``
    that hydrates large values), and gives each session Flow's message cache a reader of the server's
    committed state (``shell.history``), so a Step or RPC can read the committed messages its cache lacks,
    and a reader of its event Stream that confirms a single-attempt tool's start before the tool runs
    (``shell.start_confirmation``).
    """
    memoize_sdk_version()
    tracing.enable_tracing_from_environment()  # DEX_AGENTS_OTEL / DEX_AGENTS_OTEL_FILE (see shell.tracing)
    options = WorkerOptions(
        server_address=server_address,
        pull=PullWorkerOptions(max_concurrent_tasks=max_concurrent_tasks, idle_streams_per_queue=IDLE_STREAMS_PER_QUEUE),
        credential=credential,
    )
    with large_message_channels():  # LoadBlobs may hydrate several large values at once
        worker = AsyncWorker(registry, blob_cache, options)
    for flow in registry.flows:
        if isinstance(flow, AgentSessionFlow):
            history = flow.runtime.history
            previous, history.reader = history.reader, CommittedReader(server_address, credential, blob_cache, registry)
            if previous is not None:
                previous.close()
            confirmations = flow.runtime.confirmations
            replaced, confirmations.reader = confirmations.reader, StartReader(
                server_address, credential, flow.get_flow_type(), flow.agent_events.name)
            if replaced is not None:
                replaced.close()
    return worker


__all__ = ["DEFAULT_MAX_CONCURRENT_TASKS", "IDLE_STREAMS_PER_QUEUE", "session_registry", "session_worker"]
