"""The bearer-token interceptor against the SDK's real credential transport.

A tiny gRPC server built from the SDK's generated servicers (HealthCheck and the pull-worker stream)
stands in for the engine, so these tests do not depend on the engine's services.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import dex
import grpc
import pytest
from dex.dexpb import dex_pb2, dex_pb2_grpc
from google.protobuf import empty_pb2

from dex_agents.engine.auth import (
    BearerTokenInterceptor,
    TokenFile,
    TokenFileError,
    check_authorization,
    read_token_file,
)


class _Health(dex_pb2_grpc.FlowServiceServicer):
    def HealthCheck(  # noqa: N802 - generated name
        self, request: empty_pb2.Empty, context: grpc.ServicerContext
    ) -> empty_pb2.Empty:
        return empty_pb2.Empty()


class _Poll(dex_pb2_grpc.WorkerTaskServiceServicer):
    def PollWorkerTask(  # noqa: N802 - generated name
        self, request_iterator: Iterator[dex_pb2.PollWorkerTaskRequest], context: grpc.ServicerContext
    ) -> Iterator[dex_pb2.PollWorkerTaskResponse]:
        for _ in request_iterator:
            yield dex_pb2.PollWorkerTaskResponse(registered=dex_pb2.PollWorkerTaskRegistered())
            return


@pytest.fixture
def token_path(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("  s3cret-token\n", encoding="utf-8")
    return path


@pytest.fixture
def address(token_path: Path) -> Iterator[str]:
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        interceptors=[BearerTokenInterceptor.from_path(token_path)],
    )
    dex_pb2_grpc.add_FlowServiceServicer_to_server(_Health(), server)
    dex_pb2_grpc.add_WorkerTaskServiceServicer_to_server(_Poll(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(None)


def _client(address: str, tmp_path: Path, credential: dex.Credential | None) -> dex.Client:
    cache = dex.open_blob_cache(dex.BlobCacheConfig(str(tmp_path / "blobs"), 1 << 20))
    return dex.Client(
        dex.Registry([]), cache, dex.ClientOptions(server_address=address, credential=credential)
    )


def _health(address: str, metadata: tuple[tuple[str, str], ...]) -> grpc.StatusCode:
    with grpc.insecure_channel(address) as channel:
        stub = dex_pb2_grpc.FlowServiceStub(channel)
        try:
            stub.HealthCheck(empty_pb2.Empty(), metadata=metadata, timeout=10)
        except grpc.RpcError as error:
            code: grpc.StatusCode = error.code()
            return code
    return grpc.StatusCode.OK


def test_sdk_client_with_file_credential_is_served(
    address: str, token_path: Path, tmp_path: Path
) -> None:
    client = _client(address, tmp_path, dex.FileCredential(token_path))
    try:
        assert client.health_check() is True
    finally:
        client.close()


def test_sdk_client_without_credential_is_unauthenticated(address: str, tmp_path: Path) -> None:
    client = _client(address, tmp_path, None)
    try:
        with pytest.raises(dex.DexServiceError) as raised:
            client.health_check()
    finally:
        client.close()
    assert raised.value.code == grpc.StatusCode.UNAUTHENTICATED
    assert "missing bearer credential" in raised.value.detail


def test_sdk_client_with_wrong_token_is_unauthenticated(address: str, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-token", encoding="utf-8")
    client = _client(address, tmp_path, dex.FileCredential(wrong))
    try:
        with pytest.raises(dex.DexServiceError) as raised:
            client.health_check()
    finally:
        client.close()
    assert raised.value.code == grpc.StatusCode.UNAUTHENTICATED
    assert "does not match" in raised.value.detail
    assert "s3cret-token" not in raised.value.detail


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ((("authorization", "Bearer s3cret-token"),), grpc.StatusCode.OK),
        ((("authorization", "bearer s3cret-token"),), grpc.StatusCode.OK),
        ((("authorization", "Basic s3cret-token"),), grpc.StatusCode.UNAUTHENTICATED),
        ((("authorization", "s3cret-token"),), grpc.StatusCode.UNAUTHENTICATED),
        ((("authorization", "Bearer "),), grpc.StatusCode.UNAUTHENTICATED),
        ((("authorization", "Bearer s3cret-token-and-more"),), grpc.StatusCode.UNAUTHENTICATED),
        ((("x-token", "Bearer s3cret-token"),), grpc.StatusCode.UNAUTHENTICATED),
        (
            (("authorization", "Bearer s3cret-token"), ("authorization", "Bearer other")),
            grpc.StatusCode.UNAUTHENTICATED,
        ),
    ],
)
def test_raw_metadata_shapes(
    address: str, metadata: tuple[tuple[str, str], ...], expected: grpc.StatusCode
) -> None:
    assert _health(address, metadata) == expected


def test_streaming_call_without_credential_is_unauthenticated(address: str) -> None:
    request = dex_pb2.PollWorkerTaskRequest(
        register=dex_pb2.PollWorkerTaskRegister(queue="q", app_worker_id="w")
    )
    with grpc.insecure_channel(address) as channel:
        stub = dex_pb2_grpc.WorkerTaskServiceStub(channel)
        with pytest.raises(grpc.RpcError) as raised:
            list(stub.PollWorkerTask(iter([request]), timeout=10))
        authorized = list(
            stub.PollWorkerTask(
                iter([request]), metadata=(("authorization", "Bearer s3cret-token"),), timeout=10
            )
        )
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert len(authorized) == 1 and authorized[0].HasField("registered")


def test_rotated_token_file_takes_effect(address: str, token_path: Path) -> None:
    token_path.write_text("rotated-token-longer\n", encoding="utf-8")
    deadline = time.monotonic() + 10
    while _health(address, (("authorization", "Bearer rotated-token-longer"),)) != grpc.StatusCode.OK:
        assert time.monotonic() < deadline, "rotation never took effect"
        time.sleep(0.2)
    assert _health(address, (("authorization", "Bearer s3cret-token"),)) == (
        grpc.StatusCode.UNAUTHENTICATED
    )


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_token_file_fails_closed_when_removed_and_recovers(token_path: Path) -> None:
    clock = _Clock()
    token_file = TokenFile(token_path, clock=clock)
    assert token_file.current() == "s3cret-token"
    os.remove(token_path)
    assert token_file.current() == "s3cret-token", "re-checked at most once per second"
    clock.now = 1.5
    failure = token_file.current()
    assert isinstance(failure, TokenFileError)
    message = check_authorization((("authorization", "Bearer s3cret-token"),), failure)
    assert message is not None and "does not exist" in message
    token_path.write_text("back", encoding="utf-8")
    clock.now = 3.0
    assert token_file.current() == "back"


@pytest.mark.parametrize(
    ("content", "needle"),
    [(b"   \n", "is empty"), (b"\xff\xfe\xfa", "not valid UTF-8")],
)
def test_unusable_token_file_is_a_clear_error(tmp_path: Path, content: bytes, needle: str) -> None:
    path = tmp_path / "token"
    path.write_bytes(content)
    with pytest.raises(TokenFileError, match=needle):
        TokenFile(path)


def test_missing_token_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TokenFileError, match="does not exist"):
        read_token_file(tmp_path / "absent")
    with pytest.raises(TokenFileError, match="is a directory"):
        read_token_file(tmp_path)
