"""``WorkerTaskService.PollWorkerTask``: the pull Worker's stream, adapted onto the engine.

Each stream: the first request must ``register`` a queue; the engine answers ``registered`` (at
once, or when a task needs the stream: see ``Dispatcher.register``) and then writes tasks and
``cancel_task`` frames from the stream's outbox. A reader thread feeds the
Worker's frames (progress, results, rejects, pongs) to the engine under its lock. When the stream
ends for any reason the engine learns it at once (a running task is re-delivered or failed).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterator

import grpc

from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from .engine import Engine
from .tasks import WorkerStream

_LOGGER = logging.getLogger(__name__)
MAX_STREAMS = 448
"""Concurrent ``PollWorkerTask`` streams served (each holds a server thread and, once registered, a
reader thread); one more is refused with RESOURCE_EXHAUSTED at once (the SDK's Worker retries)."""
MAX_UNREGISTERED_STREAMS = 64
"""Streams still waiting for their first frame, at most; one more is refused with RESOURCE_EXHAUSTED
(silent streams cannot take the places of registered Workers)."""


class WorkerTaskService(dex_pb2_grpc.WorkerTaskServiceServicer):
    """Serves pull Worker streams."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._readers = ThreadPoolExecutor(max_workers=MAX_STREAMS, thread_name_prefix="dex-engine-stream")
        self._streams = threading.BoundedSemaphore(MAX_STREAMS)
        self._unregistered = threading.BoundedSemaphore(MAX_UNREGISTERED_STREAMS)

    def close(self) -> None:
        """Stop the reader pool (streams end when the server stops)."""
        self._readers.shutdown(wait=False, cancel_futures=True)

    def PollWorkerTask(  # noqa: N802 - gRPC method name
        self, request_iterator: Iterator[pb.PollWorkerTaskRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.PollWorkerTaskResponse]:
        if not self._streams.acquire(blocking=False):
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          f"too many concurrent worker streams (at most {MAX_STREAMS}); retry later")
        try:
            yield from self._serve(request_iterator, context)
        finally:
            self._streams.release()

    def _serve(self, request_iterator: Iterator[pb.PollWorkerTaskRequest],
               context: grpc.ServicerContext) -> Iterator[pb.PollWorkerTaskResponse]:
        if not self._unregistered.acquire(blocking=False):
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "too many worker streams waiting for their "
                          f"first frame (at most {MAX_UNREGISTERED_STREAMS}); retry later")
        arrived = threading.Event()

        def cancel_if_silent() -> None:
            if not arrived.is_set():
                context.cancel()

        self.engine.scheduler.call_later(self.engine.timing.first_frame_timeout, cancel_if_silent)
        try:
            first = next(request_iterator)
        except (StopIteration, grpc.RpcError):
            return
        finally:
            arrived.set()
            self._unregistered.release()
        if not first.HasField("register") or not first.register.queue:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "PollWorkerTask must start with register naming a queue")
        register = first.register
        stream = WorkerStream(register.queue, register.app_worker_id or f"anonymous-{id(context)}")
        context.add_callback(stream.close)
        with self.engine.locked():
            if self.engine.stopped:
                return
            self.engine.dispatcher.register(stream)
        self._readers.submit(self._read, request_iterator, stream)
        while True:
            response = stream.outbox.get()
            if response is None:
                return
            yield response

    def _read(self, requests: Iterator[pb.PollWorkerTaskRequest], stream: WorkerStream) -> None:
        clean_close = False  # the Worker half-closed its side (rather than the stream breaking)
        try:
            for request in requests:
                with self.engine.locked():
                    if self.engine.stopped:
                        break
                    try:
                        self._on_request(stream, request)
                    except Exception:
                        _LOGGER.exception("worker frame could not be applied; the frame is dropped")
            else:
                clean_close = True
        except grpc.RpcError:
            pass
        except Exception:
            _LOGGER.exception("worker stream reader failed")
        finally:
            with self.engine.locked():
                self._on_closed(stream, clean_close)
            stream.close()

    def _on_request(self, stream: WorkerStream, request: pb.PollWorkerTaskRequest) -> None:
        kind = request.WhichOneof("frame")
        if kind == "task_frame":
            self._on_frame(stream, request.task_frame)
        elif kind == "reject":
            reject = request.reject
            task = stream.task
            if task is not None and task.task_id == reject.task_id and task.kind == "rpc" and (
                reject.reason == pb.POLL_WORKER_TASK_REJECT_REASON_UNKNOWN_RPC
            ):
                self.engine.dispatcher.finish(task)
                self.engine.flow_rpcs.on_frame(task, pb.PollWorkerTaskFrame(task_id=task.task_id, worker_error=pb.WorkerErrorResponse(
                    detail=f"worker does not know this rpc of flow type {task.flow_type}",
                    error_type="dex.UnknownRpc", grpc_status=grpc.StatusCode.NOT_FOUND.value[0])), stream)
                return
            if reject.reason == pb.POLL_WORKER_TASK_REJECT_REASON_UNKNOWN_STEP and task is not None and (
                    task.task_id == reject.task_id and task.kind != "rpc"):
                started = self.engine.dispatcher.refuse(stream, reject.task_id)
            else:
                started = self.engine.dispatcher.reject(stream, reject.task_id)
            if started is not None:
                steps, (unavailable, since) = self.engine.steps, started
                self.engine.scheduler.call_later(self.engine.timing.dispatch_wait,
                                                 lambda: steps.no_worker_available(unavailable, since))

    def _on_frame(self, stream: WorkerStream, frame: pb.PollWorkerTaskFrame) -> None:
        task = stream.task
        if task is None or task.task_id != frame.task_id:
            return
        steps = self.engine.steps
        kind = frame.WhichOneof("output")
        if kind in ("wait_for", "execute"):
            output = frame.wait_for if kind == "wait_for" else frame.execute
            which = output.WhichOneof("output")
            if which == "heartbeat" or which == "stream_write":
                self.engine.dispatcher.progress(task)
                if not task.done and task.kind != "rpc":
                    steps.on_progress(task, output.heartbeat if which == "heartbeat" else None,
                                      output.stream_write if which == "stream_write" else None)
                return
        task.unavailable_since = None
        self.engine.dispatcher.finish(task)
        if task.done:
            return
        if task.kind == "rpc":
            self.engine.flow_rpcs.on_frame(task, frame, stream)
        elif kind == "worker_error":
            error = frame.worker_error
            steps.on_failure(task, error.detail, error.error_type, error.retry_after_seconds, worker_error=error)
        elif kind == "wait_for" and task.kind == "wait_for" and frame.wait_for.HasField("result"):
            steps.on_wait_for_result(task, frame.wait_for.result)
        elif kind == "execute" and task.kind == "execute" and frame.execute.HasField("result"):
            steps.on_execute_result(task, frame.execute.result)
        else:
            steps.on_failure(task, f"worker sent an unexpected {kind} frame for a {task.kind} task",
                             "dex.InvalidWorkerFrame", 0)

    def _on_closed(self, stream: WorkerStream, clean_close: bool) -> None:
        task = self.engine.dispatcher.stream_closed(stream, clean=clean_close)
        if task is None or task.done or self.engine.stopped:
            return
        if task.kind != "rpc":
            self.engine.steps.worker_lost(task, clean_close=clean_close)
        elif task.may_redeliver(self.engine.timing.dispatch_wait, now=self.engine.clock.monotonic(),
                                clean_close=clean_close):
            self.engine.dispatcher.requeue(task)
        else:
            self.engine.flow_rpcs.on_frame(task, pb.PollWorkerTaskFrame(task_id=task.task_id, worker_error=pb.WorkerErrorResponse(
                detail="worker stream broke while the rpc was running", error_type="dex.WorkerLost",
                grpc_status=grpc.StatusCode.UNAVAILABLE.value[0])), None)
