"""Engine core, one bad run never stops others: a task too large for the pull Worker (its values each
under the blob threshold: larger ones go by reference) fails its attempt with a clear error, a Step type no Worker knows fails with NO_WORKER_AVAILABLE after the
dispatch wait while the other Flows of its type go on, retry back-off stays finite at any attempt
number, the periodic deadline check survives a failing pass, and SearchFlows bounds its query and parses it
without the engine lock. Runs in-process ``EngineServer``s
(with a short dispatch wait and policy second, or a manual clock) and the SDK's pull Worker."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import cast

import grpc
import pytest
from dex import (
    Attribute,
    Context,
    FlowStatus,
    PersistenceSchema,
    RetryPolicy,
    StartFlowOptions,
    Step,
    StepDecision,
    StepList,
    StepOptions,
    graceful_complete,
)
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from dex_agents.engine import policy
from dex_agents.engine.blobs import BLOB_THRESHOLD_BYTES
from dex_agents.engine.queries import MAX_QUERY_CHARS
from dex_agents.engine.server import EngineServer
from dex_agents.engine.timing import EngineTiming, ManualClock
from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow
from tests.engine.probes import POLICY_SECOND, eventually

WAIT = 10.0
DISPATCH_WAIT = 0.5
ONE_ATTEMPT = StepOptions(execute_retry=RetryPolicy(maximum_attempts=1))


class Echo(Step[str]):
    """Completes with the length of its input."""

    def get_step_options(self) -> StepOptions:
        return ONE_ATTEMPT

    def execute(self, context: Context, input: str) -> StepDecision:
        return graceful_complete(len(input))


class Fresh(Step[str]):
    """A Step type only the new deployment knows (the Worker below never registers it)."""

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=2))

    def execute(self, context: Context, input: str) -> StepDecision:
        return graceful_complete(0)


class OldFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Echo())


PIECES = [Attribute(f"Piece{index}", str) for index in range(40)]
PIECE = "p" * (policy.WORKER_TASK_LIMIT // 38)
"""Each piece stays under the blob threshold (it goes in the frame); together they exceed the frame limit."""


class ManyPiecesFlow(OldFlow):
    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(*PIECES)


def with_pieces() -> StartFlowOptions:
    options = StartFlowOptions()
    for piece in PIECES:
        options = options.with_attribute(piece, PIECE)
    return options


class NewFlow(NamedFlow[str]):
    """The same Flow type as :class:`OldFlow`, as a newer Client sees it."""

    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Fresh()).other_steps(Echo())


@pytest.fixture
def quick(tmp_path: Path) -> Iterator[EngineServer]:
    """An engine whose dispatch wait and policy seconds are short."""
    running = EngineServer(tmp_path / "quick.db",
                           timing=EngineTiming(dispatch_wait=DISPATCH_WAIT, policy_second=POLICY_SECOND))
    running.start()
    try:
        yield running
    finally:
        running.stop()


def test_a_task_too_large_for_the_worker_fails_its_attempt_and_others_go_on(
        dex: DexFixture, quick: EngineServer) -> None:
    assert len(PIECE) < BLOB_THRESHOLD_BYTES < policy.WORKER_TASK_LIMIT < len(PIECE) * len(PIECES)
    flow = ManyPiecesFlow(dex.flow_type())
    harness = dex.start(flow, address=quick.address)
    big, small = dex.flow_id("big"), dex.flow_id("small")
    harness.client.start_flow(flow, big, "x", with_pieces())
    harness.client.start_flow(flow, small, "ok")
    assert harness.result(small).single_output(int) == 2
    failed = harness.result(big)
    assert failed.status is FlowStatus.FAILED
    assert "exceeds the pull Worker's 4194304-byte message limit" in (failed.error_message or "")


def test_an_unknown_step_type_fails_with_no_worker_available_and_blocks_no_one(
        dex: DexFixture, quick: EngineServer) -> None:
    flow_type = dex.flow_type()
    old, new = OldFlow(flow_type), NewFlow(flow_type)
    harness = dex.start(old, address=quick.address)
    newer_client = dex.client(new, address=quick.address)
    rolled = dex.flow_id("rolled")
    newer_client.start_flow(new, rolled, "new")
    others = [dex.flow_id(f"old{i}") for i in range(5)]
    for flow_id in others:
        harness.client.start_flow(old, flow_id, flow_id)
    assert [harness.result(flow_id).single_output(int) for flow_id in others] == [len(f) for f in others]
    failed = harness.result(rolled)
    assert failed.status is FlowStatus.FAILED
    assert "NO_WORKER_AVAILABLE" in (failed.error_message or "") and "Fresh" in (failed.error_message or "")


@pytest.mark.parametrize("attempt", [1, 8, 1025, 5000, 10**9])
def test_default_backoff_is_finite_and_capped_at_any_attempt(attempt: int) -> None:
    delay = policy.next_retry_delay(pb.RetryPolicy(total_duration_seconds=10**9), attempt, 0.0, 0.0, 0)
    assert delay == min(2.0 ** (min(attempt, 100) - 1), policy.DEFAULT_MAX_INTERVAL)


def test_backoff_honours_maximum_interval_with_a_huge_coefficient() -> None:
    retry = pb.RetryPolicy(backoff_coefficient=1e30, maximum_interval_seconds=30, total_duration_seconds=10**9)
    assert policy.next_retry_delay(retry, 3, 0.0, 0.0, 0) == 30.0
    assert policy.next_retry_delay(retry, 2000, 0.0, 0.0, 0) == 30.0


def test_backoff_never_exceeds_a_year_whatever_the_policy() -> None:
    retry = pb.RetryPolicy(maximum_interval_seconds=2**31 - 1, total_duration_seconds=2**31 - 1)
    assert policy.next_retry_delay(retry, 200, 0.0, 0.0, 0) == policy.MAX_RETRY_DELAY
    assert policy.next_retry_delay(retry, 1, 0.0, 0.0, 2**31 - 1) == policy.MAX_RETRY_DELAY


def test_deadline_checks_go_on_after_a_failing_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks run on the engine's clock: a manual one moved a check interval at a time."""
    clock = ManualClock()
    server = EngineServer(tmp_path / "clocked.db", clock=clock)
    server.start()
    calls: list[int] = []
    checked_again = threading.Event()

    def flaky_check() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OverflowError("one Step's bookkeeping failed")
        checked_again.set()

    try:
        monkeypatch.setattr(server.engine.steps, "check_deadlines", flaky_check)
        interval = server.timing.deadline_check_interval

        def one_interval_later() -> bool:
            clock.advance(interval)
            return checked_again.is_set()

        eventually(one_interval_later, what="a deadline check after the failing one", timeout=WAIT)
        assert len(calls) >= 2, "method and heartbeat timeouts stopped after one failing check"
    finally:
        server.stop()


