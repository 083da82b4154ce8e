# Generated from async_server_calls.py by scripts/unasync.py: edit that file, then run the script.
"""The server calls the SDK's Clients lack: committed Attribute reads, a Worker probe, and the raw
reads an export needs (every Attribute, a Channel's pending messages, the run's history).

dex-python-sdk 1.23.0 has no Attribute read on its Clients and no per-call RPC timeout. Both are
built here, and only here, from the SDK's generated stubs and its private helpers (the credential
channel, the blob hydrator, the value mapper, the Registry's RPC lookup and the error translation);
an SDK without them fails at import, before anything is read.

Invariants:
    * ``read_attribute`` returns the committed value (``FlowService.GetAttributes``), blob
      references hydrated through the BlobCache and decoded with the Registry's codec for the
      definition's type; ``None`` when the Attribute is unset. No Worker is involved.
    * ``worker_answers`` sends the probe of ``server_requests``: Dex withdraws an RPC no Worker took
      within its timeout, so a probe that times out was never run, and nothing a probe runs changes
      a session. It answers ``True`` once any Worker answered (even with an error), ``False`` when
      none took it, and raises the translated error when the session is unknown or the server refused.
    * ``read_all_values``, ``read_channel`` and ``read_history`` return Dex's own records
      (``GetAttributes`` with every key, ``GetChannelMessages``, ``GetHistoryEvents`` paged to the
      end), with every blob reference in a returned value hydrated, undecoded: the export reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Literal, TypeVar, cast, final

import grpc
from dex import Attribute, AttributeMap, BlobCache, Credential, Registry, RPCInvokeOptions
from dex.dexpb import dex_pb2 as pb

from dex_agents.client.channels import ReadChannel
from dex_agents.client.server_requests import (
    PROBE_DEADLINE_MARGIN_SECONDS,
    attributes_request,
    entries_of,
    probe_outcome,
    probe_request,
    rpc_request,
)
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.sdk_private import ValueHydrator, ValueMapper, translate_rpc_error

__all__ = ["ServerCalls"]

T = TypeVar("T")


@final
class ServerCalls:
    """Attribute reads, Worker probes and export reads over a channel of their own."""

    def __init__(self, server_address: str, credential: Credential | None, blob_cache: BlobCache,
                 registry: Registry) -> None:
        self._channel = ReadChannel(server_address, credential)
        self._stub = self._channel.calls
        self._hydrator = ValueHydrator(self._channel.stub, blob_cache)
        self._values = ValueMapper(registry.codec_registry)
        self._registry = registry

    def read_attribute(self, session_id: str, attribute: Attribute[T], *, timeout: float) -> T | None:
        """The committed value of ``attribute``, ``None`` when unset.

        Raises:
            DexServiceError: The server refused the read (an unknown session, say).
            ValueMappingError: The stored value does not decode as the attribute's type.
        """
        (value,) = self.read_attributes(session_id, (attribute,), timeout=timeout)
        return cast(T | None, value)

    def read_attributes(self, session_id: str, attributes: Sequence[Attribute[Any]], *,
                              timeout: float) -> list[object | None]:
        """The committed value of each of ``attributes`` (``None`` when unset), in their order, read
        in one ``GetAttributes`` (raises as ``read_attribute``)."""
        request = attributes_request(session_id, attributes)
        response = self._call(partial(self._stub.GetAttributes, request, timeout=timeout), "get_attributes",
                                    session_id)
        return [None if value is None else self._values.decode(self._hydrator.hydrate(session_id, value),
                                                               self._values.codec(attribute.value_type))
                for attribute, value in zip(attributes, entries_of(response, attributes), strict=True)]

    def read_map_instance(self, session_id: str, attribute_map: AttributeMap[T], instance: str, *,
                                timeout: float) -> T | None:
        """The committed value of one AttributeMap instance, ``None`` when unset (as ``read_attribute``)."""
        key = attribute_map.load(instance).physical_name
        request = pb.GetAttributesRequest(flow_id=session_id, keys=[key])
        response = self._call(partial(self._stub.GetAttributes, request, timeout=timeout), "get_attributes",
                                    session_id)
        value = next((entry.value for entry in response.attributes if entry.key == key), None)
        if value is None:
            return None
        hydrated = self._hydrator.hydrate(session_id, value)
        return cast(T | None, self._values.decode(hydrated, self._values.codec(attribute_map.value_type)))

    def start_request_id(self, session_id: str, *, timeout: float) -> str:
        """The request ID that started the session's current run (``GetFlowSummary``; continue-as-new
        keeps it)."""
        request = pb.GetFlowSummaryRequest(flow_id=session_id)
        response = self._call(partial(self._stub.GetFlowSummary, request, timeout=timeout), "describe_flow",
                                    session_id)
        return str(response.request_id)

    def worker_answers(self, flow: AgentSessionFlow, session_id: str, seconds: int) -> bool:
        """Whether a Worker serving ``flow`` took a harmless read of ``session_id`` within ``seconds``."""
        request = probe_request(self._registry, self._values, flow, session_id, seconds)
        try:
            self._stub.InvokeRPC(request, timeout=seconds + PROBE_DEADLINE_MARGIN_SECONDS)
        except grpc.RpcError as error:
            return probe_outcome(error, session_id)
        return True

    def invoke(self, method: Callable[..., Any], session_id: str, rpc_input: object,
                     options: RPCInvokeOptions, seconds: int) -> object:
        """``Client.invoke_rpc(method, session_id, rpc_input, options=options)`` with an RPC timeout of
        ``seconds`` (whole, >= 1): a call no Worker took by then fails with a ``WorkerInvocationError``
        without a ``worker_error_type``, and Dex never runs it (the SDK's errors, translated)."""
        request, output_codec = rpc_request(self._registry, self._values, method, session_id, rpc_input, options,
                                            seconds)
        response = self._call(partial(self._stub.InvokeRPC, request,
                                            timeout=seconds + PROBE_DEADLINE_MARGIN_SECONDS),
                                    "invoke_rpc", session_id, "active")
        if output_codec is None:
            return None
        return self._values.decode(self._hydrator.hydrate(session_id, response.output), output_codec)

    def _call(self, call: Callable[[], T], method: str, session_id: str,
                    requirement: Literal["existing", "active"] = "existing") -> T:
        try:
            return call()
        except grpc.RpcError as error:
            raise translate_rpc_error(error, method, session_id, requirement) from error

    def hydrated(self, session_id: str, value: pb.Value) -> pb.Value:
        """``value`` itself, or the value its blob reference stands for."""
        kind = value.WhichOneof("kind")
        if kind and kind.startswith("internal_blob_id"):
            return self._hydrator.hydrate(session_id, value)
        return value

    def read_all_values(self, session_id: str, *, timeout: float) -> list[tuple[str, pb.Value]]:
        """Every committed Attribute and map instance: (physical key, hydrated value), in Dex's order."""
        request = pb.GetAttributesRequest(flow_id=session_id, all_keys=True)
        response = self._call(partial(self._stub.GetAttributes, request, timeout=timeout), "GetAttributes",
                                    session_id)
        return [(entry.key, self.hydrated(session_id, entry.value))
                for entry in response.attributes]

    def read_channel(self, session_id: str, channel_name: str, *, timeout: float) -> list[pb.Value]:
        """The pending messages of one Channel, oldest first (hydrated)."""
        request = pb.GetChannelMessagesRequest(flow_id=session_id, channel_name=channel_name)
        response = self._call(partial(self._stub.GetChannelMessages, request, timeout=timeout),
                                    "GetChannelMessages", session_id)
        return [self.hydrated(session_id, message.value)
                for message in response.messages]

    def read_history(self, session_id: str, *, timeout: float, run_id: str = "") -> list[pb.FlowHistoryEvent]:
        """Every history event of the session's run ``run_id`` (``""``: the current run), oldest first
        (values not yet hydrated: ``hydrated`` each one read)."""
        events: list[pb.FlowHistoryEvent] = []
        page_token = b""
        while True:
            request = pb.GetHistoryEventsRequest(flow_id=session_id, run_id=run_id, next_page_token=page_token)
            response = self._call(partial(self._stub.GetHistoryEvents, request, timeout=timeout),
                                        "GetHistoryEvents", session_id)
            events.extend(response.events)
            if not response.next_page_token:
                return events
            page_token = response.next_page_token

    def close(self) -> None:
        """Close the channel (idempotent; a sync one also when the object is collected)."""
        self._channel.close()
