"""The requests ``ServerCalls`` sends and the reading of their answers, shared by both colours.

Invariants: an RPC request (``rpc_request``) is what ``Client.invoke_rpc`` builds (the RPC's own
locks and loads with the call's), with the call's RPC timeout of whole seconds instead of the
``@rpc`` one, so Dex withdraws it when no Worker took it by then. A Worker probe is
``list_agent_messages(limit=1)`` (a read that changes nothing); a probe that failed tells whether a
Worker took it (``probe_outcome``) or raises what is not about Workers.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any, Final

import grpc
from dex import Attribute, DexServiceError, Registry, RPCInvokeOptions, WorkerInvocationError
from dex.dexpb import dex_pb2 as pb

from dex_agents.pure.values.rpc import ListAgentMessagesInput
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.sdk_private import ValueMapper, translate_rpc_error

__all__ = ["PROBE_DEADLINE_MARGIN_SECONDS", "attributes_request", "entries_of", "is_no_worker", "probe_outcome",
           "probe_request", "rpc_request"]

PROBE_DEADLINE_MARGIN_SECONDS: Final = 5.0
"""Added to the probe's RPC timeout for the gRPC deadline, a backstop if the server ignores it."""


def attributes_request(session_id: str, attributes: Sequence[Attribute[Any]]) -> pb.GetAttributesRequest:
    return pb.GetAttributesRequest(flow_id=session_id, keys=[attribute.name for attribute in attributes])


def entries_of(response: pb.GetAttributesResponse, attributes: Sequence[Attribute[Any]]) -> list[pb.Value | None]:
    """The value of each of ``attributes`` in ``response`` (``None`` when unset), in their order."""
    found = {entry.key: entry.value for entry in response.attributes}
    return [found.get(attribute.name) for attribute in attributes]


def rpc_request(registry: Registry, values: ValueMapper, method: Callable[..., Any], session_id: str,
                rpc_input: object, options: RPCInvokeOptions, seconds: int) -> tuple[pb.InvokeRPCRequest, Any]:
    """The ``InvokeRPC`` request of ``method`` (a bound ``@rpc`` method of a registered Flow) as
    ``Client.invoke_rpc`` builds it, with an RPC timeout of ``seconds``; and the RPC's output codec
    (``None``: no output)."""
    if seconds < 1:
        raise ValueError(f"an RPC waits whole seconds >= 1, got {seconds}")
    registered, rpc = registry._rpc_for_method(method)
    locks, map_loads, channel_map_loads = registry._resolve_rpc_invoke_options(registered, options)
    encoded = values.encode(rpc_input, rpc.input_codec) if rpc.input_codec is not None else values.encode_dynamic(None)
    request = pb.InvokeRPCRequest(
        flow_id=session_id, run_id="", rpc_name=rpc.name, input=encoded, timeout_seconds=seconds,
        lock_attribute_keys=tuple(sorted(set(rpc.locks + locks))), request_id=str(uuid.uuid4()),
        is_transactional=rpc.options.is_transactional,
        load_attribute_map_instances=tuple(sorted(set(rpc.load_attribute_map_instances + map_loads))),
        load_channel_names=rpc.load_channel_names,
        load_channel_map_instances=tuple(sorted(set(rpc.load_channel_map_instances + channel_map_loads))))
    return request, rpc.output_codec


def probe_request(registry: Registry, values: ValueMapper, flow: AgentSessionFlow, session_id: str,
                  seconds: int) -> pb.InvokeRPCRequest:
    """``list_agent_messages(limit=1)`` as ``Client.invoke_rpc`` builds it, with an RPC timeout."""
    if seconds < 1:
        raise ValueError(f"a Worker probe waits whole seconds >= 1, got {seconds}")
    request, _ = rpc_request(registry, values, flow.list_agent_messages, session_id,
                             ListAgentMessagesInput(before_sequence=None, limit=1), RPCInvokeOptions(), seconds)
    return request


def is_no_worker(error: DexServiceError) -> bool:
    """Whether an RPC failed with ``error`` because no Worker took it in its timeout (Dex withdrew it):
    the deadline passed, or Dex found no Worker (a ``WorkerInvocationError`` without a Worker's type)."""
    if isinstance(error, WorkerInvocationError):
        return not error.worker_error_type
    return error.code is grpc.StatusCode.DEADLINE_EXCEEDED


def probe_outcome(error: grpc.RpcError, session_id: str) -> bool:
    """Whether a Worker took a probe that failed with ``error``; raises what is not about Workers."""
    if error.code() is grpc.StatusCode.DEADLINE_EXCEEDED:
        return False
    translated: DexServiceError = translate_rpc_error(error, "invoke_rpc", session_id, "active")
    if isinstance(translated, WorkerInvocationError):
        return bool(translated.worker_error_type)  # no type: the server found no Worker to run it
    raise translated from error
