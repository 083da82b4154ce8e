"""Flow RPCs (Dex's ``InvokeRPC``; the gRPC layer is ``grpc_service``): the named handler runs on a
pull Worker and its effects commit.

- Every RPC gets the run's singleton Attributes and all Channel sizes; the request's map-instance
  and Channel loads add map instances and pending messages.
- Lock keys are taken before dispatch. A key held by a Step or another RPC fails the call at once
  with ABORTED + WORKER_API_ERROR (``RpcLockConflictError``); keys are released after the commit.
- An RPC with locks or ``is_transactional`` needs an active run. Any other RPC may run against a
  closed run as a query; if it then returns durable effects the call fails (FLOW_NOT_EXISTS).
- Transactional RPCs abort (CHANNEL_MESSAGE_NOT_FOUND) when a message they delete is not pending.
- A handler error is FAILED_PRECONDITION + WORKER_API_ERROR with the worker's detail and type.
"""

from __future__ import annotations

import threading
import time

import grpc

from dex.dexpb import dex_pb2 as pb

from . import history, policy
from .repository import state
from .core import EngineCore
from .errors import ServiceError, flow_not_found, invalid, lock_conflict, precondition, worker_failure
from .flows import FlowOps
from .rows import Effects
from .step_creation import create_step
from .tasks import Task, WorkerStream, new_task_id


class _Pending:
    """One call waiting for its Worker: ``done`` is set once its outcome (``response`` or
    ``error``) is final, its task forgotten and its lock keys released."""

    def __init__(self, request: pb.InvokeRPCRequest, task: Task, holder: str) -> None:
        self.request = request
        self.task = task
        self.holder = holder
        self.done = threading.Event()
        self.response: pb.InvokeRPCResponse | None = None
        self.error: Exception | None = None
        """Raised on the call's thread, which maps it to a status like any failed request."""


