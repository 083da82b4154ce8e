"""Streams: best-effort append-only message logs keyed by (Flow type, Stream name, Flow id).

The byte capacity is a budget shared by every Flow of the type: after an append, the oldest
messages of that (Flow type, Stream) are evicted until the retained bytes fit. A message's size is
its serialized Value. Resume tokens are the message's sequence number; ``ReadStream`` returns the
first retained message after the token (the retained head for ``""``), long-polling when there is
none; ``ListStreamMessages`` pages newest-first. Stream writes are independent of Flow lifecycle.
An append is committed without an fsync of its own (``Store.transaction(durable=False)``): Streams
are best-effort, so an append survives a process crash and reaches the disk with the next durable
commit (at the latest the writing Step's result).
"""

from __future__ import annotations

import time
from google.protobuf.timestamp_pb2 import Timestamp

from dex.dexpb import dex_pb2 as pb

from .core import EngineCore
from .errors import invalid, long_poll_timeout
from .repository import streams as stored
from .long_polls import LongPoll, Ready, WaitKey, long_poll_seconds
from .request_checks import parse_token

DEFAULT_READ_WAIT = 30.0


def _token(token: str) -> int:
    return parse_token(token, "stream token")


class StreamOps:
    """Stream operations (engine lock held unless stated)."""

    def __init__(self, engine: EngineCore) -> None:
        self.engine = engine
        self._usage: dict[tuple[str, str], int] = {}
        """Retained bytes per (Flow type, Stream), as committed: a rolled-back transaction (a failed
        COMMIT included) forgets them all, and they are summed again on the next append."""
        engine.store.on_rollback(self._usage.clear)

    def write(self, flow_type: str, stream: str, flow_id: str, capacity: int, value: pb.Value, source: str) -> None:
        """Append one message and evict the oldest of the Flow type beyond ``capacity`` bytes."""
        self.engine.assert_locked()
        if not flow_type or not stream or not flow_id:
            raise invalid("flow_type, stream_name and flow_id are required")
        if capacity <= 0:
            raise invalid("stream_capacity_bytes must be positive")
        blob = value.SerializeToString()
        key = (flow_type, stream)
        with self.engine.store.transaction(durable=False) as db:  # best-effort: no fsync of its own
            used = self._usage.get(key)
            if used is None:
                used = stored.retained_bytes(db, flow_type, stream)
            stored.append(db, flow_type, stream, flow_id, blob, source, self.engine.now_ms())
            used += len(blob)
            while used > capacity:
                evicted = stored.evict_oldest(db, flow_type, stream)
                if evicted is None:
                    break
                used -= evicted
            self._usage[key] = used
        self.engine.long_polls.notify(("stream", (flow_type, stream, flow_id)))

    def _message(self, row: stored.StreamRow) -> pb.StreamMessage:
        seq, blob, source, created_ms = row
        value = pb.Value()
        value.ParseFromString(blob)
        created = Timestamp()
        created.FromMilliseconds(created_ms)
        return pb.StreamMessage(value=value, resume_token=str(seq), created_time=created, source=source)

    def read(self, request: pb.ReadStreamRequest, poll: LongPoll | None = None) -> pb.ReadStreamResponse:
        """The first message after the token, waiting up to the request's wait time."""
        self.engine.assert_locked()
        if not request.flow_type or not request.stream_name or not request.flow_id:
            raise invalid("flow_type, stream_name and flow_id are required")
        if request.wait_time_seconds < 0:
            raise invalid("wait_time_seconds must not be negative")
        after = _token(request.resume_token)
        deadline = time.monotonic() + long_poll_seconds(request.wait_time_seconds, DEFAULT_READ_WAIT,
                                                             self.engine.timing.long_poll_cap)
        key: WaitKey = ("stream", (request.flow_type, request.stream_name, request.flow_id))

        def appended() -> Ready[pb.ReadStreamResponse] | WaitKey:
            row = stored.first_after(self.engine.store.db, request.flow_type, request.stream_name,
                                     request.flow_id, after)
            return key if row is None else Ready(pb.ReadStreamResponse(message=self._message(row)))

        return self.engine.long_polls.wait_until(
            appended, deadline, poll, lambda: long_poll_timeout("no stream message before the wait expired"))

    def list(self, request: pb.ListStreamMessagesRequest) -> pb.ListStreamMessagesResponse:
        """One newest-first page before the page token."""
        self.engine.assert_locked()
        if not request.flow_type or not request.stream_name or not request.flow_id:
            raise invalid("flow_type, stream_name and flow_id are required")
        if request.page_size <= 0:
            raise invalid("page_size must be positive")
        before = _token(request.before_page_token) or 2**62
        rows = stored.newest_before(self.engine.store.db, request.flow_type, request.stream_name,
                                    request.flow_id, before, request.page_size + 1)
        page = rows[: request.page_size]
        response = pb.ListStreamMessagesResponse(messages=[self._message(row) for row in page])
        if len(rows) > request.page_size:
            response.next_page_token = str(page[-1][0])
        return response
