# Types for the gRPC stubs that grpcio-tools generated in dex-python-sdk 1.23.0 (its
# dex/dexpb/dex_pb2_grpc.py has no annotations, so every use was an untyped call). Each attribute
# is one call of the generated module, with the request and answer types it serializes.
#
# A generated stub's calls return their answers over a ``grpc.Channel`` and awaitable calls over a
# ``grpc.aio.Channel``; one class cannot say both, so ``<Service>Stub`` is typed for a sync channel
# (the common case, and the type annotations and the SDK name) and the ``Async<Service>Calls``
# Protocols type the same object over an asyncio channel (``client/channels.py`` casts to it once;
# import it under ``TYPE_CHECKING``). The servicer bases declare no methods, so a servicer's methods
# keep their own signatures.
#
# mypy reads this file when ``typings`` is among the files it checks (``ci.sh`` passes it): the
# installed ``dex`` is a regular package, which a namespace directory on ``mypy_path`` does not
# shadow. Regenerate it when the pinned SDK changes: one attribute per ``channel.unary_unary(...)``
# (or ``unary_stream``, ``stream_unary``, ``stream_stream``) of the generated module.
import abc
from collections.abc import Iterator, Sequence
from typing import Protocol, TypeVar

import grpc
import grpc.aio
from google.protobuf import empty_pb2

from dex.dexpb import dex_pb2

_T = TypeVar("_T")
_Req = TypeVar("_Req", contravariant=True)
_Resp = TypeVar("_Resp")

class _StreamingCall(grpc._CallIterator[_T], grpc.Future[_T], metaclass=abc.ABCMeta):
    """A sync streaming call: an iterator of answers that is also a ``grpc.Future``, as the object
    grpcio returns is (types-grpcio types it as the iterator only)."""

class _StreamStream(Protocol[_Req, _Resp]):
    def __call__(self, request_iterator: Iterator[_Req], timeout: float | None = ...,
                 metadata: Sequence[tuple[str, str | bytes]] | None = ...,
                 credentials: grpc.CallCredentials | None = ..., wait_for_ready: bool | None = ...,
                 compression: grpc.Compression | None = ...) -> _StreamingCall[_Resp]: ...

class FlowServiceStub:
    """The generated stub; typed as over a ``grpc.Channel`` (each call returns its answer)."""

    def __init__(self, channel: grpc.Channel | grpc.aio.Channel) -> None: ...
    GetServerInfo: grpc.UnaryUnaryMultiCallable[empty_pb2.Empty, dex_pb2.ServerInfo]
    StartFlow: grpc.UnaryUnaryMultiCallable[dex_pb2.StartFlowRequest, dex_pb2.StartFlowResponse]
    PublishToChannel: grpc.UnaryUnaryMultiCallable[dex_pb2.PublishToChannelRequest, empty_pb2.Empty]
    GetChannelMessages: grpc.UnaryUnaryMultiCallable[dex_pb2.GetChannelMessagesRequest, dex_pb2.GetChannelMessagesResponse]
    DeleteChannelMessage: grpc.UnaryUnaryMultiCallable[dex_pb2.DeleteChannelMessageRequest, empty_pb2.Empty]
    WriteStream: grpc.UnaryUnaryMultiCallable[dex_pb2.WriteStreamRequest, empty_pb2.Empty]
    ReadStream: grpc.UnaryUnaryMultiCallable[dex_pb2.ReadStreamRequest, dex_pb2.ReadStreamResponse]
    ListStreamMessages: grpc.UnaryUnaryMultiCallable[dex_pb2.ListStreamMessagesRequest, dex_pb2.ListStreamMessagesResponse]
    StopFlow: grpc.UnaryUnaryMultiCallable[dex_pb2.StopFlowRequest, empty_pb2.Empty]
    GetAttributes: grpc.UnaryUnaryMultiCallable[dex_pb2.GetAttributesRequest, dex_pb2.GetAttributesResponse]
    SetAttributes: grpc.UnaryUnaryMultiCallable[dex_pb2.SetAttributesRequest, empty_pb2.Empty]
    LoadBlobs: grpc.UnaryUnaryMultiCallable[dex_pb2.LoadBlobsRequest, dex_pb2.LoadBlobsResponse]
    WaitForFlow: grpc.UnaryUnaryMultiCallable[dex_pb2.WaitForFlowRequest, dex_pb2.FlowResult]
    SearchFlows: grpc.UnaryUnaryMultiCallable[dex_pb2.SearchFlowsRequest, dex_pb2.SearchFlowsResponse]
    SyncAttributeIndexes: grpc.UnaryUnaryMultiCallable[dex_pb2.SyncAttributeIndexRequest, dex_pb2.SyncAttributeIndexResponse]
    GetFlowSummary: grpc.UnaryUnaryMultiCallable[dex_pb2.GetFlowSummaryRequest, dex_pb2.GetFlowSummaryResponse]
    GetHistoryEvents: grpc.UnaryUnaryMultiCallable[dex_pb2.GetHistoryEventsRequest, dex_pb2.GetHistoryEventsResponse]
    WaitForHistoryEvent: grpc.UnaryUnaryMultiCallable[dex_pb2.WaitForHistoryEventRequest, dex_pb2.WaitForHistoryEventResponse]
    GetFlowState: grpc.UnaryUnaryMultiCallable[dex_pb2.GetFlowStateRequest, dex_pb2.GetFlowStateResponse]
    ResetFlow: grpc.UnaryUnaryMultiCallable[dex_pb2.ResetFlowRequest, dex_pb2.ResetFlowResponse]
    InvokeRPC: grpc.UnaryUnaryMultiCallable[dex_pb2.InvokeRPCRequest, dex_pb2.InvokeRPCResponse]
    SkipTimer: grpc.UnaryUnaryMultiCallable[dex_pb2.SkipTimerRequest, empty_pb2.Empty]
    UpdateFlowConfig: grpc.UnaryUnaryMultiCallable[dex_pb2.UpdateFlowConfigRequest, empty_pb2.Empty]
    WaitForStepCompletion: grpc.UnaryUnaryMultiCallable[dex_pb2.WaitForStepCompletionRequest, dex_pb2.WaitForStepCompletionResponse]
    WaitForAttribute: grpc.UnaryUnaryMultiCallable[dex_pb2.WaitForAttributeRequest, dex_pb2.WaitForAttributeResponse]
    TriggerContinueAsNew: grpc.UnaryUnaryMultiCallable[dex_pb2.TriggerContinueAsNewRequest, empty_pb2.Empty]
    HealthCheck: grpc.UnaryUnaryMultiCallable[empty_pb2.Empty, dex_pb2.HealthInfo]

