"""Session lookups that need no Flow type: which agent a session belongs to, and listing sessions.

Each call opens a Client (with an empty Registry and a BlobCache of its own) for one request and
closes it, so a caller can learn a session's Flow type before it builds a ``SessionClient``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from dex import Client, Credential, FlowInfo, Registry, SearchFlowEntry

from dex_agents.client.connection import OwnedBlobCache, client_options
from dex_agents.client.shared import sessions_query

__all__ = ["describe_session", "search_sessions"]


@contextlib.contextmanager
def _bare_client(server_address: str, credential: Credential | None) -> Iterator[Client]:
    cache = OwnedBlobCache()
    try:
        with Client(Registry([]), cache.blob_cache, client_options(server_address, credential)) as client:
            yield client
    finally:
        cache.close()


def describe_session(server_address: str, session_id: str, *, credential: Credential | None = None) -> FlowInfo:
    """The session's run (its ``flow_type`` names the agent).

    Raises:
        FlowNotFoundError: No session ``session_id`` exists.
    """
    with _bare_client(server_address, credential) as client:
        return client.describe_flow(session_id)


def search_sessions(server_address: str, *, flow_type: str | None = None, limit: int = 100,
                    credential: Credential | None = None) -> list[SearchFlowEntry]:
    """Up to ``limit`` Flows of ``flow_type`` (of every type when ``None``), in the server's order."""
    query = "" if flow_type is None else sessions_query(flow_type)
    with _bare_client(server_address, credential) as client:
        return list(client.search_flows(query, limit).flows)
