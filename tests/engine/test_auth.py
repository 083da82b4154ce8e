"""Auth: with a token file configured, every request without the matching bearer credential is
rejected with UNAUTHENTICATED (SDK Client, raw stub, wrong token), and with the SDK's
``FileCredential`` the Client, the pull Worker, RPCs and history all work. Needs the local engine
configured with a token (skipped only with a real Dex)."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from dex import (
    Client,
    ClientOptions,
    Context,
    DexServiceError,
    FileCredential,
    FlowStatus,
    RPCResult,
    Step,
    StepDecision,
    StepList,
    graceful_complete,
    rpc,
)
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc
from google.protobuf import empty_pb2

from tests.engine.conftest import DexFixture, EngineEndpoint, launch_api, require_local_engine
from tests.engine.harness import NamedFlow


class Greet(Step[str]):
    def __init__(self, flow: SecureFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        return graceful_complete(f"hello {input}")


class SecureFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Greet(self))

    @rpc
    def ping(self, context: Context) -> RPCResult[str]:
        return RPCResult("pong")


def write_token(path: Path) -> Path:
    path.write_text(secrets.token_urlsafe(24) + "\n")
    return path


@pytest.fixture
def secured(engine: EngineEndpoint, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local engine requiring the token in the yielded token file."""
    require_local_engine(engine, "configuring the engine's token file")
    token_file = write_token(tmp_path / "token")
    with launch_api().start_engine(token_file=token_file) as running:
        yield running.address, token_file


def test_requests_without_the_credential_are_unauthenticated(dex: DexFixture, secured: tuple[str, Path],
                                                             tmp_path: Path) -> None:
    address, _ = secured
    flow = SecureFlow(dex.flow_type())
    anonymous = dex.client(flow, address=address)
    with pytest.raises(DexServiceError) as refused:
        anonymous.health_check()
    assert refused.value.code is grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(DexServiceError) as refused_start:
        anonymous.start_flow(flow, dex.flow_id(), "nobody")
    assert refused_start.value.code is grpc.StatusCode.UNAUTHENTICATED
    wrong = dex.client(flow, address=address, credential=FileCredential(write_token(tmp_path / "wrong")))
    with pytest.raises(DexServiceError) as refused_wrong:
        wrong.health_check()
    assert refused_wrong.value.code is grpc.StatusCode.UNAUTHENTICATED
    with grpc.insecure_channel(address) as channel:
        stub = dex_pb2_grpc.FlowServiceStub(channel)
        calls: list[Callable[[], object]] = [
                     lambda: stub.GetServerInfo(empty_pb2.Empty(), timeout=10),
                     lambda: stub.GetHistoryEvents(pb.GetHistoryEventsRequest(flow_id="x"), timeout=10),
                     lambda: stub.GetServerInfo(empty_pb2.Empty(), timeout=10,
                                                metadata=(("authorization", "Bearer not-the-token"),))]
        for call in calls:
            with pytest.raises(grpc.RpcError) as raw:
                call()
            assert raw.value.code() is grpc.StatusCode.UNAUTHENTICATED


def test_file_credential_serves_client_worker_rpc_and_history(dex: DexFixture,
                                                              secured: tuple[str, Path]) -> None:
    address, token_file = secured
    flow = SecureFlow(dex.flow_type())
    credential = FileCredential(token_file)
    harness = dex.start(flow, address=address, credential=credential)
    flow_id = dex.flow_id()
    assert harness.client.health_check() is True
    harness.client.start_flow(flow, flow_id, "friend")
    result = harness.result(flow_id)
    assert (result.status, result.single_output(str)) == (FlowStatus.COMPLETED, "hello friend")
    assert harness.client.invoke_rpc(flow.ping, flow_id) == "pong"
    assert harness.history(flow_id)[-1].HasField("flow_closed")
    with Client(harness.registry, harness.cache, ClientOptions(server_address=address)) as anonymous:
        with pytest.raises(DexServiceError) as refused:
            anonymous.describe_flow(flow_id)
        assert refused.value.code is grpc.StatusCode.UNAUTHENTICATED
