"""Engine core, long polls and threads: a client that gives up frees its waiter at once, a commit
wakes only the waiters of the run it touched, server-side waits are capped, long polls and worker
streams have their own bounds (one more is refused, short calls still answer), and a worker stream
that never sends its first frame is cancelled. Runs an in-process ``EngineServer``; time limits are
injected, and the tests wait on events."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
from google.protobuf import empty_pb2

from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from dex_agents.engine import grpc_service, worker_service
from dex_agents.engine.long_polls import Admission as LongPollAdmission, LongPolls
from dex_agents.engine.server import EngineServer
from dex_agents.engine.timing import EngineTiming
from tests.engine.probes import eventually

EVENT_SECONDS = 10.0
"""How long a test waits for an event that should follow at once (the engine's own waits are 60 s)."""


class WaitProbe:
    """Counts long-poll waits entering and leaving ``LongPolls.wait_change``."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.entered = 0
        self.left = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        original = LongPolls.wait_change
        probe = self

        def wait_change(polls: LongPolls, *args: Any, **kwargs: Any) -> None:
            with probe.lock:
                probe.entered += 1
                probe.lock.notify_all()
            try:
                original(polls, *args, **kwargs)
            finally:
                with probe.lock:
                    probe.left += 1
                    probe.lock.notify_all()

        monkeypatch.setattr(LongPolls, "wait_change", wait_change)

    def until(self, *, entered: int = 0, left: int = 0) -> bool:
        """Wait until at least that many waits entered and left; False on timeout."""
        with self.lock:
            return self.lock.wait_for(lambda: self.entered >= entered and self.left >= left, EVENT_SECONDS)


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> WaitProbe:
    waits = WaitProbe()
    waits.install(monkeypatch)
    return waits


SHORT_LIMITS = EngineTiming(long_poll_cap=0.05, first_frame_timeout=0.05)
"""Server-side long-poll cap and first-frame timeout short enough to expire within a test."""


@pytest.fixture
def timing() -> EngineTiming:
    return EngineTiming()


@pytest.fixture
def server(tmp_path: Path, timing: EngineTiming) -> Iterator[EngineServer]:
    engine = EngineServer(tmp_path / "engine.db", timing=timing)
    engine.start()
    try:
        yield engine
    finally:
        engine.stop(grace=0)


@pytest.fixture
def channel(server: EngineServer) -> Iterator[grpc.Channel]:
    opened = grpc.insecure_channel(server.address)
    try:
        yield opened
    finally:
        opened.close()


def flows(channel: grpc.Channel) -> dex_pb2_grpc.FlowServiceStub:
    return dex_pb2_grpc.FlowServiceStub(channel)


def start(stub: dex_pb2_grpc.FlowServiceStub, flow_id: str) -> None:
    stub.StartFlow(pb.StartFlowRequest(flow_id=flow_id, flow_type="T", request_id=f"r-{flow_id}"))


def code_and_detail(future: Any) -> tuple[grpc.StatusCode, str]:
    error = future.exception(timeout=EVENT_SECONDS + 20)
    assert error is not None, "the call succeeded"
    call = cast(grpc.Call, error)
    return call.code(), call.details() or ""


def test_a_wait_whose_client_cancels_is_freed_at_once(channel: grpc.Channel, probe: WaitProbe) -> None:
    stub = flows(channel)
    start(stub, "f")
    waiting = stub.WaitForFlow.future(pb.WaitForFlowRequest(flow_id="f", wait_time_seconds=60))
    assert probe.until(entered=1), "the wait never started"
    waiting.cancel()
    assert probe.until(left=1), "the abandoned wait still holds its server thread"


def test_a_commit_wakes_only_the_waits_it_concerns(channel: grpc.Channel, probe: WaitProbe) -> None:
    stub = flows(channel)
    start(stub, "watched")
    start(stub, "busy")
    match = pb.AttributeMatch(key="K", operator=pb.ATTRIBUTE_MATCH_OPERATOR_EQUAL, operand=pb.Value(string_value="x"))
    waiting = stub.WaitForAttribute.future(pb.WaitForAttributeRequest(
        flow_id="watched", match=match, request_timeout_seconds=60), timeout=EVENT_SECONDS + 20)
    assert probe.until(entered=1)
    for i in range(10):  # commits of another run, and of the same run that leave the Attribute alone
        for flow_id in ("busy", "watched"):
            stub.PublishToChannel(pb.PublishToChannelRequest(flow_id=flow_id, messages=[
                pb.ChannelMessage(channel_name="C", message_id=f"m{i}", value=pb.Value(int_value=i))]))
    stub.StopFlow(pb.StopFlowRequest(flow_id="watched"))
    code, _ = code_and_detail(waiting)
    assert code == grpc.StatusCode.NOT_FOUND, "the run's close must end the wait"
    with probe.lock:
        assert probe.entered == 1, f"the wait woke {probe.entered - 1} times for commits that did not concern it"


def test_streams_waiting_for_their_first_frame_are_bounded_apart(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(worker_service, "MAX_UNREGISTERED_STREAMS", 1)
    engine = EngineServer(tmp_path / "bounded.db")
    engine.start()
    opened = grpc.insecure_channel(engine.address)
    release = threading.Event()
    stub = dex_pb2_grpc.WorkerTaskServiceStub(opened)
    worker = stub.PollWorkerTask(registering("w", release), timeout=EVENT_SECONDS)
    assert next(worker).WhichOneof("frame") == "registered"
    calls = [stub.PollWorkerTask(silent(release), timeout=EVENT_SECONDS) for _ in range(2)]
    ended = threading.Event()
    try:
        for call in calls:
            call.add_done_callback(lambda _: ended.set())
        assert ended.wait(EVENT_SECONDS), "neither silent stream was refused"
        refused = [call for call in calls if call.done()]
        assert len(refused) == 1
        code, detail = refused[0].code(), refused[0].details() or ""
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "first frame" in detail, (code, detail)
    finally:
        release.set()
        for call in calls:
            call.cancel()
        worker.cancel()
        opened.close()
        engine.stop(grace=0)


@pytest.mark.parametrize("timing", [SHORT_LIMITS])
def test_a_long_wait_is_capped_server_side(channel: grpc.Channel) -> None:
    stub = flows(channel)
    start(stub, "f")
    waiting = stub.WaitForFlow.future(pb.WaitForFlowRequest(flow_id="f", wait_time_seconds=3600),
                                      timeout=EVENT_SECONDS)
    code, detail = code_and_detail(waiting)
    assert (code, detail) == (grpc.StatusCode.DEADLINE_EXCEEDED, "flow f is still running"), \
        "the server waited past its cap (the client's deadline ended the call)"


def test_long_polls_beyond_their_bound_are_refused_while_short_calls_answer(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, probe: WaitProbe) -> None:
    monkeypatch.setattr(grpc_service, "MAX_LONG_POLLS", 3)
    engine = EngineServer(tmp_path / "bounded.db")
    engine.start()
    opened = grpc.insecure_channel(engine.address)
    try:
        stub = flows(opened)
        start(stub, "f")
        held = [stub.WaitForFlow.future(pb.WaitForFlowRequest(flow_id="f", wait_time_seconds=60)) for _ in range(3)]
        assert probe.until(entered=3)
        extra = stub.WaitForFlow.future(pb.WaitForFlowRequest(flow_id="f", wait_time_seconds=60),
                                        timeout=EVENT_SECONDS)
        code, detail = code_and_detail(extra)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "long polls" in detail, (code, detail)
        assert stub.HealthCheck(empty_pb2.Empty(), timeout=EVENT_SECONDS).condition == "OK"
        for call in held:
            call.cancel()
        assert probe.until(left=3)
    finally:
        opened.close()
        engine.stop(grace=0)


def test_a_flood_of_long_polls_from_one_client_does_not_refuse_another_clients_wait(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, probe: WaitProbe) -> None:
    """At the bound, a client with fewer polls takes the oldest place of the client holding the most
    (that poll ends with LONG_POLL_TIME_OUT); the flooder's next poll is refused."""
    monkeypatch.setattr(grpc_service, "MAX_LONG_POLLS", 4)
    engine = EngineServer(tmp_path / "fair.db")
    engine.start()
    own_connection = [("grpc.use_local_subchannel_pool", 1)]  # a client of its own (another peer)
    flooder, application = (grpc.insecure_channel(engine.address, options=own_connection) for _ in range(2))
    try:
        flood, app = flows(flooder), flows(application)
        start(app, "f")
        waits = [flood.WaitForFlow.future(pb.WaitForFlowRequest(flow_id="f", wait_time_seconds=60)) for _ in range(4)]
        assert probe.until(entered=4)
        own = app.WaitForFlow.future(pb.WaitForFlowRequest(flow_id="f", wait_time_seconds=60), timeout=EVENT_SECONDS)
        assert probe.until(entered=5), "the application's wait was admitted"
        ended = eventually(lambda: [call for call in waits if call.done()] or None, what="a flooder's poll to give its place",
                           timeout=EVENT_SECONDS)
        assert len(ended) == 1, "exactly one of the flooder's polls (its oldest) gave its place"
        code, detail = code_and_detail(ended[0])
        assert code == grpc.StatusCode.DEADLINE_EXCEEDED and "gave its place" in detail, (code, detail)
        refused = flood.WaitForFlow.future(pb.WaitForFlowRequest(flow_id="f", wait_time_seconds=60),
                                           timeout=EVENT_SECONDS)
        code, detail = code_and_detail(refused)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "long polls" in detail, (code, detail)
        app.StopFlow(pb.StopFlowRequest(flow_id="f"), timeout=EVENT_SECONDS)
        assert own.result(timeout=EVENT_SECONDS).flow_status == pb.FLOW_STATUS_CANCELED
        for call in waits:
            call.cancel()
    finally:
        flooder.close()
        application.close()
        engine.stop(grace=0)


def test_fair_admission_takes_places_only_from_a_heavier_client() -> None:
    preempted: list[str] = []
    admission = LongPollAdmission(3)
    first = [admission.admit("a", lambda: preempted.append("a")) for _ in range(2)]
    assert admission.admit("b", lambda: preempted.append("b")) is not None
    assert admission.admit("a", lambda: None) is None, "a holds the most: no one lighter to take from"
    assert admission.admit("b", lambda: None) is None, "b (1) may not take from a (2): they would be even"
    assert admission.admit("c", lambda: preempted.append("c")) is not None
    assert preempted == ["a"] and first[0] is not None and first[0].preempted, "a's oldest poll gave its place"
    assert (admission.held("a"), admission.held("b"), admission.held("c")) == (1, 1, 1)
    for ticket in first:
        assert ticket is not None
        admission.release(ticket)
    assert admission.held("a") == 0


def silent(release: threading.Event) -> Iterator[pb.PollWorkerTaskRequest]:
    """A worker stream's requests that send nothing until released."""
    while not release.wait():
        yield pb.PollWorkerTaskRequest()  # pragma: no cover - never reached


def registering(worker: str, release: threading.Event) -> Iterator[pb.PollWorkerTaskRequest]:
    """A worker stream's requests: register, then nothing until released."""
    yield pb.PollWorkerTaskRequest(register=pb.PollWorkerTaskRegister(queue="Q", app_worker_id=worker))
    release.wait()


@pytest.mark.parametrize("timing", [SHORT_LIMITS])
def test_a_worker_stream_without_a_first_frame_is_cancelled(channel: grpc.Channel) -> None:
    release = threading.Event()
    stub = dex_pb2_grpc.WorkerTaskServiceStub(channel)
    stream = stub.PollWorkerTask(silent(release), timeout=EVENT_SECONDS)
    try:
        with pytest.raises(grpc.RpcError) as raised:
            next(stream)
        assert cast(grpc.Call, raised.value).code() == grpc.StatusCode.CANCELLED, \
            "the silent stream was kept until the client's own deadline"
    finally:
        release.set()
        stream.cancel()


def test_worker_streams_beyond_their_bound_are_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(worker_service, "MAX_STREAMS", 2)
    engine = EngineServer(tmp_path / "bounded.db")
    engine.start()
    opened = grpc.insecure_channel(engine.address)
    release = threading.Event()
    stub = dex_pb2_grpc.WorkerTaskServiceStub(opened)
    held = [stub.PollWorkerTask(registering(f"w{i}", release)) for i in range(2)]
    try:
        for stream in held:
            assert next(stream).WhichOneof("frame") == "registered"
        extra = stub.PollWorkerTask(silent(release), timeout=EVENT_SECONDS)
        with pytest.raises(grpc.RpcError) as raised:
            next(extra)
        assert cast(grpc.Call, raised.value).code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert flows(opened).HealthCheck(empty_pb2.Empty(), timeout=EVENT_SECONDS).condition == "OK"
    finally:
        release.set()
        for stream in held:
            stream.cancel()
        opened.close()
        engine.stop(grace=0)
