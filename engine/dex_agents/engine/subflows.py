"""SubFlows: a Wait condition that starts (or reuses) another Flow run and is satisfied when that
run closes.

Identity is Dex's and server-owned: the SubFlow's Flow ID is ``SubFlow:<parent Flow ID>-<Step
execution id>-<condition index>`` (what the SDK's ``SubFlow.get_flow_id`` computes) and its start
request id is ``<parent run id><Step execution id>``. When the Wait is stored, each SubFlow condition
starts its run in the same transaction, unless one exists with that Flow ID:

==========================  =================  ==================================  ======================
existing run                ``ATTACH``         ``RESTART_IF_PREVIOUS_EXITS_``      ``ALWAYS_RESTART``
                                               ``ABNORMALLY`` (the default)
==========================  =================  ==================================  ======================
none                        start              start                               start
running                     attach             attach                              terminate and start
completed                   its result         its result                          start
failed, canceled, timed     its result         start                               start
out or terminated
==========================  =================  ==================================  ======================

A run started by the same request id (a retried ``wait_for`` of the same parent run) always attaches
or gives its result. A SubFlow run reports its result to every Wait linked to it when it closes
(``state.report_sub_flow_result``); the parent's close, failure, cancel or reset never stops it.
"""

from __future__ import annotations

import sqlite3

from dex.dexpb import dex_pb2 as pb

from .core import EngineCore
from .flows import FlowOps
from .repository import state
from .rows import Effects, FlowRow, StepRow

_ABNORMAL = (pb.FLOW_STATUS_FAILED, pb.FLOW_STATUS_CANCELED, pb.FLOW_STATUS_TERMINATED,
             pb.FLOW_STATUS_SERVER_SIDE_TIMEOUT_INTERNAL_ONLY)


def sub_flow_id(parent_flow_id: str, seid: str, index: int) -> str:
    """The Flow ID of the SubFlow at ``index`` of the Wait of Step execution ``seid``."""
    return f"SubFlow:{parent_flow_id}-{seid}-{index}"


class SubFlows:
    """Starts and links SubFlow runs (engine lock held, inside the caller's transaction)."""

    def __init__(self, engine: EngineCore, flows: FlowOps) -> None:
        self.engine = engine
        self.flows = flows

    def start_all(self, db: sqlite3.Connection, parent: FlowRow, step: StepRow, waiting: pb.WaitingCondition,
                  effects: Effects) -> None:
        """Start or reuse the run of every SubFlow condition of ``waiting`` and link it to the Step."""
        self.engine.assert_locked()
        request_id = f"{parent.run_id}{step.seid}"
        for index, condition in enumerate(waiting.sub_flow_conditions):
            child_id = sub_flow_id(parent.flow_id, step.seid, index)
            existing = self.engine.current_flow(child_id)
            if existing is not None and self._reuses(existing, request_id, condition.options.reuse_policy):
                child_uid = existing.uid
                result = None if existing.running else self.engine.flow_result(existing.uid)
            else:
                if existing is not None and existing.running:
                    self.flows.close(db, existing, pb.FLOW_STATUS_TERMINATED, pb.FLOW_ERROR_TYPE_UNSPECIFIED, "",
                                     effects)
                _, child_uid = self.flows.insert_run(db, self._start_request(child_id, request_id, condition),
                                                     effects, parent_flow_id=parent.flow_id)
                result = None
            state.put_sub_flow(db, parent.uid, step.seid, index, child_id, child_uid, result)

    @staticmethod
    def _reuses(existing: FlowRow, request_id: str, policy: int) -> bool:
        """Whether the existing run is attached to (or its result taken) rather than a new one started."""
        if existing.request_id == request_id:
            return True
        if policy == pb.SUB_FLOW_REUSE_POLICY_ALWAYS_RESTART:
            return False
        if policy == pb.SUB_FLOW_REUSE_POLICY_ATTACH or existing.running:
            return True
        return existing.status not in _ABNORMAL

    @staticmethod
    def _start_request(child_id: str, request_id: str, condition: pb.SubFlowCondition) -> pb.StartFlowRequest:
        options = condition.options
        return pb.StartFlowRequest(
            flow_id=child_id, flow_type=condition.sub_flow_type, start_step_type=condition.start_step_type,
            step_input=condition.step_input, step_options=condition.step_options, request_id=request_id,
            flow_timeout_seconds=options.flow_timeout_seconds, flow_timeout_policy=options.flow_timeout_policy,
            flow_start_options=pb.FlowStartOptions(
                attributes=options.attributes, flow_config_override=options.flow_config_override,
                flow_start_delay_seconds=options.flow_start_delay_seconds,
                timeout_handler_options=options.timeout_handler_options))
