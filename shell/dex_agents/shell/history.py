"""A session's stored messages as a Worker keeps them between invocations, so that the work of a turn
does not grow with the session.

Within one run a message's ``AgentMessages`` instance is written once and never changed (messages are
only appended, under new sequence keys; a time travel starts a new run), so a Worker may keep the
committed messages it has seen and have Dex send it only the ones it lacks. ``MessageHistory`` is that
cache: per run (Flow ID and run ID), the contiguous prefix of committed messages, sequences ``1..K``,
as immutable values shared with the states built from it; least recently used runs are dropped past a
size bound.

How an invocation reads the messages ``low..high`` (``plan_read``, then ``HistoryRead.complete``):
    * the instances its task loaded, probed from ``high`` down (a ``RunModel`` movement loads the
      instances the moving Worker's cache lacked, a static option the whole map, an RPC none);
    * below them, the cached prefix;
    * what neither holds (another Worker moved to this Step, this Worker restarted or dropped the run)
      is read from Dex's committed state for the exact run (``CommittedReader``: ``GetAttributes`` with
      the instance keys, blob references hydrated through the BlobCache), which ``session_worker``
      attaches. Without a reader such an invocation fails with an error that says so.

Invariants:
    * Every value in the cache was committed: it came from an invocation's loaded snapshot or from a
      read of committed state, never from a write an invocation only staged (its commit may fail).
    * A read returns exactly the sequences asked for, in order, or raises: a stored message that is
      missing is an error, never a shorter history.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, cast, final

import grpc
from dex import AttributeMapLoad, AttributeMapNotLoadedError, BlobCache, Context, Credential, Registry
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc
from pyrsistent import pvector
from pyrsistent.typing import PVector

from dex_agents.pure.flow.rows import MethodAccess
from dex_agents.pure.machine.keys import message_sequence_key
from dex_agents.pure.values.persistence import MapName
from dex_agents.pure.values.session import AgentMessage
from dex_agents.shell.codecs import StoredValueError
from dex_agents.shell.definitions import AGENT_MESSAGES, AGENT_STATE
from dex_agents.shell.dex_options import CachedLoads
from dex_agents.shell.gather import read_stored
from dex_agents.shell.sdk_private import ValueHydrator, ValueMapper, large_message_channel, translate_rpc_error

DEFAULT_HISTORY_CHARACTERS: Final = 256 * 1024 * 1024
"""The cache's bound, in characters of stored message text (framework items and display fields)."""

READ_BATCH_KEYS: Final = 512
"""Instance keys per ``GetAttributes`` call of a read of committed messages."""

READ_TIMEOUT_SECONDS: Final = 60.0


class MessagesUnavailableError(RuntimeError):
    """Committed messages an invocation needs are neither loaded, cached nor readable (no reader, or
    Dex does not have them); the invocation fails and Dex retries it."""


def message_size(message: AgentMessage) -> int:
    """The characters a cached message counts against the bound."""
    return (len(message.framework_item) + len(message.text or "") + len(message.tool_output or "")
            + len(message.tool_arguments or "") + 64)


@final
@dataclass(slots=True)
class _CachedRun:
    messages: PVector[AgentMessage]
    characters: int


@final
class MessageHistory:
    """The committed message prefixes of recently seen runs (see the module docstring); thread-safe
    (Steps run on the Worker's event loop, RPC bodies on worker threads)."""

    def __init__(self, max_characters: int = DEFAULT_HISTORY_CHARACTERS) -> None:
        self._lock = threading.Lock()
        self._runs: OrderedDict[tuple[str, str], _CachedRun] = OrderedDict()
        self._characters = 0
        self._max_characters = max_characters
        self.reader: CommittedReader | None = None
        """Reads committed messages the cache lacks; attached by ``session_worker``."""

    def covered(self, flow_id: str, run_id: str) -> int:
        """How many messages of the run (sequences ``1..n``) the cache holds."""
        with self._lock:
            cached = self._runs.get((flow_id, run_id))
            return 0 if cached is None else len(cached.messages)

    def prefix(self, flow_id: str, run_id: str) -> PVector[AgentMessage]:
        """The cached prefix of the run (empty when none)."""
        with self._lock:
            cached = self._runs.get((flow_id, run_id))
            if cached is None:
                return pvector()
            self._runs.move_to_end((flow_id, run_id))
            return cached.messages

    def remember(self, flow_id: str, run_id: str, messages: PVector[AgentMessage]) -> None:
        """Keep ``messages`` (committed, sequences ``1..len``) as the run's prefix when longer than the
        cached one."""
        key = (flow_id, run_id)
        with self._lock:
            cached = self._runs.get(key)
            if cached is not None and len(cached.messages) >= len(messages):
                self._runs.move_to_end(key)
                return
            start = 0 if cached is None else len(cached.messages)
            added = sum(message_size(message) for message in messages[start:])
            characters = added + (0 if cached is None else cached.characters)
            if characters > self._max_characters:
                self._drop(key)
                return
            if cached is not None:
                self._characters -= cached.characters
            self._runs[key] = _CachedRun(messages=messages, characters=characters)
            self._runs.move_to_end(key)
            self._characters += characters
            while self._characters > self._max_characters:
                self._drop(next(iter(self._runs)))

    def _drop(self, key: tuple[str, str]) -> None:
        cached = self._runs.pop(key, None)
        if cached is not None:
            self._characters -= cached.characters

    def forget(self, flow_id: str, run_id: str) -> None:
        """Drop the run's prefix (tests)."""
        with self._lock:
            self._drop((flow_id, run_id))


