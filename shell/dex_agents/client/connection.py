"""What a session client opens for itself: the Flow definition, a BlobCache, the Client options.

Invariants:
    * A client given a Flow type builds its definition with ``session_flow_definition`` (no runner);
      given a Flow, it uses that Flow (a Worker's own, in a process that also serves it).
    * ``OwnedBlobCache`` lives in a fresh temporary directory that ``close`` (idempotent) removes.
    * The Client options advertise the pull Worker target, which ``session_worker`` serves.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Final, final

from dex import BlobCache, BlobCacheConfig, ClientOptions, Credential, WorkerTarget, open_blob_cache

from dex_agents.shell.flow import AgentSessionFlow, session_flow_definition

__all__ = ["BLOB_CACHE_BYTES", "SERVER_ADDRESS_ENV", "OwnedBlobCache", "client_options", "definition_of"]

SERVER_ADDRESS_ENV: Final = "DEX_SERVER_ADDRESS"
"""The environment variable naming the Dex server (``host:port``) for the command line and Workers."""

BLOB_CACHE_BYTES: Final = 64 * 1024 * 1024
"""Size bound of a client's own BlobCache (large values it reads are cached there)."""


def definition_of(flow: AgentSessionFlow | str) -> AgentSessionFlow:
    """``flow`` itself, or the runner-less definition of the Flow type ``flow``."""
    return flow if isinstance(flow, AgentSessionFlow) else session_flow_definition(flow)


def client_options(server_address: str, credential: Credential | None) -> ClientOptions:
    """Options of a Client whose sessions pull Workers serve."""
    return ClientOptions(server_address=server_address, worker_target=WorkerTarget(pull=True),
                         credential=credential)


@final
class OwnedBlobCache:
    """A BlobCache in a temporary directory of its own."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="dex-agents-client-"))
        try:
            self.blob_cache: BlobCache = open_blob_cache(BlobCacheConfig(str(self.directory / "blob-cache"),
                                                                         BLOB_CACHE_BYTES))
        except BaseException:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        self._closed = False

    def close(self) -> None:
        """Close the cache and remove its directory (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.blob_cache.close()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