def test_search_queries_are_bounded_and_parsed_outside_the_engine_lock(own_engine: EngineServer,
                                                                       own_channel: grpc.Channel) -> None:
    stub = dex_pb2_grpc.FlowServiceStub(own_channel)
    with pytest.raises(grpc.RpcError) as raised:
        stub.SearchFlows(pb.SearchFlowsRequest(query="FlowId != 'x' AND " * 200_000), timeout=WAIT)
    error = cast(grpc.Call, raised.value)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"the limit is {MAX_QUERY_CHARS}" in (error.details() or "")
    with own_engine.engine.lock:  # a busy engine still refuses a bad query at once
        with pytest.raises(grpc.RpcError) as refused:
            stub.SearchFlows(pb.SearchFlowsRequest(query="FlowType ~~ nonsense"), timeout=WAIT)
    assert cast(grpc.Call, refused.value).code() == grpc.StatusCode.INVALID_ARGUMENT


def test_a_search_runs_without_the_engine_lock(own_engine: EngineServer, own_channel: grpc.Channel) -> None:
    """However many runs it scans, a search never makes other calls wait (and waits for none)."""
    stub = dex_pb2_grpc.FlowServiceStub(own_channel)
    for index in range(3):
        stub.StartFlow(pb.StartFlowRequest(flow_id=f"s{index}", flow_type="Searched", request_id=f"r{index}"))
    with own_engine.engine.lock:  # a busy engine still answers searches
        found = stub.SearchFlows(pb.SearchFlowsRequest(
            query="FlowType = 'Searched' AND FlowId != 's1'", page_size=1), timeout=WAIT)
        assert [entry.flow_id for entry in found.flow_runs] == ["s2"] and found.next_page_token
        rest = stub.SearchFlows(pb.SearchFlowsRequest(
            query="FlowType = 'Searched' AND FlowId != 's1'", page_size=1, next_page_token=found.next_page_token),
            timeout=WAIT)
    assert [entry.flow_id for entry in rest.flow_runs] == ["s0"] and not rest.next_page_token


def test_an_rpc_too_large_for_the_worker_is_refused_before_dispatch(own_engine: EngineServer,
                                                                    own_channel: grpc.Channel) -> None:
    stub = dex_pb2_grpc.FlowServiceStub(own_channel)
    stub.StartFlow(pb.StartFlowRequest(flow_id="f", flow_type="T", request_id="r"))
    stub.PublishToChannel(pb.PublishToChannelRequest(flow_id="f", messages=[
        pb.ChannelMessage(channel_name="C", value=pb.Value(string_value=PIECE)) for _ in PIECES]))
    big = pb.InvokeRPCRequest(flow_id="f", rpc_name="r", lock_attribute_keys=["K"], load_channel_names=["C"],
                              input=pb.Value(string_value="x"))
    with pytest.raises(grpc.RpcError) as raised:
        stub.InvokeRPC(big, timeout=WAIT)
    error = cast(grpc.Call, raised.value)
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "4194304-byte message limit" in (error.details() or "")
    assert not own_engine.engine.locks, "the RPC's lock keys are released"