def message_count_of(context: Context) -> int:
    """The committed message count the invocation saw (``AgentState.message_count``; 0 before the start)."""
    agent_state = read_stored(AGENT_STATE.name, lambda: AGENT_STATE.get(context))
    return 0 if agent_state is None else agent_state.message_count


@final
@dataclass(frozen=True, slots=True)
class HistoryRead:
    """A read of messages ``low..high`` of one run: what the task loaded, what the cache held, and the
    sequences still to read from Dex (``missing``, possibly empty)."""

    flow_id: str
    run_id: str
    low: int
    high: int
    cached: PVector[AgentMessage]
    loaded: tuple[AgentMessage, ...]
    missing: range

    def complete(self, history: MessageHistory, read: Sequence[AgentMessage] = ()) -> PVector[AgentMessage]:
        """The messages ``low..high`` in order, given the ``missing`` ones ``read`` from Dex; the cache
        learns the longer committed prefix when the messages join it."""
        if [message.sequence for message in read] != list(self.missing):
            raise MessagesUnavailableError(
                f"read AgentMessages {[message.sequence for message in read]} of run {self.run_id}, "
                f"expected {list(self.missing)}")
        cached_through = len(self.cached)
        if self.low > cached_through + 1:
            return pvector([*read, *self.loaded])
        lowest_loaded = self.high + 1 - len(self.loaded)
        head = self.cached if cached_through < lowest_loaded else self.cached[:lowest_loaded - 1]
        prefix = head.extend(read).extend(self.loaded) if read or self.loaded else head
        history.remember(self.flow_id, self.run_id, prefix)
        return prefix if self.low == 1 else pvector(prefix[self.low - 1:self.high])


def plan_read(context: Context, history: MessageHistory, low: int, high: int) -> HistoryRead:
    """What an invocation needs to read messages ``low..high`` (1 <= low; ``high`` at most its message count).

    Raises:
        StoredValueError: a loaded message cannot be decoded.
    """
    loaded: list[AgentMessage] = []
    sequence = high
    while sequence >= low:
        key = message_sequence_key(sequence)
        try:
            message = read_stored(f"{AGENT_MESSAGES.name}/{key}", partial(AGENT_MESSAGES.get, context, key))
        except AttributeMapNotLoadedError:
            break
        if message is None or message.sequence != sequence:
            raise StoredValueError(f"stored {AGENT_MESSAGES.name}/{key} is missing or holds sequence "
                                   f"{None if message is None else message.sequence}")
        loaded.append(message)
        sequence -= 1
    loaded.reverse()
    lowest_loaded = sequence + 1
    flow_id, run_id = context.flow_id, context.run_id
    cached = history.prefix(flow_id, run_id) if lowest_loaded > low else pvector()
    missing = range(max(low, len(cached) + 1), lowest_loaded)
    return HistoryRead(flow_id=flow_id, run_id=run_id, low=low, high=high, cached=cached, loaded=tuple(loaded),
                       missing=missing)


