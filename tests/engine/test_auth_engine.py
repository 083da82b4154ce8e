"""The engine with a token file: the SDK's ``FileCredential`` is served, anything else refused."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import dex
import grpc
import pytest

from dex_agents.engine import start_engine
from dex_agents.engine.auth import TokenFileError


def _client(address: str, tmp_path: Path, credential: dex.Credential | None) -> dex.Client:
    cache = dex.open_blob_cache(dex.BlobCacheConfig(str(tmp_path / "blobs"), 1 << 20))
    return dex.Client(
        dex.Registry([]), cache, dex.ClientOptions(server_address=address, credential=credential)
    )


@pytest.mark.parametrize("in_process", [True, False])
def test_file_credential_is_served_and_missing_or_wrong_is_refused(
    tmp_path: Path, in_process: bool
) -> None:
    token = tmp_path / "token"
    token.write_text("engine-token-1\n", encoding="utf-8")
    wrong = tmp_path / "wrong"
    wrong.write_text("engine-token-2", encoding="utf-8")
    with start_engine(token_file=token, in_process=in_process) as engine:
        good = _client(engine.address, tmp_path, dex.FileCredential(token))
        try:
            assert good.health_check()
        finally:
            good.close()
        for credential in (None, dex.FileCredential(wrong)):
            refused = _client(engine.address, tmp_path, credential)
            try:
                with pytest.raises(dex.DexServiceError) as raised:
                    refused.health_check()
            finally:
                refused.close()
            assert raised.value.code == grpc.StatusCode.UNAUTHENTICATED
            assert "engine-token-1" not in raised.value.detail


def test_pull_worker_without_credential_cannot_register(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("engine-token-1", encoding="utf-8")

    class Only(dex.Step[None]):
        def execute(self, context: dex.Context, input: None) -> dex.StepDecision:
            return dex.dead_end()

    class AuthProbe(dex.Flow[None]):
        def get_steps(self) -> dex.StepList[None]:
            return dex.StepList.start_step(Only())

    registry = dex.Registry([AuthProbe()])
    cache = dex.open_blob_cache(dex.BlobCacheConfig(str(tmp_path / "blobs"), 1 << 20))
    with start_engine(token_file=token) as engine:
        for credential, registers in ((dex.FileCredential(token), True), (None, False)):
            worker = dex.Worker(
                registry,
                cache,
                dex.WorkerOptions(
                    server_address=engine.address,
                    pull=dex.PullWorkerOptions(max_concurrent_tasks=2),
                    credential=credential,
                ),
            )
            try:
                if registers:
                    thread = threading.Thread(target=worker.start, daemon=True)
                    thread.start()
                    worker.wait_pull_registered(timeout=20)
                    worker.stop()
                    thread.join(timeout=30)
                else:
                    with pytest.raises(RuntimeError, match="UNAUTHENTICATED"):
                        worker.start()
            finally:
                worker.close()
    cache.close()


def test_unusable_token_file_fails_in_process_start(tmp_path: Path) -> None:
    with pytest.raises(TokenFileError, match="does not exist"):
        with start_engine(token_file=tmp_path / "absent"):
            pass


def test_async_client_file_credential_is_served_and_none_refused(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("async-token", encoding="utf-8")
    cache = dex.open_blob_cache(dex.BlobCacheConfig(str(tmp_path / "blobs"), 1 << 20))

    async def probe(address: str, credential: dex.Credential | None) -> bool:
        client = dex.AsyncClient(
            dex.Registry([]), cache, dex.ClientOptions(server_address=address, credential=credential)
        )
        try:
            return await client.health_check()
        finally:
            await client.close()

    with start_engine(token_file=token) as engine:
        assert asyncio.run(probe(engine.address, dex.FileCredential(token)))
        with pytest.raises(dex.DexServiceError) as raised:
            asyncio.run(probe(engine.address, None))
    cache.close()
    assert raised.value.code == grpc.StatusCode.UNAUTHENTICATED
