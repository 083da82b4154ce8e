"""The session's reducers, one per Step and per RPC, behind one dispatch: ``reduce``.

Public API (stable; what the shell, the replay and the property tests drive):
    * ``reduce(state, config, session_input) -> Transition`` (``dispatch``).
    * ``approval_wait(state, tool_call_id, now_ms)``: what ``AwaitToolApproval`` waits for.
    * ``turn_failure_note(state)``: the note text ``RecordTurnFailure`` needs built as a user message.
    * ``snapshot_of(state)``: the ``get_agent_snapshot`` answer.
"""

from dex_agents.pure.reducers.approval import ApprovalWait as ApprovalWait
from dex_agents.pure.reducers.approval import SkipWait as SkipWait
from dex_agents.pure.reducers.approval import WaitForResolution as WaitForResolution
from dex_agents.pure.reducers.approval import approval_wait as approval_wait
from dex_agents.pure.reducers.dispatch import reduce as reduce
from dex_agents.pure.reducers.rpcs import snapshot_of as snapshot_of
from dex_agents.pure.reducers.turn import turn_failure_note as turn_failure_note

__all__ = ["ApprovalWait", "SkipWait", "WaitForResolution", "approval_wait", "reduce", "snapshot_of", "turn_failure_note"]