@final
class CommittedReader:
    """Reads committed ``AgentMessages`` instances of an exact run from Dex (``GetAttributes``), blob
    references hydrated through the BlobCache, over a channel of its own that takes large answers."""

    def __init__(self, server_address: str, credential: Credential | None, blob_cache: BlobCache,
                 registry: Registry) -> None:
        self._channel = large_message_channel(server_address, credential)
        self._stub = dex_pb2_grpc.FlowServiceStub(self._channel)
        self._hydrator = ValueHydrator(self._stub, blob_cache)
        self._values = ValueMapper(registry.codec_registry)
        self._codec = self._values.codec(AgentMessage)

    def read(self, flow_id: str, run_id: str, sequences: range) -> list[AgentMessage]:
        """The committed messages ``sequences`` of the run, in order.

        Raises:
            MessagesUnavailableError: Dex refused the read or lacks one of them.
            StoredValueError: one cannot be decoded.
        """
        messages: list[AgentMessage] = []
        for start in range(sequences.start, sequences.stop, READ_BATCH_KEYS):
            batch = range(start, min(start + READ_BATCH_KEYS, sequences.stop))
            names = {AGENT_MESSAGES.load(message_sequence_key(sequence)).physical_name: sequence for sequence in batch}
            request = pb.GetAttributesRequest(flow_id=flow_id, run_id=run_id, keys=list(names))
            try:
                response = self._stub.GetAttributes(request, timeout=READ_TIMEOUT_SECONDS)
            except grpc.RpcError as error:
                raise MessagesUnavailableError(
                    f"cannot read committed messages of run {run_id}: "
                    f"{translate_rpc_error(error, 'get_attributes', flow_id, 'existing')}") from error
            found = {entry.key: entry.value for entry in response.attributes}
            absent = [name for name in names if name not in found]
            if absent:
                raise MessagesUnavailableError(f"Dex has no committed {absent[0]} in run {run_id}")
            values = self._hydrator.hydrate_all(flow_id, [found[name] for name in names])
            for name, value in zip(names, values, strict=True):
                message = read_stored(name, partial(self._decode, value))
                if message is None or message.sequence != names[name]:
                    raise StoredValueError(f"stored {name} holds sequence {None if message is None else message.sequence}")
                messages.append(message)
        return messages

    def _decode(self, value: pb.Value) -> AgentMessage | None:
        decoded: Any = self._values.decode(value, self._codec)
        return cast(AgentMessage | None, decoded)

    def close(self) -> None:
        self._channel.close()


def message_loads(history: MessageHistory, flow_id: str, run_id: str, message_count: int) -> CachedLoads | None:
    """The loads of a movement to a Step that reads ``AgentMessages`` as a cached map: the committed
    messages up to ``message_count`` this Worker's cache lacks; ``None`` (load the whole map) when this
    Worker cannot read committed state, so the target never depends on a read it could not make."""
    if history.reader is None:
        return None
    covered = history.covered(flow_id, run_id)
    loads = tuple(AGENT_MESSAGES.load(message_sequence_key(sequence))
                  for sequence in range(covered + 1, message_count + 1))

    def cached_loads(name: MapName) -> tuple[AttributeMapLoad, ...]:
        if name is not MapName.AGENT_MESSAGES:
            raise ValueError(f"{name} is not served from the message cache")
        return loads

    return cached_loads


def read_messages_sync(context: Context, history: MessageHistory, low: int, high: int) -> PVector[AgentMessage]:
    """Messages ``low..high`` for an invocation that may block (an RPC body on a worker thread)."""
    planned = plan_read(context, history, low, high)
    if not planned.missing:
        return planned.complete(history)
    return planned.complete(history, _reader_of(history, planned).read(planned.flow_id, planned.run_id,
                                                                       planned.missing))


async def read_messages(context: Context, history: MessageHistory, low: int, high: int) -> PVector[AgentMessage]:
    """Messages ``low..high`` for a Step on the event loop (a read from Dex runs on a worker thread)."""
    planned = plan_read(context, history, low, high)
    if not planned.missing:
        return planned.complete(history)
    reader = _reader_of(history, planned)
    read = await asyncio.get_running_loop().run_in_executor(
        None, reader.read, planned.flow_id, planned.run_id, planned.missing)
    return planned.complete(history, read)


async def cached_messages(history: MessageHistory, context: Context, access: MethodAccess) -> PVector[AgentMessage] | None:
    """Every message a Step method that reads ``AgentMessages`` as a cached map sees (``None`` for a
    method that does not)."""
    if MapName.AGENT_MESSAGES not in access.cached_maps:
        return None
    return await read_messages(context, history, 1, message_count_of(context))


def cached_messages_sync(history: MessageHistory, context: Context, access: MethodAccess,
                         window: Callable[[int], tuple[int, int]]) -> PVector[AgentMessage] | None:
    """The messages an RPC that reads ``AgentMessages`` as a cached map sees: those of ``window(count)``
    (``None`` for an RPC that does not read them)."""
    if MapName.AGENT_MESSAGES not in access.cached_maps:
        return None
    low, high = window(message_count_of(context))
    if low > high:
        return pvector()
    return read_messages_sync(context, history, low, high)


def _reader_of(history: MessageHistory, planned: HistoryRead) -> CommittedReader:
    reader = history.reader
    if reader is None:
        raise MessagesUnavailableError(
            f"messages {planned.missing.start}..{planned.missing.stop - 1} of session {planned.flow_id} were neither "
            "loaded nor cached, and this Worker cannot read committed state: build it with session_worker")
    return reader


__all__ = [
    "DEFAULT_HISTORY_CHARACTERS",
    "CommittedReader",
    "HistoryRead",
    "MessageHistory",
    "MessagesUnavailableError",
    "cached_messages",
    "cached_messages_sync",
    "message_count_of",
    "message_loads",
    "message_size",
    "plan_read",
    "read_messages",
    "read_messages_sync",
]