class AsyncFlowServiceCalls(Protocol):
    """A ``FlowServiceStub`` over a ``grpc.aio.Channel``: each call returns an awaitable call."""

    GetServerInfo: grpc.aio.UnaryUnaryMultiCallable[empty_pb2.Empty, dex_pb2.ServerInfo]
    StartFlow: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.StartFlowRequest, dex_pb2.StartFlowResponse]
    PublishToChannel: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.PublishToChannelRequest, empty_pb2.Empty]
    GetChannelMessages: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.GetChannelMessagesRequest, dex_pb2.GetChannelMessagesResponse]
    DeleteChannelMessage: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.DeleteChannelMessageRequest, empty_pb2.Empty]
    WriteStream: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.WriteStreamRequest, empty_pb2.Empty]
    ReadStream: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.ReadStreamRequest, dex_pb2.ReadStreamResponse]
    ListStreamMessages: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.ListStreamMessagesRequest, dex_pb2.ListStreamMessagesResponse]
    StopFlow: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.StopFlowRequest, empty_pb2.Empty]
    GetAttributes: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.GetAttributesRequest, dex_pb2.GetAttributesResponse]
    SetAttributes: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.SetAttributesRequest, empty_pb2.Empty]
    LoadBlobs: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.LoadBlobsRequest, dex_pb2.LoadBlobsResponse]
    WaitForFlow: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.WaitForFlowRequest, dex_pb2.FlowResult]
    SearchFlows: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.SearchFlowsRequest, dex_pb2.SearchFlowsResponse]
    SyncAttributeIndexes: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.SyncAttributeIndexRequest, dex_pb2.SyncAttributeIndexResponse]
    GetFlowSummary: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.GetFlowSummaryRequest, dex_pb2.GetFlowSummaryResponse]
    GetHistoryEvents: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.GetHistoryEventsRequest, dex_pb2.GetHistoryEventsResponse]
    WaitForHistoryEvent: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.WaitForHistoryEventRequest, dex_pb2.WaitForHistoryEventResponse]
    GetFlowState: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.GetFlowStateRequest, dex_pb2.GetFlowStateResponse]
    ResetFlow: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.ResetFlowRequest, dex_pb2.ResetFlowResponse]
    InvokeRPC: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.InvokeRPCRequest, dex_pb2.InvokeRPCResponse]
    SkipTimer: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.SkipTimerRequest, empty_pb2.Empty]
    UpdateFlowConfig: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.UpdateFlowConfigRequest, empty_pb2.Empty]
    WaitForStepCompletion: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.WaitForStepCompletionRequest, dex_pb2.WaitForStepCompletionResponse]
    WaitForAttribute: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.WaitForAttributeRequest, dex_pb2.WaitForAttributeResponse]
    TriggerContinueAsNew: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.TriggerContinueAsNewRequest, empty_pb2.Empty]
    HealthCheck: grpc.aio.UnaryUnaryMultiCallable[empty_pb2.Empty, dex_pb2.HealthInfo]

class FlowServiceServicer: ...

