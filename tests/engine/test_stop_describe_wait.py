"""Stop, describe, wait and search: describe reports the run; cancel/terminate/fail close the Flow
with the matching status (and a running handler learns of it); unknown Flows get the SDK's
not-found errors; ``wait_for_step_completion`` returns once the Step completed, and client waits
with a request timeout end in ``RequestTimeoutError``; a repeated request id is idempotent; search
finds Flows by type and by indexed Attribute; malformed raw requests get a clear gRPC status and
leave the engine serving."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from datetime import datetime, timedelta, timezone

import grpc
import pytest
from dex import (
    Attribute,
    AttributeIndex,
    AttributeMatch,
    Channel,
    Context,
    FlowAlreadyStartedError,
    FlowErrorType,
    FlowNotActiveOrNotFoundError,
    FlowNotFoundError,
    FlowStatus,
    IndexType,
    PersistenceSchema,
    RequestTimeoutError,
    RPCResult,
    StartFlowOptions,
    Step,
    StepDecision,
    StepExecutionId,
    StepList,
    StepOutput,
    StopFlowOptions,
    StopType,
    Wait,
    WaitForAttributeOptions,
    WaitForStepCompletionOptions,
    dead_end,
    go_to,
    heartbeat,
    rpc,
)
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from tests.engine.conftest import DexFixture
from tests.engine.harness import GATE_SECONDS, NamedFlow, eventually, in_thread

ticket = Channel("Ticket", str)
waits = Attribute("Waits", int)
REFUSALS = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION)


class First(Step[str]):
    def __init__(self, flow: StopFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: str) -> Wait:
        return Wait.until(ticket.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        return go_to(Busy, input)


class Busy(Step[str]):
    """Heartbeats until cancelled (input ``spin``) or parks with a dead end."""

    def __init__(self, flow: StopFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> Generator[StepOutput, None, StepDecision]:
        self.flow.probe.record("busy")
        deadline = time.monotonic() + GATE_SECONDS
        while input == "spin" and time.monotonic() < deadline:
            yield heartbeat()
            if context.is_cancellation_requested():
                self.flow.probe.record("cancelled")
                break
            time.sleep(0.05)
        return dead_end()


class StopFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(First(self)).other_steps(Busy(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(ticket, waits)

    @rpc
    def admit(self, context: Context) -> RPCResult[bool]:
        ticket.publish(context, "t")
        return RPCResult(True)


def test_describe_reports_the_running_run(dex: DexFixture) -> None:
    flow = StopFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id()
    before = datetime.now(timezone.utc) - timedelta(seconds=5)
    run_id = harness.client.start_flow(flow, flow_id, "park")
    info = harness.client.describe_flow(flow_id)
    assert (info.flow_id, info.run_id, info.flow_type, info.status) == (
        flow_id, run_id, flow.get_flow_type(), FlowStatus.RUNNING)
    assert before <= info.started_at <= datetime.now(timezone.utc) + timedelta(seconds=5)


@pytest.mark.parametrize(("stop_type", "status"), [
    (StopType.CANCEL, FlowStatus.CANCELED),
    (StopType.TERMINATE, FlowStatus.TERMINATED),
    (StopType.FAIL, FlowStatus.FAILED),
])
def test_stop_closes_the_flow_with_the_matching_status(dex: DexFixture, stop_type: StopType,
                                                       status: FlowStatus) -> None:
    flow = StopFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "park")
    harness.client.stop_flow(flow_id, StopFlowOptions(type=stop_type, reason="operator said so"))
    result = harness.result(flow_id)
    assert result.status is status
    if stop_type is StopType.FAIL:
        assert result.error_type is FlowErrorType.CLIENT_API_FAILED
    assert harness.client.describe_flow(flow_id).status is status
    with pytest.raises(FlowNotActiveOrNotFoundError):
        harness.client.stop_flow(flow_id)
    with pytest.raises(FlowNotActiveOrNotFoundError):
        harness.client.invoke_rpc(flow.admit, flow_id)


def test_stop_cancels_a_running_handler(dex: DexFixture) -> None:
    flow = StopFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "spin")
    harness.client.invoke_rpc(flow.admit, flow_id)
    flow.probe.wait("busy")
    harness.client.stop_flow(flow_id, StopFlowOptions(type=StopType.CANCEL))
    assert harness.result(flow_id).status is FlowStatus.CANCELED
    flow.probe.wait("cancelled")


def test_unknown_flows_get_not_found_errors(dex: DexFixture) -> None:
    flow = StopFlow(dex.flow_type())
    harness = dex.start(flow)
    missing = dex.flow_id("missing")
    with pytest.raises(FlowNotFoundError):
        harness.client.describe_flow(missing)
    with pytest.raises(FlowNotFoundError):
        harness.client.wait_for_flow(missing, timeout=timedelta(seconds=1))
    with pytest.raises(FlowNotActiveOrNotFoundError):
        harness.client.stop_flow(missing)


def test_wait_for_step_completion(dex: DexFixture) -> None:
    flow = StopFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "park")
    options = WaitForStepCompletionOptions(request_timeout=timedelta(seconds=30))
    waiting = in_thread(lambda: harness.client.wait_for_step_completion(
        flow_id, StepExecutionId("First", 1), options))
    harness.client.invoke_rpc(flow.admit, flow_id)
    waiting(35.0)
    flow.probe.wait("busy")
    harness.client.wait_for_step_completion(flow_id, StepExecutionId("First", 1), options)


def test_search_finds_flows_by_type(dex: DexFixture) -> None:
    flow = StopFlow(dex.flow_type())
    harness = dex.start(flow)
    ids = {dex.flow_id("a"), dex.flow_id("b")}
    for flow_id in sorted(ids):
        harness.client.start_flow(flow, flow_id, "park")
    query = f"FlowType = '{flow.get_flow_type()}'"
    found: dict[str, FlowStatus] = {}
    token = ""
    for _ in range(5):
        page = harness.client.search_flows(query, 1, token)
        found.update({entry.flow_id: entry.status for entry in page.flows})
        token = page.next_page_token
        if not token:
            break
    assert found == dict.fromkeys(ids, FlowStatus.RUNNING)


def test_malformed_raw_requests_get_clear_statuses(dex: DexFixture) -> None:
    flow = StopFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "park")
    with grpc.insecure_channel(harness.address) as channel:
        stub = dex_pb2_grpc.FlowServiceStub(channel)
        requests: list[tuple[Callable[..., object], object]] = [
            (stub.StartFlow, pb.StartFlowRequest(flow_id="", flow_type=flow.get_flow_type())),
            (stub.StartFlow, pb.StartFlowRequest(flow_id=dex.flow_id(), flow_type="")),
            (stub.InvokeRPC, pb.InvokeRPCRequest(flow_id=flow_id, rpc_name="no_such_rpc")),
            (stub.SkipTimer, pb.SkipTimerRequest(flow_id=flow_id, step_execution_id="not-an-id")),
            (stub.GetHistoryEvents, pb.GetHistoryEventsRequest(flow_id=dex.flow_id("missing"))),
        ]
        for method, request in requests:
            with pytest.raises(grpc.RpcError) as refused:
                method(request, timeout=30)
            assert refused.value.code() in REFUSALS, (type(request).__name__, refused.value)
            assert refused.value.details(), type(request).__name__
    assert harness.client.health_check() is True
    assert harness.client.invoke_rpc(flow.admit, flow_id) is True, "the Flow is unharmed"
    flow.probe.wait("busy")


def test_waits_with_a_request_timeout_end_with_request_timeout_error(dex: DexFixture) -> None:
    flow = StopFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "park")
    second = timedelta(seconds=1)
    with pytest.raises(RequestTimeoutError):
        harness.client.wait_for_step_completion(flow_id, StepExecutionId("First", 1),
                                                WaitForStepCompletionOptions(request_timeout=second))
    with pytest.raises(RequestTimeoutError):
        harness.client.wait_for_attribute_match(flow_id, waits, AttributeMatch.greater_than(0),
                                                WaitForAttributeOptions(request_timeout=second))
    assert harness.client.describe_flow(flow_id).status is FlowStatus.RUNNING


def test_start_with_the_same_request_id_is_idempotent(dex: DexFixture) -> None:
    flow = StopFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id()
    options = StartFlowOptions(request_id=dex.flow_id("request"))
    first = harness.client.start_flow(flow, flow_id, "park", options)
    assert harness.client.start_flow(flow, flow_id, "park", options) == first
    with pytest.raises(FlowAlreadyStartedError):
        harness.client.start_flow(flow, flow_id, "park")


tier = Attribute("Tier", str, index=AttributeIndex(IndexType.KEYWORD))


class Classify(Step[str]):
    def __init__(self, flow: TierFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        tier.set(context, input)
        return dead_end()


class TierFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Classify(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(tier)


def test_search_matches_indexed_attributes(dex: DexFixture) -> None:
    flow = TierFlow(dex.flow_type())
    harness = dex.start(flow)
    gold = {dex.flow_id("gold1"), dex.flow_id("gold2")}
    for flow_id in sorted(gold):
        harness.client.start_flow(flow, flow_id, "gold")
    harness.client.start_flow(flow, dex.flow_id("silver"), "silver")
    query = f"FlowType = '{flow.get_flow_type()}' AND Tier = 'gold'"
    found = eventually(lambda: {e.flow_id for e in harness.client.search_flows(query, 10).flows} == gold and gold,
                       what="both gold Flows found by their indexed Tier")
    assert found == gold
    entries = harness.client.search_flows(query, 10).flows
    assert all(entry.closed_at is None and entry.status is FlowStatus.RUNNING for entry in entries)
