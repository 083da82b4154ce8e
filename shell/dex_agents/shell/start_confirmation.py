"""Confirm through Dex that a single-attempt tool Step's start is committed, before the tool runs.

A heartbeat proven *written* (``heartbeats.heartbeat_sent``) is not proven *received*: the frame can
sit in the Worker's transport when the Worker dies, Dex then sees an attempt without output and
re-delivers it under the same attempt number, and the tool runs twice (README, "The heartbeat
window"). So ``CallSingleAttemptTool`` reads its own ``tool_call_started`` event back from Dex before
it calls the tool: the event went out on the attempt's stream before the heartbeat, and Dex commits a
Stream write of a running attempt together with the mark that the attempt sent output (an attempt
with output is failed, never re-delivered, when its Worker is lost; the local engine fsyncs that mark
for a single-attempt method). Once Dex answers the event, a crash records ``outcome_unknown`` and the
tool never runs again.

``StartReader`` reads the session's ``AgentEvents`` Stream newest first (``ListStreamMessages``, over a
channel of its own, on a worker thread) and looks for the event of this Step execution and attempt;
``confirm_start`` asks it until it is found, backing off from 0.5 ms to 20 ms between reads.

Invariants:
    * The tool runs only after Dex answered the event: no reader (a Worker not built by
      ``session_worker``), a read Dex refuses, or no answer within the deadline raises
      ``StartNotConfirmedError`` and the attempt fails before the tool ran (-> ``outcome_unknown``).
    * Only the newest ``MAX_READ_MESSAGES`` events are searched: the event was written just now, so a
      session writing that many events in between (or a Stream budget that dropped it) fails safe.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final, cast, final

import grpc
from dex import AsyncContext, Credential
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from dex_agents.pure.machine.events import TOOL_CALL_STARTED
from dex_agents.shell.heartbeats import HeartbeatNotProvenError
from dex_agents.shell.sdk_private import large_message_channel

PAGE_SIZE: Final = 32
"""Events per ``ListStreamMessages`` page; the started event is almost always on the first."""
MAX_READ_MESSAGES: Final = 256
"""The most recent events searched for the started event."""
READ_TIMEOUT_SECONDS: Final = 5.0
_FIRST_PAUSE_SECONDS: Final = 0.0005
_LONGEST_PAUSE_SECONDS: Final = 0.02


class StartNotConfirmedError(HeartbeatNotProvenError):
    """Dex did not confirm the single-attempt tool's start; the tool did not run (the attempt fails,
    and the call is recorded ``outcome_unknown``)."""


def _is_started_event(value: pb.Value, step_execution_id: str, attempt: int, tool_call_id: str) -> bool:
    """Whether a Stream message's value is this attempt's ``tool_call_started`` (its JSON, read
    leniently: anything else is not it)."""
    raw = value.obj_value.payload if value.HasField("obj_value") else value.string_value
    try:
        event = json.loads(raw) if raw else None
    except ValueError:
        return False
    if not isinstance(event, dict):
        return False
    payload = event.get("payload")
    return (event.get("type") == TOOL_CALL_STARTED and event.get("step_execution_id") == step_execution_id
            and event.get("attempt") == attempt and isinstance(payload, dict)
            and payload.get("tool_call_id") == tool_call_id)


@final
class StartReader:
    """Reads a session Flow type's ``AgentEvents`` Stream from Dex, over a channel of its own."""

    def __init__(self, server_address: str, credential: Credential | None, flow_type: str, stream_name: str) -> None:
        self._channel = large_message_channel(server_address, credential)
        self._stub = cast(Any, dex_pb2_grpc).FlowServiceStub(self._channel)
        self._flow_type = flow_type
        self._stream_name = stream_name

    def has_started(self, flow_id: str, step_execution_id: str, attempt: int, tool_call_id: str) -> bool:
        """Whether Dex holds the ``tool_call_started`` event of ``step_execution_id``'s ``attempt``
        among the session's newest ``MAX_READ_MESSAGES`` events.

        Raises:
            grpc.RpcError: Dex refused the read.
        """
        token = ""
        read = 0
        while read < MAX_READ_MESSAGES:
            request = pb.ListStreamMessagesRequest(flow_id=flow_id, flow_type=self._flow_type,
                                                   stream_name=self._stream_name, page_size=PAGE_SIZE,
                                                   before_page_token=token)
            response = self._stub.ListStreamMessages(request, timeout=READ_TIMEOUT_SECONDS)
            for message in response.messages:
                if _is_started_event(message.value, step_execution_id, attempt, tool_call_id):
                    return True
            read += len(response.messages)
            token = response.next_page_token
            if not token or not response.messages:
                return False
        return False

    def close(self) -> None:
        self._channel.close()


@final
class StartConfirmations:
    """A session Flow's ``StartReader`` on this Worker (``session_worker`` attaches one; ``None``: none)."""

    def __init__(self) -> None:
        self.reader: StartReader | None = None


async def confirm_start(context: AsyncContext, confirmations: StartConfirmations, tool_call_id: str, *,
                        deadline_seconds: float) -> None:
    """Return once Dex answers this attempt's ``tool_call_started`` event (see the module docstring).

    Raises:
        StartNotConfirmedError: no reader, Dex refused the read, or the event was not there within
            ``deadline_seconds``; the tool must not run.
    """
    reader = confirmations.reader
    if reader is None:
        raise StartNotConfirmedError(
            "cannot confirm through Dex that the single-attempt tool's start is committed (this Worker has no "
            "reader of committed state: build it with session_worker); the tool was not run")
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + deadline_seconds
    pause = _FIRST_PAUSE_SECONDS
    flow_id, step_execution_id, attempt = context.flow_id, context.step_execution_id, context.attempt
    while True:
        try:
            found = await loop.run_in_executor(None, reader.has_started, flow_id, step_execution_id, attempt,
                                               tool_call_id)
        except grpc.RpcError as error:
            raise StartNotConfirmedError(f"Dex refused the read that confirms the single-attempt tool's start "
                                         f"({error.code()}); the tool was not run") from error
        if found:
            return
        if loop.time() >= give_up_at:
            raise StartNotConfirmedError(
                f"Dex did not confirm the single-attempt tool's start (its tool_call_started event) within "
                f"{deadline_seconds:g} s; the tool was not run")
        await asyncio.sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE_SECONDS)


__all__ = [
    "MAX_READ_MESSAGES",
    "StartConfirmations",
    "StartNotConfirmedError",
    "StartReader",
    "confirm_start",
]