class FlowRpcOps:
    """InvokeRPC handling; :meth:`invoke` is called without the engine lock."""

    def __init__(self, engine: EngineCore, flows: FlowOps) -> None:
        self.engine = engine
        self.flows = flows
        self._pending: dict[str, _Pending] = {}

    def invoke(self, request: pb.InvokeRPCRequest) -> pb.InvokeRPCResponse:
        """Run one RPC end to end."""
        engine = self.engine
        if not request.flow_id or not request.rpc_name:
            raise invalid("flow_id and rpc_name are required")
        if request.timeout_seconds < 0:
            raise invalid("timeout_seconds must not be negative")
        keys = sorted(set(request.lock_attribute_keys))
        if any(not key for key in keys):
            raise invalid("empty lock attribute key")
        with engine.locked():
            flow = engine.current_flow(request.flow_id, request.run_id)
            if flow is None:
                raise flow_not_found(request.flow_id)
            if (keys or request.is_transactional) and not flow.running:
                raise flow_not_found(request.flow_id, f"flow {request.flow_id} is not active")
            task_id = new_task_id()
            holder = f"rpc:{task_id}"
            if keys:
                held = engine.attribute_locks.held(flow.uid, keys, holder)
                if held:
                    raise lock_conflict(held)
                engine.attribute_locks.acquire(flow.uid, keys, holder)
            message = pb.PollWorkerTask(task_id=task_id)
            rpc = message.rpc
            rpc.context.CopyFrom(pb.Context(flow_id=flow.flow_id, run_id=flow.run_id,
                                            flow_started_timestamp=flow.start_ms // 1000, run_attempt=1))
            rpc.flow_type = flow.flow_type
            rpc.rpc_name = request.rpc_name
            rpc.input.CopyFrom(request.input)
            db = engine.store.db
            rpc.attributes.extend(state.load_attributes(db, flow.uid, request.load_attribute_map_instances))
            for name, info in state.channel_infos(db, flow.uid).items():
                rpc.channel_infos[name].CopyFrom(info)
            for name, values in state.loaded_messages(db, flow.uid, request.load_channel_names,
                                                      request.load_channel_map_instances).items():
                rpc.loaded_channel_messages[name].CopyFrom(values)
            rpc.loaded_attribute_map_instances.extend(request.load_attribute_map_instances)
            rpc.loaded_channel_names.extend(request.load_channel_names)
            rpc.loaded_channel_map_instances.extend(request.load_channel_map_instances)
            too_large = policy.oversized_task(message)
            if too_large is not None:
                engine.release(flow.uid, holder)
                raise precondition(too_large)
            task = Task(task_id=task_id, kind="rpc", flow_type=flow.flow_type, message=message,
                        uid=flow.uid, seid="", attempt=1)
            pending = _Pending(request, task, holder)
            self._pending[task_id] = pending
            engine.track(task)
            engine.dispatcher.submit(task)
        try:
            return self._await(task, pending, request.timeout_seconds or policy.DEFAULT_RPC_TIMEOUT)
        finally:
            if not pending.done.is_set():
                with engine.locked():
                    self._pending.pop(task_id, None)
                    engine.untrack(task)
                    engine.release(flow.uid, holder)

    def _await(self, task: Task, pending: _Pending, timeout: float) -> pb.InvokeRPCResponse:
        started = time.monotonic()
        dispatch_wait = min(timeout, self.engine.timing.dispatch_wait)
        if not pending.done.wait(dispatch_wait):
            with self.engine.locked():
                if task.stream is None and not pending.done.is_set() and self.engine.dispatcher.withdraw(task):
                    if dispatch_wait < self.engine.timing.dispatch_wait:
                        raise ServiceError(grpc.StatusCode.DEADLINE_EXCEEDED,
                                           f"rpc timed out after {timeout:.0f}s before a worker took it")
                    raise worker_failure(f"no worker available for flow type {task.flow_type}", None)
            if not pending.done.wait(max(timeout - (time.monotonic() - started), 0)):
                with self.engine.locked():
                    if not pending.done.is_set():  # else its outcome came in while the lock was taken
                        self._pending.pop(task.task_id, None)
                        self.engine.dispatcher.cancel(task)
                        raise ServiceError(grpc.StatusCode.DEADLINE_EXCEEDED, f"rpc timed out after {timeout:.0f}s")
        if pending.error is not None:
            raise pending.error
        assert pending.response is not None
        return pending.response

    def abort_all(self) -> None:
        """Fail every waiting RPC call (the engine is stopping)."""
        self.engine.assert_locked()
        stopping = pb.PollWorkerTaskFrame(worker_error=pb.WorkerErrorResponse(
            detail="the engine is stopping", error_type="dex.EngineStopping",
            grpc_status=grpc.StatusCode.UNAVAILABLE.value[0]))
        for task_id in list(self._pending):
            self._settle(self._pending.pop(task_id), stopping, "")

    def on_frame(self, task: Task, frame: pb.PollWorkerTaskFrame, stream: WorkerStream | None) -> None:
        """The Worker's final frame for an RPC task (or a synthesized failure): commit its effects
        here, on the thread that received it, answer the call, then launch what the commit started
        (the call's own thread only returns the answer: no hand-off before the commit)."""
        self.engine.assert_locked()
        pending = self._pending.pop(task.task_id, None)
        task.finish()
        if pending is None:
            return
        effects = self._settle(pending, frame, stream.app_worker_id if stream is not None else "")
        if effects is not None:
            self.engine.apply(effects)

    def _settle(self, pending: _Pending, frame: pb.PollWorkerTaskFrame, worker_id: str) -> Effects | None:
        """Commit the call's outcome, free its task and keys and wake the call; returns the effects
        still to apply."""
        try:
            pending.response, effects = self._commit(pending.task.uid, pending.request, frame, worker_id)
            return effects
        except Exception as error:  # the call's thread raises it (and maps it to a status)
            pending.error = error
            return None
        finally:
            self.engine.untrack(pending.task)
            self.engine.release(pending.task.uid, pending.holder)
            pending.done.set()

    def _commit(self, uid: int, request: pb.InvokeRPCRequest, frame: pb.PollWorkerTaskFrame,
                worker_id: str) -> tuple[pb.InvokeRPCResponse, Effects | None]:
        """Commit the RPC's effects; returns its answer and the effects to apply (None if none)."""
        engine = self.engine
        if frame.HasField("worker_error"):
            error = frame.worker_error
            raise worker_failure(f"rpc {request.rpc_name} failed: {error.detail}", error)
        if not frame.HasField("rpc"):
            raise worker_failure(f"rpc {request.rpc_name}: worker sent no rpc response", None)
        response = frame.rpc
        decision = response.step_decision
        has_effects = bool(response.upsert_attributes or response.publish_to_channel or response.delete_from_channel
                           or decision.next_steps or decision.cancel_step_types)
        if not has_effects and not request.is_transactional:
            return pb.InvokeRPCResponse(output=response.output), None
        flow = engine.flow(uid)
        if flow is None or not flow.running:
            raise flow_not_found(request.flow_id, f"flow {request.flow_id} is not active")
        effects = Effects(touched={uid})
        with engine.store.transaction() as db:
            state.upsert_attributes(db, uid, response.upsert_attributes)
            effects.written.update((uid, write.key) for write in response.upsert_attributes)
            if response.publish_to_channel:
                state.publish(db, uid, response.publish_to_channel)
            missing = state.delete_messages(db, uid, response.delete_from_channel)
            if missing and request.is_transactional:
                raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION,
                                   f"channel message not found: {', '.join(missing)}",
                                   pb.ERROR_SUB_STATUS_CHANNEL_MESSAGE_NOT_FOUND)
            for step_type in decision.cancel_step_types:
                self.flows.cancel_steps(db, uid, step_type, None, effects)
            for movement in decision.next_steps:
                create_step(engine, db, flow, movement, "", effects)
            history.rpc_completed(db, uid, request.rpc_name, request.input, response, worker_id)
            self.flows.after_step_finished(db, uid, effects)
            if response.publish_to_channel:
                engine.complete_waits(db, uid, effects)  # the publish and the Waits it satisfies: one commit
        return pb.InvokeRPCResponse(output=response.output), effects
