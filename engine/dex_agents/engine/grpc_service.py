"""``FlowService``, the gRPC adapter: the SDK Client's calls, adapted onto the engine (the Flow
RPCs that ``InvokeRPC`` runs are ``flow_rpcs``).

Every handler validates its request, runs under the engine lock (InvokeRPC releases it while the
Worker runs the handler), and turns :class:`ServiceError` into a gRPC status carrying Dex's
``ServiceErrorResponse``. An unexpected exception becomes INTERNAL with its message; it never
leaves partial state (the transaction rolls back). Methods the engine does not serve answer
UNIMPLEMENTED naming the method.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterator
from typing import NoReturn, TypeVar

import grpc
from google.protobuf import empty_pb2

from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from .long_polls import Admission, LongPoll, admitted
from .engine import Engine
from .errors import ServiceError, invalid
from .flow_state import FlowStateQuery
from .queries import Queries, parse_search

_LOGGER = logging.getLogger(__name__)
SERVER_VERSION = "dex-agents-local-engine/0.1.0"
R = TypeVar("R")
MAX_LONG_POLLS = 448
"""Long polls (WaitForFlow, ReadStream, WaitForStepCompletion, WaitForAttribute) served at once;
each holds a server thread, so the bound keeps threads for short calls. At the bound a client
holding fewer polls than the heaviest one takes that client's oldest place; otherwise one more is
refused with RESOURCE_EXHAUSTED at once (see ``long_polls``)."""
SERVED = frozenset({
    "GetServerInfo", "HealthCheck", "SyncAttributeIndexes", "StartFlow", "StopFlow", "InvokeRPC", "WriteStream",
    "ReadStream", "ListStreamMessages", "GetFlowSummary", "WaitForFlow", "SearchFlows", "SkipTimer",
    "WaitForStepCompletion", "WaitForAttribute", "GetHistoryEvents", "LoadBlobs", "GetAttributes", "PublishToChannel",
    "GetChannelMessages", "DeleteChannelMessage", "SetAttributes", "GetFlowState", "ResetFlow",
    "TriggerContinueAsNew", "UpdateFlowConfig",
})


def _abort(context: grpc.ServicerContext, error: ServiceError) -> NoReturn:
    context.abort_with_status(error.to_status())
    raise AssertionError("abort_with_status returned")


class FlowService(dex_pb2_grpc.FlowServiceServicer):
    """The FlowService servicer."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.queries = Queries(engine)
        self.flow_state = FlowStateQuery(engine)
        self._admission = Admission(MAX_LONG_POLLS)

    def _long_poll(self, context: grpc.ServicerContext, body: Callable[[LongPoll], R]) -> R:
        """Run a long poll within the fair bound (see ``long_polls``); the client's cancel, or its
        preemption for a lighter client, wakes it at once."""
        engine = self.engine
        try:
            with admitted(engine.long_polls, self._admission, context.peer(), context.add_callback,
                          engine.scheduler.call_later) as poll:
                return self._run(context, lambda: body(poll))
        except ServiceError as refused:  # at the bound: RESOURCE_EXHAUSTED (the body's errors are aborted)
            _abort(context, refused)

    def _run(self, context: grpc.ServicerContext, body: Callable[[], R], *, locked: bool = True) -> R:
        try:
            if not locked:
                return body()
            with self.engine.locked():
                return body()
        except ServiceError as error:
            _abort(context, error)
        except ValueError as error:
            _abort(context, invalid(str(error)))
        except Exception as error:
            _LOGGER.exception("engine request failed")
            _abort(context, ServiceError(grpc.StatusCode.INTERNAL, f"engine error: {error}"))

    def GetServerInfo(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> pb.ServerInfo:  # noqa: N802
        return pb.ServerInfo(server_version=SERVER_VERSION, minimum_supported_protocol_version=1,
                             current_protocol_version=3, server_engine=pb.SERVER_ENGINE_ZD)

    def HealthCheck(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> pb.HealthInfo:  # noqa: N802
        return pb.HealthInfo(condition="OK", hostname=socket.gethostname())

    def SyncAttributeIndexes(self, request: pb.SyncAttributeIndexRequest,  # noqa: N802
                             context: grpc.ServicerContext) -> pb.SyncAttributeIndexResponse:
        return pb.SyncAttributeIndexResponse()

    def StartFlow(self, request: pb.StartFlowRequest, context: grpc.ServicerContext) -> pb.StartFlowResponse:  # noqa: N802
        return self._run(context, lambda: pb.StartFlowResponse(run_id=self.engine.flows.start(request)))

    def StopFlow(self, request: pb.StopFlowRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:  # noqa: N802
        self._run(context, lambda: self.engine.flows.stop(request))
        return empty_pb2.Empty()

    def InvokeRPC(self, request: pb.InvokeRPCRequest, context: grpc.ServicerContext) -> pb.InvokeRPCResponse:  # noqa: N802
        return self._run(context, lambda: self.engine.flow_rpcs.invoke(request), locked=False)

    def WriteStream(self, request: pb.WriteStreamRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:  # noqa: N802
        def write() -> None:
            if not request.source:
                raise invalid("source is required")
            self.engine.streams.write(request.flow_type, request.stream_name, request.flow_id,
                                      request.stream_capacity_bytes, request.value, request.source)
        self._run(context, write)
        return empty_pb2.Empty()

    def ReadStream(self, request: pb.ReadStreamRequest, context: grpc.ServicerContext) -> pb.ReadStreamResponse:  # noqa: N802
        return self._long_poll(context, lambda poll: self.engine.streams.read(request, poll))

    def ListStreamMessages(self, request: pb.ListStreamMessagesRequest,  # noqa: N802
                           context: grpc.ServicerContext) -> pb.ListStreamMessagesResponse:
        return self._run(context, lambda: self.engine.streams.list(request))

    def GetFlowSummary(self, request: pb.GetFlowSummaryRequest,  # noqa: N802
                       context: grpc.ServicerContext) -> pb.GetFlowSummaryResponse:
        return self._run(context, lambda: self.queries.summary(request))

    def WaitForFlow(self, request: pb.WaitForFlowRequest, context: grpc.ServicerContext) -> pb.FlowResult:  # noqa: N802
        return self._long_poll(context, lambda poll: self.queries.wait_for_flow(request, poll))

    def SearchFlows(self, request: pb.SearchFlowsRequest, context: grpc.ServicerContext) -> pb.SearchFlowsResponse:  # noqa: N802
        clauses = self._run(context, lambda: parse_search(request.query), locked=False)
        return self._run(context, lambda: self.queries.search(request, clauses), locked=False)

    def SkipTimer(self, request: pb.SkipTimerRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:  # noqa: N802
        def skip() -> None:
            flow = self.engine.require_flow(request.flow_id, request.run_id)
            if not flow.running:
                raise ServiceError(grpc.StatusCode.NOT_FOUND, f"flow {request.flow_id} is not active",
                                   pb.ERROR_SUB_STATUS_FLOW_NOT_EXISTS)
            has_index = request.HasField("timer_condition_index")
            if not request.step_execution_id or (not request.timer_condition_id and not has_index):
                raise invalid("step_execution_id and a timer condition id or index are required")
            self.engine.steps.skip_timer(flow, request.step_execution_id, request.timer_condition_id,
                                         request.timer_condition_index if has_index else None)
        self._run(context, skip)
        return empty_pb2.Empty()

    def WaitForStepCompletion(self, request: pb.WaitForStepCompletionRequest,  # noqa: N802
                              context: grpc.ServicerContext) -> pb.WaitForStepCompletionResponse:
        self._long_poll(context, lambda poll: self.queries.wait_for_step(request, poll))
        return pb.WaitForStepCompletionResponse()

    def WaitForAttribute(self, request: pb.WaitForAttributeRequest,  # noqa: N802
                         context: grpc.ServicerContext) -> pb.WaitForAttributeResponse:
        return self._long_poll(context, lambda poll: self.queries.wait_for_attribute(request, poll))

    def GetHistoryEvents(self, request: pb.GetHistoryEventsRequest,  # noqa: N802
                         context: grpc.ServicerContext) -> pb.GetHistoryEventsResponse:
        return self._run(context, lambda: self.queries.history(request))

    def SetAttributes(self, request: pb.SetAttributesRequest,  # noqa: N802
                      context: grpc.ServicerContext) -> empty_pb2.Empty:
        self._run(context, lambda: self.engine.flows.set_attributes(request))
        return empty_pb2.Empty()

    def GetFlowState(self, request: pb.GetFlowStateRequest,  # noqa: N802
                     context: grpc.ServicerContext) -> pb.GetFlowStateResponse:
        return self._run(context, lambda: self.flow_state.get(request))

    def ResetFlow(self, request: pb.ResetFlowRequest, context: grpc.ServicerContext) -> pb.ResetFlowResponse:  # noqa: N802
        return self._run(context, lambda: self.engine.resets.reset(request))

    def TriggerContinueAsNew(self, request: pb.TriggerContinueAsNewRequest,  # noqa: N802
                             context: grpc.ServicerContext) -> empty_pb2.Empty:
        self._run(context, lambda: self.engine.continue_as_new.trigger(request))
        return empty_pb2.Empty()

    def UpdateFlowConfig(self, request: pb.UpdateFlowConfigRequest,  # noqa: N802
                         context: grpc.ServicerContext) -> empty_pb2.Empty:
        self._run(context, lambda: self.engine.continue_as_new.update_config(request))
        return empty_pb2.Empty()

    def GetAttributes(self, request: pb.GetAttributesRequest,  # noqa: N802
                      context: grpc.ServicerContext) -> pb.GetAttributesResponse:
        return self._run(context, lambda: self.queries.get_attributes(request))

    def PublishToChannel(self, request: pb.PublishToChannelRequest,  # noqa: N802
                         context: grpc.ServicerContext) -> empty_pb2.Empty:
        self._run(context, lambda: self.engine.channels.publish(request))
        return empty_pb2.Empty()

    def GetChannelMessages(self, request: pb.GetChannelMessagesRequest,  # noqa: N802
                           context: grpc.ServicerContext) -> pb.GetChannelMessagesResponse:
        return self._run(context, lambda: self.engine.channels.read(request))

    def DeleteChannelMessage(self, request: pb.DeleteChannelMessageRequest,  # noqa: N802
                             context: grpc.ServicerContext) -> empty_pb2.Empty:
        self._run(context, lambda: self.engine.channels.delete(request))
        return empty_pb2.Empty()

    def LoadBlobs(self, request: pb.LoadBlobsRequest, context: grpc.ServicerContext) -> pb.LoadBlobsResponse:  # noqa: N802
        def load() -> pb.LoadBlobsResponse:
            response = pb.LoadBlobsResponse()
            for entry in request.entries:
                kind = entry.blob_value.WhichOneof("kind")
                blob_id = getattr(entry.blob_value, kind) if kind else ""
                value = self.engine.blobs.load(entry.flow_id, entry.blob_value)
                if value is None:
                    raise ServiceError(grpc.StatusCode.NOT_FOUND, f"blob not found: {blob_id} (the engine keeps the "
                                       "large values of the tasks it delivered, the least recently used first out)")
                response.values[blob_id].CopyFrom(value)
            return response
        return self._run(context, load, locked=False)


def _unimplemented(name: str) -> Callable[..., object]:
    def handler(self: FlowService, request: object, context: grpc.ServicerContext) -> object:
        context.abort(grpc.StatusCode.UNIMPLEMENTED, f"FlowService.{name} is not implemented by the local Dex engine")
        raise AssertionError("abort returned")
    handler.__name__ = name
    return handler


class UnknownMethods(grpc.GenericRpcHandler):
    """Last-resort handler: any other method (push WorkerService, MatchingService, ...) answers
    UNIMPLEMENTED naming itself."""

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[bytes, bytes] | None:
        name = str(handler_call_details.method).lstrip("/")

        def reject(requests: object, context: grpc.ServicerContext) -> Iterator[bytes]:
            message = f"{name} is not implemented by the local Dex engine"
            context.abort(grpc.StatusCode.UNIMPLEMENTED, message)
            raise AssertionError(message)

        return grpc.stream_stream_rpc_method_handler(reject)


for _name in dir(dex_pb2_grpc.FlowServiceServicer):
    if _name[0].isupper() and _name not in SERVED:
        setattr(FlowService, _name, _unimplemented(_name))
