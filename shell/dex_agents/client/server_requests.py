"""The requests ``ServerCalls`` sends and the reading of their answers, shared by both colours.

Invariants: a Worker probe is ``list_agent_messages(limit=1)`` exactly as ``Client.invoke_rpc``
builds it (a read that changes nothing), with an RPC timeout of whole seconds; a probe that failed
tells whether a Worker took it (``probe_outcome``) or raises what is not about Workers.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

import grpc
from dex import Attribute, DexServiceError, Registry, WorkerInvocationError
from dex.dexpb import dex_pb2 as pb

from dex_agents.pure.values.rpc import ListAgentMessagesInput
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.sdk_private import ValueMapper, translate_rpc_error

__all__ = ["PROBE_DEADLINE_MARGIN_SECONDS", "attributes_request", "entry_of", "probe_outcome", "probe_request"]

PROBE_DEADLINE_MARGIN_SECONDS: Final = 5.0
"""Added to the probe's RPC timeout for the gRPC deadline, a backstop if the server ignores it."""


def attributes_request(session_id: str, attribute: Attribute[Any]) -> pb.GetAttributesRequest:
    return pb.GetAttributesRequest(flow_id=session_id, keys=[attribute.name])


def entry_of(response: pb.GetAttributesResponse, attribute: Attribute[Any]) -> pb.Value | None:
    return next((entry.value for entry in response.attributes if entry.key == attribute.name), None)


def probe_request(registry: Registry, values: ValueMapper, flow: AgentSessionFlow, session_id: str,
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


def probe_outcome(error: grpc.RpcError, session_id: str) -> bool:
    """Whether a Worker took a probe that failed with ``error``; raises what is not about Workers."""
    if error.code() is grpc.StatusCode.DEADLINE_EXCEEDED:
        return False
    translated: DexServiceError = translate_rpc_error(error, "invoke_rpc", session_id, "active")
    if isinstance(translated, WorkerInvocationError):
        return bool(translated.worker_error_type)  # no type: the server found no Worker to run it
    raise translated from error
