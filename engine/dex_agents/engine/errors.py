"""Service errors in Dex's wire shape.

Every failure the engine reports to a caller is a :class:`ServiceError`: a gRPC status code plus a
``dexpb.ServiceErrorResponse`` packed into the status details, which is what the SDK's
``translate_rpc_error`` reads to pick ``FlowAlreadyStartedError``, ``FlowNotActiveOrNotFoundError``,
``RpcLockConflictError``, ``WorkerInvocationError``, ``LongPollTimeoutError`` and the rest.
"""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import status_pb2
from grpc_status import rpc_status

from dex.dexpb import dex_pb2 as pb


MAX_QUOTED_CHARS = 200
"""Longest piece of caller input quoted in an error text."""
MAX_DETAIL_CHARS = 1024
"""Longest error text (a status message travels in gRPC trailers, which are limited to 8 KiB)."""


def clip(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """``text`` when short, else its head and its full length: safe to quote in an error text."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


class ServiceError(Exception):
    """A request failure with its gRPC code and Dex sub-status.

    Invariant: raising it never leaves a half-applied change behind; callers raise before or
    instead of committing. Its detail is at most about MAX_DETAIL_CHARS long, whatever input it quotes.
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        detail: str,
        sub_status: pb.ErrorSubStatus = pb.ERROR_SUB_STATUS_UNCATEGORIZED,
        *,
        worker_error: pb.WorkerErrorResponse | None = None,
    ) -> None:
        detail = clip(detail, MAX_DETAIL_CHARS)
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.sub_status = sub_status
        self.worker_error = worker_error

    def to_status(self) -> grpc.Status:
        """The status to abort the call with (details carry the ServiceErrorResponse)."""
        response = pb.ServiceErrorResponse(detail=self.detail, sub_status=self.sub_status)
        if self.worker_error is not None:
            response.original_worker_error_detail = self.worker_error.detail
            response.original_worker_error_type = self.worker_error.error_type
            response.original_worker_error_status = self.worker_error.grpc_status
            response.original_worker_error_stack_trace = self.worker_error.stack_trace
        packed = any_pb2.Any()
        packed.Pack(response)
        status = status_pb2.Status(code=self.code.value[0], message=self.detail, details=[packed])
        converted: grpc.Status = rpc_status.to_status(status)
        return converted


def invalid(detail: str) -> ServiceError:
    """INVALID_ARGUMENT: the request itself is malformed."""
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, detail)


def flow_not_found(flow_id: str, detail: str | None = None) -> ServiceError:
    """NOT_FOUND + FLOW_NOT_EXISTS: no such Flow (or no active run when one is required)."""
    return ServiceError(
        grpc.StatusCode.NOT_FOUND,
        detail or f"flow not found: {clip(flow_id)}",
        pb.ERROR_SUB_STATUS_FLOW_NOT_EXISTS,
    )


def precondition(detail: str) -> ServiceError:
    """FAILED_PRECONDITION: the request does not fit the current state."""
    return ServiceError(grpc.StatusCode.FAILED_PRECONDITION, detail)


def long_poll_timeout(detail: str) -> ServiceError:
    """DEADLINE_EXCEEDED + LONG_POLL_TIME_OUT: a long poll ended without a result."""
    return ServiceError(
        grpc.StatusCode.DEADLINE_EXCEEDED, detail, pb.ERROR_SUB_STATUS_LONG_POLL_TIME_OUT
    )


def request_timeout(detail: str) -> ServiceError:
    """DEADLINE_EXCEEDED + REQUEST_TIMEOUT: the caller's request budget ran out."""
    return ServiceError(
        grpc.StatusCode.DEADLINE_EXCEEDED, detail, pb.ERROR_SUB_STATUS_REQUEST_TIMEOUT
    )


def worker_failure(detail: str, worker_error: pb.WorkerErrorResponse | None) -> ServiceError:
    """FAILED_PRECONDITION + WORKER_API_ERROR: the application handler (or its worker) failed."""
    return ServiceError(
        grpc.StatusCode.FAILED_PRECONDITION,
        detail,
        pb.ERROR_SUB_STATUS_WORKER_API_ERROR,
        worker_error=worker_error,
    )


def lock_conflict(keys: list[str]) -> ServiceError:
    """ABORTED + WORKER_API_ERROR: the SDK maps exactly this to ``RpcLockConflictError``."""
    return ServiceError(
        grpc.StatusCode.ABORTED,
        f"attribute lock is held: {', '.join(keys)}",
        pb.ERROR_SUB_STATUS_WORKER_API_ERROR,
    )


class DatabaseError(RuntimeError):
    """The database cannot serve the engine: unreadable, not writable, corrupt, or in use."""


class DatabaseInUseError(DatabaseError):
    """Another engine already serves this database (two engines would both dispatch its Flows)."""
