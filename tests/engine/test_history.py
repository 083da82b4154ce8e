"""History (raw ``FlowService.GetHistoryEvents``; the Client has no history API): the Flow start
comes first and the close last, event ids increase, and the Step ``wait_for``/``execute``
completions and failures and the RPCs appear in order with their Step execution ids, enough to
assert a turn's Step shape. Pending (started) method events, when present, precede completion."""

from __future__ import annotations

from dex import (
    Attribute,
    Channel,
    Context,
    FlowStatus,
    PersistenceSchema,
    RetryPolicy,
    RPCResult,
    Step,
    StepDecision,
    StepList,
    StepOptions,
    Wait,
    go_to,
    graceful_complete,
    rpc,
)
from dex.dexpb import dex_pb2 as pb

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow, SingleStepFlow, eventually, read_history

reply = Channel("Reply", str)
replies = Attribute("Replies", int)
SECOND_RETRY = RetryPolicy(maximum_attempts=2)


class Ask(Step[str]):
    def __init__(self, flow: TurnFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: str) -> Wait:
        return Wait.until(reply.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        return go_to(Work, "w")


class Work(Step[str]):
    def __init__(self, flow: TurnFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=SECOND_RETRY)

    def execute(self, context: Context, input: str) -> StepDecision:
        if context.attempt == 1:
            raise RuntimeError("first attempt fails")
        return go_to(Doomed, "d")


class Doomed(Step[str]):
    def __init__(self, flow: TurnFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=1)).on_execute_failure_proceed_to(Cleanup)

    def execute(self, context: Context, input: str) -> StepDecision:
        raise RuntimeError("doomed")


class Cleanup(Step[str]):
    def __init__(self, flow: TurnFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        return graceful_complete("done")


class TurnFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Ask(self)).other_steps(Work(self), Doomed(self), Cleanup(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(reply, replies)

    @rpc
    def answer(self, context: Context, input: str) -> RPCResult[bool]:
        replies.set(context, replies.get(context) + 1)
        reply.publish(context, input)
        return RPCResult(True)


def shape(event: pb.FlowHistoryEvent) -> tuple[str, str] | None:
    """``(kind, step execution id or RPC name)`` for Step/RPC events; None for others."""
    kind = event.WhichOneof("payload")
    match kind:
        case "step_wait_for_completed":
            return kind, event.step_wait_for_completed.context.step_execution_id
        case "step_wait_for_failed":
            return kind, event.step_wait_for_failed.context.step_execution_id
        case "step_execute_completed":
            return kind, event.step_execute_completed.context.step_execution_id
        case "step_execute_failed":
            return kind, event.step_execute_failed.context.step_execution_id
        case "rpc_execution_completed":
            return kind, event.rpc_execution_completed.rpc_name
        case _:
            return None


def test_history_records_the_turn_shape_in_order(dex: DexFixture) -> None:
    flow = TurnFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id()
    run_id = harness.client.start_flow(flow, flow_id, "q")
    eventually(lambda: ("step_wait_for_completed", "Ask-1") in [shape(e) for e in harness.history(flow_id)],
               what="Ask-1's wait_for completion in history")
    harness.client.invoke_rpc(flow.answer, flow_id, "yes")
    assert harness.result(flow_id).status is FlowStatus.COMPLETED
    events = harness.history(flow_id)
    assert events[0].WhichOneof("payload") == "flow_started_or_continued"
    started = events[0].flow_started_or_continued
    assert (started.flow_execution_id.flow_id, started.flow_execution_id.run_id, started.flow_type) == (
        flow_id, run_id, flow.get_flow_type())
    assert events[-1].WhichOneof("payload") == "flow_closed"
    assert events[-1].flow_closed.flow_status == pb.FLOW_STATUS_COMPLETED
    ids = [e.event_id for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), "event ids increase"
    assert [s for s in map(shape, events) if s is not None] == [
        ("step_wait_for_completed", "Ask-1"),
        ("rpc_execution_completed", "answer"),
        ("step_execute_completed", "Ask-1"),
        ("step_execute_completed", "Work-1"),
        ("step_execute_failed", "Doomed-1"),
        ("step_execute_completed", "Cleanup-1"),
    ]
    by_shape = {shape(e): e for e in events if shape(e) is not None}
    work = by_shape[("step_execute_completed", "Work-1")].step_execute_completed
    assert (work.context.step_type, work.context.from_step_execution_id, work.context.final_attempt) == (
        "Work", "Ask-1", 2)
    assert [m.step_type for m in work.output.step_decision.next_steps] == ["Doomed"]
    rpc_event = by_shape[("rpc_execution_completed", "answer")].rpc_execution_completed
    assert len(rpc_event.upsert_attributes) == 1 and len(rpc_event.publish_to_channel) == 1
    failed = by_shape[("step_execute_failed", "Doomed-1")].step_execute_failed
    assert "doomed" in failed.output.failure.details.original_worker_error_detail + failed.output.failure.backend_error


def test_pending_method_events_precede_their_completion(dex: DexFixture) -> None:
    flow = TurnFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "q")
    harness.client.invoke_rpc(flow.answer, flow_id, "yes")
    assert harness.result(flow_id).status is FlowStatus.COMPLETED
    completed_at: dict[tuple[str, str], int] = {}
    pending_at: dict[tuple[str, str], int] = {}
    for position, event in enumerate(harness.history(flow_id)):
        kind = event.WhichOneof("payload")
        if kind == "step_wait_for_pending":
            pending_at.setdefault(("wait_for", event.step_wait_for_pending.context.step_execution_id), position)
        elif kind == "step_execute_pending":
            pending_at.setdefault(("execute", event.step_execute_pending.context.step_execution_id), position)
        elif (found := shape(event)) is not None and found[0].startswith("step_"):
            method = "wait_for" if found[0].startswith("step_wait_for") else "execute"
            completed_at[(method, found[1])] = position
    for key, position in pending_at.items():
        assert key in completed_at and position < completed_at[key], key


class Loop(Step[int]):
    def __init__(self, flow: NamedFlow[int]) -> None:
        self.flow = flow

    def execute(self, context: Context, input: int) -> StepDecision:
        return go_to(Loop, input - 1) if input > 0 else graceful_complete(context.step_execution_id)


def test_history_pages_cover_a_long_run_exactly_once(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), Loop)
    harness, flow_id = dex.start_flow(flow, 59)
    assert harness.result(flow_id).single_output(str) == "Loop-60"
    whole = harness.history(flow_id)
    paged = read_history(harness.address, flow_id, harness.credential, page_size=7)
    assert [e.event_id for e in paged] == [e.event_id for e in whole]
    assert [e.SerializeToString() for e in paged] == [e.SerializeToString() for e in whole]
    completed = [s for s in map(shape, whole) if s is not None]
    assert completed == [("step_execute_completed", f"Loop-{n}") for n in range(1, 61)]
