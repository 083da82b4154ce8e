"""Channel operations from outside a run (Dex's ``PublishToChannel``, ``GetChannelMessages`` and
``DeleteChannelMessage``, which the SDK's Client reaches with the raw stub); a Step's own publishes
and deletes commit with its result (``outcomes``).

Invariants (engine lock held): a publish and its history event commit in one transaction, and the
run's Waits it may satisfy are checked after that commit; a delete of a message that is not pending
changes nothing (NOT_FOUND); only a running run accepts publishes and deletes, while reads answer
for any run.
"""

from __future__ import annotations

import grpc

from dex.dexpb import dex_pb2 as pb

from . import history
from .core import EngineCore
from .errors import ServiceError, invalid
from .repository import state
from .rows import Effects, FlowRow


class ChannelOps:
    """The Channel calls of FlowService; every method runs under the engine lock."""

    def __init__(self, engine: EngineCore) -> None:
        self.engine = engine

    def _running(self, flow_id: str, run_id: str) -> FlowRow:
        flow = self.engine.require_flow(flow_id, run_id)
        if not flow.running:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, f"flow {flow_id} is not active",
                               pb.ERROR_SUB_STATUS_FLOW_NOT_EXISTS)
        return flow

    def publish(self, request: pb.PublishToChannelRequest) -> None:
        """Append the messages to their Channels and record them; then re-check the run's Waits."""
        self.engine.assert_locked()
        flow = self._running(request.flow_id, request.run_id)
        messages = list(request.messages)
        with self.engine.store.transaction() as db:
            state.publish(db, flow.uid, messages)
            history.channel_published(db, flow.uid, messages)
        self.engine.apply(Effects(wait_checks={flow.uid}))

    def read(self, request: pb.GetChannelMessagesRequest) -> pb.GetChannelMessagesResponse:
        """The pending messages of one Channel (instance), oldest first."""
        self.engine.assert_locked()
        if not request.channel_name:
            raise invalid("channel_name is required")
        flow = self.engine.require_flow(request.flow_id, request.run_id)
        loaded = state.loaded_messages(self.engine.store.db, flow.uid, [request.channel_name], [])
        values = loaded.get(request.channel_name)
        return pb.GetChannelMessagesResponse(messages=values.messages if values is not None else [])

    def delete(self, request: pb.DeleteChannelMessageRequest) -> None:
        """Remove one pending message by id and record it."""
        self.engine.assert_locked()
        if not request.channel_name or not request.message_id:
            raise invalid("channel_name and message_id are required")
        flow = self._running(request.flow_id, request.run_id)
        deletion = pb.ChannelMessageDeletion(channel_name=request.channel_name, message_id=request.message_id)
        with self.engine.store.transaction() as db:
            if state.delete_messages(db, flow.uid, [deletion]):
                raise ServiceError(grpc.StatusCode.NOT_FOUND, f"channel message not found: {request.message_id}",
                                   pb.ERROR_SUB_STATUS_CHANNEL_MESSAGE_NOT_FOUND)
            history.channel_deleted(db, flow.uid, [deletion])
        self.engine.apply(Effects(touched={flow.uid}))
