"""The server calls the SDK's Clients lack: committed Attribute reads, a Worker probe, and the raw
reads an export needs (every Attribute, a Channel's pending messages, the run's history).

dex-python-sdk 1.23.0 has no Attribute read on ``Client``/``AsyncClient`` and no per-call RPC
timeout. Both are built here, and only here, from the SDK's generated stubs and its private
helpers (the credential channel, the blob hydrator, the value mapper, the Registry's RPC lookup and
the error translation); an SDK without them fails at import, before anything is read.

Invariants:
    * ``read_attribute`` returns the committed value (``FlowService.GetAttributes``), blob
      references hydrated through the BlobCache and decoded with the Registry's codec for the
      definition's type; ``None`` when the Attribute is unset. No Worker is involved.
    * ``worker_answers`` invokes ``list_agent_messages`` (a read: limit 1) exactly as the Client
      would, but with an RPC timeout of ``seconds``: Dex withdraws an RPC no Worker took within its
      timeout, so a probe that times out was never run, and nothing a probe runs changes a session.
      It answers ``True`` once any Worker answered (even with an error), ``False`` when none took
      it, and raises the translated error when the session is unknown or the server refused.
    * ``read_all_values``, ``read_channel`` and ``read_history`` return Dex's own records
      (``GetAttributes`` with every key, ``GetChannelMessages``, ``GetHistoryEvents`` paged to the
      end), with every blob reference in a returned value hydrated, undecoded: the export reads them.
"""

from __future__ import annotations

import uuid
import weakref
from typing import Any, Final, TypeVar, cast, final

import grpc
from dex import Attribute, BlobCache, Credential, DexServiceError, Registry, WorkerInvocationError
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from dex_agents.pure.rpc_values import ListAgentMessagesInput
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.sdk_private import (
    AsyncCredentialRunner,
    AsyncValueHydrator,
    ValueHydrator,
    ValueMapper,
    async_channel,
    sync_channel,
    translate_rpc_error,
)

__all__ = ["AsyncServerCalls", "ServerCalls"]

T = TypeVar("T")

PROBE_DEADLINE_MARGIN_SECONDS: Final = 5.0
"""Added to the probe's RPC timeout for the gRPC deadline, a backstop if the server ignores it."""


def _attributes_request(session_id: str, attribute: Attribute[Any]) -> pb.GetAttributesRequest:
    return pb.GetAttributesRequest(flow_id=session_id, keys=[attribute.name])


def _entry_of(response: pb.GetAttributesResponse, attribute: Attribute[Any]) -> pb.Value | None:
    return next((entry.value for entry in response.attributes if entry.key == attribute.name), None)


def _probe_request(registry: Registry, values: ValueMapper, flow: AgentSessionFlow, session_id: str,
                   seconds: int) -> pb.InvokeRPCRequest:
    """``list_agent_messages(limit=1)`` as ``Client.invoke_rpc`` builds it, with an RPC timeout."""
    if seconds < 1:
        raise ValueError(f"a Worker probe waits whole seconds >= 1, got {seconds}")
    _, rpc = registry._rpc_for_method(flow.list_agent_messages)
    assert rpc.input_codec is not None
    return pb.InvokeRPCRequest(
        flow_id=session_id, run_id="", rpc_name=rpc.name,
        input=values.encode(ListAgentMessagesInput(before_sequence=None, limit=1), rpc.input_codec),
        timeout_seconds=seconds, lock_attribute_keys=rpc.locks, request_id=str(uuid.uuid4()),
        is_transactional=rpc.options.is_transactional,
        load_attribute_map_instances=rpc.load_attribute_map_instances,
        load_channel_names=rpc.load_channel_names, load_channel_map_instances=rpc.load_channel_map_instances)


def _probe_outcome(error: grpc.RpcError, session_id: str) -> bool:
    """Whether a Worker took a probe that failed with ``error``; raises what is not about Workers."""
    if error.code() is grpc.StatusCode.DEADLINE_EXCEEDED:
        return False
    translated: DexServiceError = translate_rpc_error(error, "invoke_rpc", session_id, "active")
    if isinstance(translated, WorkerInvocationError):
        return bool(translated.worker_error_type)  # no type: the server found no Worker to run it
    raise translated from error