def add_FlowServiceServicer_to_server(servicer: FlowServiceServicer, server: grpc.Server | grpc.aio.Server) -> None: ...

class WorkerServiceStub:
    """The generated stub; typed as over a ``grpc.Channel`` (each call returns its answer)."""

    def __init__(self, channel: grpc.Channel | grpc.aio.Channel) -> None: ...
    InvokeWaitForMethod: grpc.UnaryStreamMultiCallable[dex_pb2.InvokeWaitForMethodRequest, dex_pb2.InvokeWaitForMethodOutput]
    InvokeExecuteMethod: grpc.UnaryStreamMultiCallable[dex_pb2.InvokeExecuteMethodRequest, dex_pb2.InvokeExecuteMethodOutput]
    InvokeWorkerRPC: grpc.UnaryUnaryMultiCallable[dex_pb2.InvokeWorkerRPCRequest, dex_pb2.InvokeWorkerRPCResponse]

class AsyncWorkerServiceCalls(Protocol):
    """A ``WorkerServiceStub`` over a ``grpc.aio.Channel``: each call returns an awaitable call."""

    InvokeWaitForMethod: grpc.aio.UnaryStreamMultiCallable[dex_pb2.InvokeWaitForMethodRequest, dex_pb2.InvokeWaitForMethodOutput]
    InvokeExecuteMethod: grpc.aio.UnaryStreamMultiCallable[dex_pb2.InvokeExecuteMethodRequest, dex_pb2.InvokeExecuteMethodOutput]
    InvokeWorkerRPC: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.InvokeWorkerRPCRequest, dex_pb2.InvokeWorkerRPCResponse]

class WorkerServiceServicer: ...

def add_WorkerServiceServicer_to_server(servicer: WorkerServiceServicer, server: grpc.Server | grpc.aio.Server) -> None: ...

class WorkerTaskServiceStub:
    """The generated stub; typed as over a ``grpc.Channel`` (each call returns its answer)."""

    def __init__(self, channel: grpc.Channel | grpc.aio.Channel) -> None: ...
    PollWorkerTask: _StreamStream[dex_pb2.PollWorkerTaskRequest, dex_pb2.PollWorkerTaskResponse]

class AsyncWorkerTaskServiceCalls(Protocol):
    """A ``WorkerTaskServiceStub`` over a ``grpc.aio.Channel``: each call returns an awaitable call."""

    PollWorkerTask: grpc.aio.StreamStreamMultiCallable[dex_pb2.PollWorkerTaskRequest, dex_pb2.PollWorkerTaskResponse]

class WorkerTaskServiceServicer: ...

def add_WorkerTaskServiceServicer_to_server(servicer: WorkerTaskServiceServicer, server: grpc.Server | grpc.aio.Server) -> None: ...

class MatchingServiceStub:
    """The generated stub; typed as over a ``grpc.Channel`` (each call returns its answer)."""

    def __init__(self, channel: grpc.Channel | grpc.aio.Channel) -> None: ...
    DispatchTask: grpc.UnaryStreamMultiCallable[dex_pb2.DispatchTaskRequest, dex_pb2.DispatchTaskResponse]
    ForwardPollWorkerTask: _StreamStream[dex_pb2.PollWorkerTaskRequest, dex_pb2.PollWorkerTaskResponse]

class AsyncMatchingServiceCalls(Protocol):
    """A ``MatchingServiceStub`` over a ``grpc.aio.Channel``: each call returns an awaitable call."""

    DispatchTask: grpc.aio.UnaryStreamMultiCallable[dex_pb2.DispatchTaskRequest, dex_pb2.DispatchTaskResponse]
    ForwardPollWorkerTask: grpc.aio.StreamStreamMultiCallable[dex_pb2.PollWorkerTaskRequest, dex_pb2.PollWorkerTaskResponse]

class MatchingServiceServicer: ...

def add_MatchingServiceServicer_to_server(servicer: MatchingServiceServicer, server: grpc.Server | grpc.aio.Server) -> None: ...

class InternalServiceStub:
    """The generated stub; typed as over a ``grpc.Channel`` (each call returns its answer)."""

    def __init__(self, channel: grpc.Channel | grpc.aio.Channel) -> None: ...
    DumpFlowForContinueAsNew: grpc.UnaryUnaryMultiCallable[dex_pb2.ContinueAsNewDumpRequest, dex_pb2.ContinueAsNewDumpResponse]

class AsyncInternalServiceCalls(Protocol):
    """A ``InternalServiceStub`` over a ``grpc.aio.Channel``: each call returns an awaitable call."""

    DumpFlowForContinueAsNew: grpc.aio.UnaryUnaryMultiCallable[dex_pb2.ContinueAsNewDumpRequest, dex_pb2.ContinueAsNewDumpResponse]

class InternalServiceServicer: ...

def add_InternalServiceServicer_to_server(servicer: InternalServiceServicer, server: grpc.Server | grpc.aio.Server) -> None: ...

