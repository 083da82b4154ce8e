"""Large values by reference, as Dex passes them to Workers.

A value in a task frame (a Step's input, its checkpoint, the run's Attributes and loaded map instances,
Step-execution locals, loaded Channel messages and the messages a Wait consumed, SubFlow outputs; an
RPC's input) whose serialized size exceeds ``BLOB_THRESHOLD_BYTES`` goes to the Worker as a blob
reference (``internal_blob_id_for_obj_value`` / ``internal_blob_id_for_string_value``). The Worker's
SDK loads it with ``LoadBlobs`` and keeps it in its BlobCache (by Flow ID and blob id), so a value the
Worker saw before is not sent again, and a task frame stays small however large the session's state
grows (the SDK's pull stream receives at most 4 MiB per frame).

Invariants:
    * Blob ids are content addressed (``sha256:`` and the hex digest of the serialized concrete value),
      so the same value sent again (a retry, the same record in the next Step's task) is the same blob.
    * The engine holds the values it referenced in memory, per (Flow ID, blob id), least recently used
      first out past ``BLOB_MEMORY_BYTES``; ``LoadBlobs`` of one it no longer holds is ``NOT_FOUND`` (the
      attempt fails, and its retry references the value again). Stored state itself is never a blob:
      the database keeps every value inline, and a frame is externalized only on its way out.
    * Only values of the threshold's size become references; small frames go out unchanged (no copy).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Final

from dex.dexpb import dex_pb2 as pb

BLOB_THRESHOLD_BYTES: Final = 128 * 1024
"""Values larger than this (serialized) go to Workers by reference (Dex: about 1 KB; larger here, since
every new reference costs the Worker a ``LoadBlobs`` call)."""

BLOB_MEMORY_BYTES: Final = 512 * 1024 * 1024
"""The referenced values the engine keeps for ``LoadBlobs``, at most."""

_KINDS: Final = {"obj_value": "internal_blob_id_for_obj_value", "string_value": "internal_blob_id_for_string_value"}


def task_values(task: pb.PollWorkerTask) -> Iterator[pb.Value]:
    """Every value of a task's request that the SDK hydrates (the same fields, in place)."""
    kind = task.WhichOneof("request")
    if kind == "rpc":
        request = task.rpc
        yield request.input
        yield from (entry.value for entry in request.attributes)
        for values in request.loaded_channel_messages.values():
            yield from (message.value for message in values.messages)
        return
    if kind not in ("wait_for", "execute"):
        return
    method = task.wait_for if kind == "wait_for" else task.execute
    yield method.step_input
    if method.context.HasField("last_heartbeat_value"):
        yield method.context.last_heartbeat_value
    yield from (entry.value for entry in method.attributes)
    for values in method.loaded_channel_messages.values():
        yield from (message.value for message in values.messages)
    if isinstance(method, pb.InvokeExecuteMethodRequest):
        yield from (entry.value for entry in method.step_exe_locals)
        for channel_result in method.condition_results.channel_results:
            yield from channel_result.values
        for flow_result in method.condition_results.sub_flow_results:
            yield from (completion.completed_step_output for completion in flow_result.results)


def _large(value: pb.Value) -> bool:
    return value.WhichOneof("kind") in _KINDS and value.ByteSize() > BLOB_THRESHOLD_BYTES


def _flow_id(task: pb.PollWorkerTask) -> str:
    kind = task.WhichOneof("request")
    if kind == "rpc":
        return task.rpc.context.flow_id
    return (task.wait_for if kind == "wait_for" else task.execute).context.flow_id


def blob_id(serialized: bytes) -> str:
    """The content-addressed id of a serialized concrete value."""
    return "sha256:" + hashlib.sha256(serialized).hexdigest()


def referenced(task: pb.PollWorkerTask) -> tuple[pb.PollWorkerTask, list[tuple[str, bytes]]]:
    """The task as it goes out (a copy whose large values are blob references, or the task itself when
    it has none) and the referenced values: (blob id, serialized concrete value)."""
    if not any(_large(value) for value in task_values(task)):
        return task, []
    copy = pb.PollWorkerTask()
    copy.CopyFrom(task)
    blobs: list[tuple[str, bytes]] = []
    for value in task_values(copy):
        if _large(value):
            kind = _KINDS[value.WhichOneof("kind") or ""]
            serialized = value.SerializeToString()
            identifier = blob_id(serialized)
            blobs.append((identifier, serialized))
            value.Clear()
            setattr(value, kind, identifier)
    return copy, blobs


class Blobs:
    """The values the engine referenced, for ``LoadBlobs`` (see the module docstring); thread-safe:
    dispatch adds under the engine lock, ``LoadBlobs`` reads without it."""

    def __init__(self, max_bytes: int = BLOB_MEMORY_BYTES) -> None:
        self._lock = threading.Lock()
        self._values: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._bytes = 0
        self._max_bytes = max_bytes

    def outgoing(self, task: pb.PollWorkerTask) -> pb.PollWorkerTask:
        """The task as it goes to a Worker, its large values referenced (and kept for ``LoadBlobs``)."""
        sent, blobs = referenced(task)
        if blobs:
            flow_id = _flow_id(task)
            with self._lock:
                for identifier, serialized in blobs:
                    self._keep((flow_id, identifier), serialized)
        return sent

    def _keep(self, key: tuple[str, str], serialized: bytes) -> None:
        if key in self._values:
            self._values.move_to_end(key)
            return
        self._values[key] = serialized
        self._bytes += len(serialized)
        while self._bytes > self._max_bytes and len(self._values) > 1:
            _, dropped = self._values.popitem(last=False)
            self._bytes -= len(dropped)

    def load(self, flow_id: str, blob: pb.Value) -> pb.Value | None:
        """The concrete value a blob reference of ``flow_id`` stands for, or None when not held."""
        kind = blob.WhichOneof("kind")
        if kind not in _KINDS.values():
            return None
        with self._lock:
            serialized = self._values.get((flow_id, getattr(blob, kind)))
        if serialized is None:
            return None
        value = pb.Value()
        value.ParseFromString(serialized)
        return value


__all__ = ["BLOB_MEMORY_BYTES", "BLOB_THRESHOLD_BYTES", "Blobs", "blob_id", "referenced", "task_values"]