@final
class ServerCalls:
    """Attribute reads and Worker probes over a channel of their own (sync)."""

    def __init__(self, server_address: str, credential: Credential | None, blob_cache: BlobCache,
                 registry: Registry) -> None:
        self._channel = sync_channel(server_address, credential)
        self._stub = dex_pb2_grpc.FlowServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._hydrator = ValueHydrator(self._stub, blob_cache)
        self._values = ValueMapper(registry.codec_registry)
        self._registry = registry
        self._close_channel = weakref.finalize(self, self._channel.close)

    def read_attribute(self, session_id: str, attribute: Attribute[T], *, timeout: float) -> T | None:
        """The committed value of ``attribute``, ``None`` when unset.

        Raises:
            DexServiceError: The server refused the read (an unknown session, say).
            ValueMappingError: The stored value does not decode as the attribute's type.
        """
        try:
            response = self._stub.GetAttributes(_attributes_request(session_id, attribute), timeout=timeout)
        except grpc.RpcError as error:
            raise translate_rpc_error(error, "get_attributes", session_id, "existing") from error
        value = _entry_of(cast(pb.GetAttributesResponse, response), attribute)
        if value is None:
            return None
        hydrated = self._hydrator.hydrate(session_id, value)
        return cast(T | None, self._values.decode(hydrated, self._values.codec(attribute.value_type)))

    def worker_answers(self, flow: AgentSessionFlow, session_id: str, seconds: int) -> bool:
        """Whether a Worker serving ``flow`` took a harmless read of ``session_id`` within ``seconds``."""
        request = _probe_request(self._registry, self._values, flow, session_id, seconds)
        try:
            self._stub.InvokeRPC(request, timeout=seconds + PROBE_DEADLINE_MARGIN_SECONDS)
        except grpc.RpcError as error:
            return _probe_outcome(error, session_id)
        return True

    def _call(self, method: str, request: object, session_id: str, timeout: float) -> object:
        try:
            return cast(object, getattr(self._stub, method)(request, timeout=timeout))
        except grpc.RpcError as error:
            raise translate_rpc_error(error, method, session_id, "existing") from error

    def hydrated(self, session_id: str, value: pb.Value) -> pb.Value:
        """``value`` itself, or the value its blob reference stands for."""
        kind = value.WhichOneof("kind")
        return self._hydrator.hydrate(session_id, value) if kind and kind.startswith("internal_blob_id") else value

    def read_all_values(self, session_id: str, *, timeout: float) -> list[tuple[str, pb.Value]]:
        """Every committed Attribute and map instance: (physical key, hydrated value), in Dex's order."""
        request = pb.GetAttributesRequest(flow_id=session_id, all_keys=True)
        response = cast(pb.GetAttributesResponse, self._call("GetAttributes", request, session_id, timeout))
        return [(entry.key, self.hydrated(session_id, entry.value)) for entry in response.attributes]

    def read_channel(self, session_id: str, channel_name: str, *, timeout: float) -> list[pb.Value]:
        """The pending messages of one Channel, oldest first (hydrated)."""
        request = pb.GetChannelMessagesRequest(flow_id=session_id, channel_name=channel_name)
        response = cast(pb.GetChannelMessagesResponse, self._call("GetChannelMessages", request, session_id, timeout))
        return [self.hydrated(session_id, message.value) for message in response.messages]

    def read_history(self, session_id: str, *, timeout: float) -> list[pb.FlowHistoryEvent]:
        """Every history event of the session's current run, oldest first (values not yet hydrated:
        ``hydrated`` each one read)."""
        events: list[pb.FlowHistoryEvent] = []
        page_token = b""
        while True:
            request = pb.GetHistoryEventsRequest(flow_id=session_id, next_page_token=page_token)
            response = cast(pb.GetHistoryEventsResponse, self._call("GetHistoryEvents", request, session_id, timeout))
            events.extend(response.events)
            if not response.next_page_token:
                return events
            page_token = response.next_page_token

    def close(self) -> None:
        """Close the channel (idempotent; also when the object is collected)."""
        self._close_channel()


@final
class AsyncServerCalls:
    """Attribute reads and Worker probes over a channel of their own (asyncio; build it on the loop)."""

    def __init__(self, server_address: str, credential: Credential | None, blob_cache: BlobCache,
                 registry: Registry) -> None:
        self._credentials = None if credential is None else AsyncCredentialRunner(credential)
        self._channel = async_channel(server_address, self._credentials)
        self._stub = dex_pb2_grpc.FlowServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._hydrator = AsyncValueHydrator(self._stub, blob_cache)
        self._values = ValueMapper(registry.codec_registry)
        self._registry = registry
        self._closed = False

    async def read_attribute(self, session_id: str, attribute: Attribute[T], *, timeout: float) -> T | None:
        """The committed value of ``attribute``, ``None`` when unset (see ``ServerCalls.read_attribute``)."""
        try:
            response = await self._stub.GetAttributes(_attributes_request(session_id, attribute), timeout=timeout)
        except grpc.RpcError as error:
            raise translate_rpc_error(error, "get_attributes", session_id, "existing") from error
        value = _entry_of(cast(pb.GetAttributesResponse, response), attribute)
        if value is None:
            return None
        hydrated = await self._hydrator.hydrate(session_id, value)
        return cast(T | None, self._values.decode(hydrated, self._values.codec(attribute.value_type)))

    async def worker_answers(self, flow: AgentSessionFlow, session_id: str, seconds: int) -> bool:
        """Whether a Worker serving ``flow`` took a harmless read of ``session_id`` within ``seconds``."""
        request = _probe_request(self._registry, self._values, flow, session_id, seconds)
        try:
            await self._stub.InvokeRPC(request, timeout=seconds + PROBE_DEADLINE_MARGIN_SECONDS)
        except grpc.RpcError as error:
            return _probe_outcome(error, session_id)
        return True

    async def close(self) -> None:
        """Close the channel (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._channel.close(None)
        finally:
            if self._credentials is not None:
                self._credentials.close()
