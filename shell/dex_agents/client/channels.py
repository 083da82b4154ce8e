"""The gRPC channel a ``ServerCalls`` reads through, in both colours: the one pair written by hand,
because the SDK opens a sync and an asyncio channel differently (the asyncio one runs the credential
on a runner of its own).

Invariants: ``channel`` carries the Client's credential and receives messages up to
``LARGE_MESSAGE_BYTES`` (an export reads a session's committed values in one answer); ``stub`` is Dex's generated FlowService
stub over it, and ``calls`` the same object typed by the channel's colour (over an asyncio channel
each call returns an awaitable); ``close`` (idempotent) ends the channel and whatever it opened for
the credential; a ``ReadChannel`` also closes when it is collected.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, cast, final

import grpc
from dex import Credential
from dex.dexpb import dex_pb2_grpc

from dex_agents.shell.sdk_private import AsyncCredentialRunner, large_message_async_channel, large_message_channel

if TYPE_CHECKING:
    from dex.dexpb.dex_pb2_grpc import AsyncFlowServiceCalls

__all__ = ["AsyncReadChannel", "ReadChannel"]


@final
class ReadChannel:
    """A sync channel to ``server_address``."""

    def __init__(self, server_address: str, credential: Credential | None) -> None:
        self.channel: grpc.Channel = large_message_channel(server_address, credential)
        self.stub = dex_pb2_grpc.FlowServiceStub(self.channel)
        self.calls = self.stub
        self._close = weakref.finalize(self, self.channel.close)

    def close(self) -> None:
        self._close()


@final
class AsyncReadChannel:
    """An asyncio channel to ``server_address`` (build it on the loop that uses it)."""

    def __init__(self, server_address: str, credential: Credential | None) -> None:
        self._credentials = None if credential is None else AsyncCredentialRunner(credential)
        self.channel: grpc.aio.Channel = large_message_async_channel(server_address, self._credentials)
        self.stub = dex_pb2_grpc.FlowServiceStub(self.channel)
        self.calls = cast("AsyncFlowServiceCalls", self.stub)  # the stub's calls return awaitables here
        self._closed = False

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self.channel.close(None)
        finally:
            if self._credentials is not None:
                self._credentials.close()
