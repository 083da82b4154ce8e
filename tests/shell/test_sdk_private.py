"""The SDK internals in ``sdk_private``: pinned to the installed version, and the pull Worker's stream
registrations reuse one version lookup with the SDK's own answer."""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from pytest import MonkeyPatch

import dex._pull_worker as pull_worker
import dex._server_protocol as server_protocol
from dex import BlobCacheConfig, open_blob_cache

import dex_agents.shell as dex_agents_shell
from dex_agents.shell.sdk_private import (
    PINNED_SDK_VERSION,
    AsyncCredentialRunner,
    AsyncValueHydrator,
    ValueHydrator,
    ValueMapper,
    async_channel,
    check_pinned_sdk,
    installed_sdk_version,
    memoize_sdk_version,
    sync_channel,
    translate_rpc_error,
)
from dex_agents.shell.worker import session_registry, session_worker


def _registered_lookup() -> Any:
    """The function the pull Worker calls for its registrations."""
    return vars(pull_worker)["sdk_version"]


def test_memoized_version_is_the_sdks_answer_and_is_computed_once() -> None:
    assert memoize_sdk_version()
    memoized = _registered_lookup()
    assert isinstance(memoized, functools._lru_cache_wrapper)
    assert memoized() == server_protocol.sdk_version()
    before = memoized.cache_info()
    memoized()
    memoized()
    after = memoized.cache_info()
    assert after.misses == before.misses
    assert after.hits == before.hits + 2


def test_memoizing_twice_keeps_one_wrapper() -> None:
    assert memoize_sdk_version()
    first = _registered_lookup()
    assert memoize_sdk_version()
    assert _registered_lookup() is first


def test_a_missing_private_name_changes_nothing(monkeypatch: MonkeyPatch) -> None:
    monkeypatch.delattr(pull_worker, "sdk_version")
    assert not memoize_sdk_version()
    assert "sdk_version" not in vars(pull_worker)


def test_building_a_session_worker_memoizes(monkeypatch: MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(pull_worker, "sdk_version", server_protocol.sdk_version)
    cache = open_blob_cache(BlobCacheConfig(str(tmp_path / "blobs"), 1 << 20))

    async def build_and_close() -> None:  # an AsyncWorker binds its channel to the running loop
        worker = session_worker(session_registry([]), cache, "127.0.0.1:1")
        await worker.close()

    try:
        asyncio.run(build_and_close())
    finally:
        cache.close()
    assert isinstance(_registered_lookup(), functools._lru_cache_wrapper)


def test_the_installed_sdk_is_the_version_whose_internals_are_read() -> None:
    assert check_pinned_sdk(), f"dex-python-sdk {installed_sdk_version()} is installed; sdk_private reads " \
        f"{PINNED_SDK_VERSION}'s internals: check each accessor against the new version, then move the pin"


def test_every_internal_the_session_reads_is_where_sdk_private_looks() -> None:
    from dex._async_worker_dispatcher import _AsyncStepOutputEmitter
    from dex._invocation_context import InvocationContext

    assert isinstance(_AsyncStepOutputEmitter().queue, asyncio.Queue)
    assert "self._output_emitter = output_emitter" in inspect.getsource(InvocationContext.__init__)
    assert callable(vars(pull_worker)["sdk_version"])
    found = {thing.__name__: thing.__module__ for thing in (sync_channel, async_channel, AsyncCredentialRunner,
                                                            ValueHydrator, AsyncValueHydrator, ValueMapper,
                                                            translate_rpc_error)}
    assert found == {"sync_channel": "dex._credential_transport", "async_channel": "dex._credential_transport",
                     "AsyncCredentialRunner": "dex._credential_transport", "ValueHydrator": "dex._value_hydrator",
                     "AsyncValueHydrator": "dex._async_value_hydrator", "ValueMapper": "dex._value_mapper",
                     "translate_rpc_error": "dex._grpc_errors"}


def test_no_module_but_sdk_private_touches_sdk_internals() -> None:
    root = Path(dex_agents_shell.__file__).resolve().parents[1]
    touching = sorted(str(path.relative_to(root)) for path in root.rglob("*.py")
                      if re.search(r"^\s*(from|import) dex\._", path.read_text(encoding="utf-8"), re.MULTILINE))
    assert touching == ["shell/sdk_private.py"]


def test_a_retry_after_survives_being_raised_through_a_context_manager() -> None:
    """``dex.retry_after`` gives a frozen dataclass exception: a context manager that sets its
    ``__traceback__`` fails with ``FrozenInstanceError`` and the delay is lost; ours travels."""
    import contextlib
    import dataclasses

    import dex
    import pytest

    from dex_agents.shell.sdk_private import raisable_retry_after

    @contextlib.contextmanager
    def around() -> Iterator[None]:
        yield

    def raise_through(error: BaseException) -> BaseException:
        try:
            with around():
                raise error
        except BaseException as caught:  # noqa: BLE001 - what came out is the point
            return caught
        raise AssertionError("nothing was raised")

    cause = RuntimeError("429 Too Many Requests")
    assert isinstance(raise_through(dex.retry_after(3, cause)), dataclasses.FrozenInstanceError)
    travelled = raise_through(raisable_retry_after(3, cause))
    assert isinstance(travelled, dex.RetryAfterError) and travelled.after_seconds == 3 and travelled.cause is cause
    with pytest.raises(ValueError, match="positive"):
        raisable_retry_after(0, cause)
