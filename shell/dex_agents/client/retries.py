"""The calls a session client repeats on its own, and when: a call whose repetition is harmless,
after a failure that may have lost the call or its answer.

What Dex guarantees decides what is harmless. ``start_flow`` with a stable request ID and
``ignore_already_started`` returns the run that request started (documented by the SDK), so a start
is retried with the request ID of its first try. An RPC gets a fresh request ID from the SDK on every
``invoke_rpc`` and Dex documents no deduplication of RPCs, so a repeated ``send_user_message`` would
queue the message again: a send is retried only as ``send_user_message_once`` with the message ID of
its first try, which the session itself deduplicates (``UserMessageReceipts``).

Invariants:
    * A failure is transient when the call may not have run, or ran and its answer was lost: the
      server unreachable or gone (a SIGKILLed or restarting engine: ``UNAVAILABLE``, "Stream
      removed"), an RPC no Worker took, a lock held by a concurrent duplicate. What the session or
      Dex decided (a refused message, an unknown session, a bad argument) is final.
    * Retries (``loops.repeat``) pause with a growing back-off and stop at the deadline, raising the
      last failure; lock conflicts are retried faster (``LOCK_RETRY_*``).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import replace
from typing import Final

import grpc
from dex import (
    DexServiceError,
    FlowAlreadyStartedError,
    FlowClosingError,
    FlowNotActiveOrNotFoundError,
    FlowNotFoundError,
    RPCInvokeOptions,
    RpcLockConflictError,
    StartFlowOptions,
    WorkerInvocationError,
)

from dex_agents.pure.machine.keys import message_id_problem
from dex_agents.shell.definitions import AGENT_TOOL_CALLS, UNKNOWN_TOOL_OUTCOMES, USER_MESSAGE_RECEIPTS
from dex_agents.shell.dex_options import session_flow_config

__all__ = [
    "LOCK_RETRY_FIRST_SECONDS",
    "LOCK_RETRY_MAX_SECONDS",
    "RETRY_FIRST_SECONDS",
    "RETRY_MAX_SECONDS",
    "TRANSIENT_CODES",
    "checked_message_id",
    "is_repeatable_start",
    "is_transient",
    "retried_start_options",
    "send_options",
    "start_request_id",
]

RETRY_FIRST_SECONDS: Final = 0.05
RETRY_MAX_SECONDS: Final = 1.0
LOCK_RETRY_FIRST_SECONDS: Final = 0.01
LOCK_RETRY_MAX_SECONDS: Final = 0.2

TRANSIENT_CODES: Final = frozenset({
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.INTERNAL,
})
"""gRPC codes of a call that may not have run or whose answer may be lost (transport and server
failures). ``INVALID_ARGUMENT``, ``NOT_FOUND``, ``FAILED_PRECONDITION``, ``PERMISSION_DENIED``, ... are
answers."""

_FINAL_ERRORS: Final = (FlowAlreadyStartedError, FlowClosingError, FlowNotActiveOrNotFoundError, FlowNotFoundError)


def is_transient(error: BaseException) -> bool:
    """Whether a repeatable call that raised ``error`` should be tried again (see the module docstring)."""
    if isinstance(error, RpcLockConflictError):
        return True
    if isinstance(error, WorkerInvocationError):
        return not error.worker_error_type  # no type: no Worker took the RPC, nothing ran
    if isinstance(error, _FINAL_ERRORS):
        return False
    return isinstance(error, DexServiceError) and error.code in TRANSIENT_CODES


def checked_message_id(message_id: str | None) -> str:
    """``message_id``, or a new random one for ``None``.

    Raises:
        ValueError: ``message_id`` cannot be a message ID (blank, too long, holding ``/``).
    """
    if message_id is None:
        return uuid.uuid4().hex
    problem = message_id_problem(message_id)
    if problem is not None:
        raise ValueError(problem)
    return message_id


def send_options(message_id: str) -> RPCInvokeOptions:
    """``send_user_message_once``'s per-call options: its message's receipt instance, locked (two
    concurrent sends of one ID cannot both queue) and loaded (the handler reads it)."""
    return RPCInvokeOptions(lock_attribute_map_instances=(USER_MESSAGE_RECEIPTS.lock(message_id),),
                            load_attribute_map_instances=(USER_MESSAGE_RECEIPTS.load(message_id),))


def outcome_options(tool_call_id: str) -> RPCInvokeOptions:
    """``resolve_tool_outcome``'s per-call options: the call's ``UnknownToolOutcomes`` instance, locked
    (two operators cannot both settle it) and loaded, and its ``AgentToolCalls`` instance loaded (the
    handler reads both)."""
    return RPCInvokeOptions(lock_attribute_map_instances=(UNKNOWN_TOOL_OUTCOMES.lock(tool_call_id),),
                            load_attribute_map_instances=(UNKNOWN_TOOL_OUTCOMES.load(tool_call_id),
                                                          AGENT_TOOL_CALLS.load(tool_call_id)))


def retried_start_options(options: StartFlowOptions | None, request_id: str | None) -> StartFlowOptions:
    """The start options of ``SessionClient.start``: the caller's, else a request ID (``request_id`` or
    a new one) with ``ignore_already_started``, so a retried start returns the run its first try made;
    their Flow config with the session's continue-as-new threshold unless it sets one."""
    if options is not None:
        return replace(options, config_override=session_flow_config(options.config_override))
    return StartFlowOptions(request_id=request_id or uuid.uuid4().hex, ignore_already_started=True,
                            config_override=session_flow_config())


def start_request_id(flow_type: str, session_id: str, initial_message: str | None,
                     fork_of: tuple[str, int] | None = None) -> str:
    """The request ID of a start without one: the same for the same Flow type, session and first
    message (a repeated start returns its run), another for another first message (refused); a fork
    (``fork_of``: the original session and turn) has its own."""
    identity = json.dumps([flow_type, session_id, initial_message, *([list(fork_of)] if fork_of else [])],
                          ensure_ascii=False)
    return "start-" + hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()


def is_repeatable_start(options: StartFlowOptions) -> bool:
    """Whether a start with ``options`` may be repeated: Dex returns its run only for the same request
    ID with ``ignore_already_started``."""
    return bool(options.request_id) and options.ignore_already_started
