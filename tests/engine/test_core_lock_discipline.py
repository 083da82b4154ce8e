"""Engine core, the engine lock's discipline is checked: every method documented as running under
the engine lock raises ``EngineLockNotHeld`` when called without it (and runs with it), so a caller
that forgot the lock fails at once instead of racing. Runs an ``Engine`` over a store, no server."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from dex.dexpb import dex_pb2 as pb

from dex_agents.engine import recovery
from dex_agents.engine.core import EngineCore
from dex_agents.engine.engine import Engine
from dex_agents.engine.errors import ServiceError
from dex_agents.engine.flow_state import FlowStateQuery
from dex_agents.engine.lock_discipline import EngineLockNotHeld, assert_engine_lock_held
from dex_agents.engine.queries import Queries
from dex_agents.engine.rows import Effects
from dex_agents.engine.repository.store import Store
from tests.engine.test_core_dispatch import task

Call = Callable[[Engine], object]

# Each method, its call on an empty engine, and what that call does once the lock is held: ``None``
# when it runs cleanly, else the ``ServiceError`` text an empty engine answers with (so a method that
# fails for another reason under the lock fails this test too).
UNDER_THE_LOCK: dict[str, tuple[Call, str | None]] = {
    "Engine.apply": (lambda e: e.apply(Effects()), None),
    "Engine.release": (lambda e: e.release(1, "step:S-1"), None),
    "AttributeLocks.acquire": (lambda e: e.attribute_locks.acquire(1, ["K"], "step:S-1"), None),
    "LongPolls.wait_change": (lambda e: e.long_polls.wait_change(("state", 1), 0.0), None),
    "Dispatcher.submit": (lambda e: e.dispatcher.submit(task("a")), None),
    "StepOps.launch": (lambda e: e.steps.launch(1, "S-1"), None),
    "StepOps.check_deadlines": (lambda e: e.steps.check_deadlines(), None),
    "Outcomes.check_waits": (lambda e: e.steps.check_waits(1), None),
    "FlowOps.stop": (lambda e: e.flows.stop(pb.StopFlowRequest(flow_id="missing")),
                     "no active run of flow missing"),
    "FlowRpcOps.abort_all": (lambda e: e.flow_rpcs.abort_all(), None),
    "StreamOps.list": (lambda e: e.streams.list(pb.ListStreamMessagesRequest()),
                       "flow_type, stream_name and flow_id are required"),
    "Queries.summary": (lambda e: Queries(e).summary(pb.GetFlowSummaryRequest(flow_id="missing")),
                        "flow not found: missing"),
    "recovery.recover": (recovery.recover, None),
    "FlowOps.set_attributes": (lambda e: e.flows.set_attributes(pb.SetAttributesRequest(flow_id="missing")),
                               "no active run of flow missing"),
    "ResetOps.reset": (lambda e: e.resets.reset(pb.ResetFlowRequest(flow_id="missing")), "flow not found: missing"),
    "FlowStateQuery.get": (lambda e: FlowStateQuery(e).get(pb.GetFlowStateRequest(flow_id="missing")),
                           "flow not found: missing"),
}


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    store = Store(tmp_path / "engine.db")
    try:
        yield Engine(store)
    finally:
        store.close()


@pytest.mark.parametrize("name", sorted(UNDER_THE_LOCK))
def test_a_method_that_runs_under_the_engine_lock_refuses_to_run_without_it(engine: Engine, name: str) -> None:
    call, refusal = UNDER_THE_LOCK[name]
    with pytest.raises(EngineLockNotHeld):
        call(engine)
    with engine.lock:
        if refusal is None:
            call(engine)
        else:
            # An empty engine refuses the request itself (the lock check passed), with exactly this text.
            with pytest.raises(ServiceError, match=f"^{re.escape(refusal)}$"):
                call(engine)


def test_the_assertion_tells_owned_from_held_by_another_thread() -> None:
    lock = threading.RLock()
    with pytest.raises(EngineLockNotHeld):
        assert_engine_lock_held(lock)
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert taken.wait(10)
        with pytest.raises(EngineLockNotHeld):
            assert_engine_lock_held(lock)
    finally:
        release.set()
        holder.join()
    with lock, lock:
        assert_engine_lock_held(lock)


ADAPTERS = ("grpc_service", "worker_service", "server", "flow_rpcs", "recovery", "launch", "cli")
ENGINE_SOURCES = Path(__file__).resolve().parents[2] / "engine" / "dex_agents" / "engine"


def test_the_adapters_enter_the_engine_only_through_its_one_entry_point() -> None:
    """``EngineCore.locked()`` is the only way a gRPC handler, a stream reader or the server takes the
    engine lock (no module outside the core reaches for ``.lock`` itself)."""
    for name in ADAPTERS:
        text = (ENGINE_SOURCES / f"{name}.py").read_text(encoding="utf-8")
        assert not re.search(r"\.lock\b(?!ed\(\))", text), f"{name}.py takes the engine lock around locked()"


def test_the_core_is_wired_once_and_has_no_hooks_to_fill_in(tmp_path: Path) -> None:
    """The core's after-commit effects are performed by the operations given to ``EngineCore.wire``
    (once, in the top module), not by methods a subclass overrides."""
    core_source = (ENGINE_SOURCES / "core.py").read_text(encoding="utf-8")
    assert "NotImplementedError" not in core_source
    store = Store(tmp_path / "engine.sqlite3")
    try:
        engine = Engine(store)
        with pytest.raises(RuntimeError, match="wired already"):
            engine.wire(engine.steps, engine.flows)
        unwired = EngineCore(store)
        with unwired.lock, pytest.raises(RuntimeError, match="not wired"):
            unwired.apply(Effects(launches=[(1, "S-1")]))
    finally:
        store.close()

