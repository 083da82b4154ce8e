"""Unit tests of the generic helpers in ``dex_agents.testing``: ports, polling, file gates and
invocation logs across processes, the private engine, killable Worker children and Step history."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dex
import pytest
from dex import Context, StartFlowOptions, Step, StepDecision, graceful_complete
from dex.dexpb import dex_pb2 as pb

from dex_agents.testing import (
    DEX_SERVER_ADDRESS_ENV,
    EXECUTE_COMPLETED,
    EXECUTE_FAILED,
    RPC_COMPLETED,
    WORKER_READY_LINE,
    FileGate,
    InvocationLog,
    KillableWorkerProcess,
    PrivateDexEngine,
    WorkerStartError,
    completed_step_types,
    find_free_loopback_ports,
    poll_until,
    read_step_history,
)
from dex_agents.testing.step_history import history_entry
from tests.engine.harness import NamedFlow, SingleStepFlow, open_harness, unique_name

REPO_ROOT = Path(__file__).resolve().parents[2]
CHILD_SECONDS = 30.0


class FakeClock:
    """A monotonic clock that only ``sleep`` advances."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def is_gone(pid: int) -> bool:
    """Whether ``pid`` names no live process (a zombie awaiting its reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def run_python(code: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.DEVNULL)


def engine_is_healthy(address: str, tmp_path: Path) -> bool:
    cache = dex.open_blob_cache(dex.BlobCacheConfig(str(tmp_path / "blobs"), 1 << 20))
    client = dex.Client(dex.Registry([]), cache, dex.ClientOptions(server_address=address))
    try:
        return client.health_check()
    finally:
        client.close()
        cache.close()


def refuses_connections(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


# ports


def test_free_loopback_ports_are_distinct_and_bindable() -> None:
    ports = find_free_loopback_ports(5)
    assert len(ports) == len(set(ports)) == 5
    for port in ports:
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", port))
    assert find_free_loopback_ports(0) == ()
    with pytest.raises(ValueError):
        find_free_loopback_ports(-1)


# polling


def test_poll_until_returns_the_first_value_other_than_none() -> None:
    clock = FakeClock()
    results = iter([None, None, 0, 7])
    assert poll_until(lambda: next(results), interval=0.5, sleep=clock.sleep, monotonic=clock.monotonic) == 0
    assert clock.sleeps == [0.5, 0.5]


def test_poll_until_retries_a_raising_probe() -> None:
    clock = FakeClock()
    calls: list[int] = []

    def probe() -> str | None:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("not yet")
        return "up"

    assert poll_until(probe, sleep=clock.sleep, monotonic=clock.monotonic) == "up"


def test_poll_until_times_out_naming_the_wait_and_the_last_value() -> None:
    clock = FakeClock()
    with pytest.raises(TimeoutError, match=r"after 2 s waiting for the answer; the last probe returned None"):
        poll_until(lambda: None, timeout=2.0, interval=0.3, description="the answer",
                   sleep=clock.sleep, monotonic=clock.monotonic)
    assert clock.now == pytest.approx(102.0)
    assert clock.sleeps[-1] == pytest.approx(0.2)  # never sleeps past the deadline


def test_poll_until_times_out_with_the_last_exception_as_cause() -> None:
    clock = FakeClock()

    def probe() -> None:
        raise KeyError("missing")

    with pytest.raises(TimeoutError, match=r"raised KeyError\('missing'\)") as caught:
        poll_until(probe, timeout=0.0, sleep=clock.sleep, monotonic=clock.monotonic)
    assert isinstance(caught.value.__cause__, KeyError)
    assert clock.sleeps == []  # a zero timeout still probes once, and never sleeps


# FileGate and InvocationLog

GATE_CHILD = """
import sys
from pathlib import Path
from dex_agents.testing import FileGate
FileGate(Path(sys.argv[1]), "tool").mark_reached(timeout=30.0)
"""


def test_file_gate_pauses_a_child_process_until_released(tmp_path: Path) -> None:
    gate = FileGate(tmp_path / "gates", "tool")
    child = run_python(GATE_CHILD, str(tmp_path / "gates"))
    try:
        gate.wait_until_reached(timeout=CHILD_SECONDS)
        assert gate.is_reached()
        assert child.poll() is None  # still held at the gate
        gate.release()
        assert child.wait(CHILD_SECONDS) == 0
    finally:
        child.kill()
        child.wait()


def test_file_gate_async_waits_for_release_and_reset_closes_it(tmp_path: Path) -> None:
    gate = FileGate(tmp_path, "model")

    async def scenario() -> None:
        waiter = asyncio.create_task(gate.mark_reached_async(timeout=CHILD_SECONDS))
        while not gate.is_reached():
            await asyncio.sleep(0.001)
        assert not waiter.done()
        gate.release()
        await asyncio.wait_for(waiter, CHILD_SECONDS)

    asyncio.run(scenario())
    gate.mark_reached()  # a released gate stays released
    gate.reset()
    assert not gate.is_reached()
    with pytest.raises(TimeoutError, match="'model' was not released"):
        gate.mark_reached(timeout=0.0)
    assert gate.is_reached()
    with pytest.raises(TimeoutError, match="gate 'other' to be reached"):
        FileGate(tmp_path, "other").wait_until_reached(timeout=0.0)


def test_coordination_names_must_be_plain_file_names(tmp_path: Path) -> None:
    for name in ["", "..", "a/b"]:
        with pytest.raises(ValueError):
            FileGate(tmp_path, name)
        with pytest.raises(ValueError):
            InvocationLog(tmp_path, name)


LOG_CHILD = """
import sys
from pathlib import Path
from dex_agents.testing import InvocationLog
log = InvocationLog(Path(sys.argv[1]), "tools")
for index in range(200):
    log.record(f"{sys.argv[2]} {index}")
"""


def test_invocation_log_counts_entries_from_two_processes(tmp_path: Path) -> None:
    log = InvocationLog(tmp_path / "logs", "tools")
    assert log.entries() == [] and log.count() == 0
    children = [run_python(LOG_CHILD, str(tmp_path / "logs"), name) for name in ["charge", "refund"]]
    try:
        assert [child.wait(CHILD_SECONDS) for child in children] == [0, 0]
    finally:
        for child in children:
            child.kill()
            child.wait()
    log.record("charge 0")
    assert log.count() == 401
    assert log.count("charge 0") == 2
    assert log.count("refund 199") == 1
    for name in ["charge", "refund"]:  # every line intact, each writer's lines in its order
        assert [entry for entry in log.entries() if entry.startswith(name)][:200] == [
            f"{name} {index}" for index in range(200)]
    with pytest.raises(ValueError):
        log.record("two\nlines")


# PrivateDexEngine


def test_private_engine_kill_restart_and_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEX_SERVER_ADDRESS_ENV, raising=False)
    with PrivateDexEngine.start() as engine:
        state_directory = engine.state_directory
        address = engine.server_address
        assert engine.is_local and state_directory.is_dir()
        assert engine_is_healthy(address, tmp_path / "first")
        engine.kill()
        assert refuses_connections(address)
        engine.restart()
        assert engine.server_address == address
        assert engine_is_healthy(address, tmp_path / "second")
        assert engine.log_path is not None and engine.log_path.is_file()
    assert not state_directory.exists()
    assert refuses_connections(address)
    engine.stop()  # idempotent
    with pytest.raises(RuntimeError, match="stopped"):
        engine.restart()


def test_private_engine_uses_a_real_server_when_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEX_SERVER_ADDRESS_ENV, " 127.0.0.1:9 ")
    engine = PrivateDexEngine.start()
    try:
        assert engine.server_address == "127.0.0.1:9"
        assert not engine.is_local and engine.log_path is None
        assert engine.state_directory.is_dir()
        with pytest.raises(RuntimeError, match="real Dex server"):
            engine.kill()
        with pytest.raises(RuntimeError, match="real Dex server"):
            engine.restart()
    finally:
        engine.stop()
    assert not engine.state_directory.exists()


# KillableWorkerProcess


def start_child(tmp_path: Path, mode: str, *, log_name: str = "worker.log",
                ready_timeout: float = CHILD_SECONDS) -> KillableWorkerProcess:
    return KillableWorkerProcess.start(
        entry_module="tests.shell.ready_child", server_address="127.0.0.1:1", log_path=tmp_path / log_name,
        environment={"READY_CHILD_MODE": mode, "READY_CHILD_EXTRA": "passed"}, ready_timeout=ready_timeout,
        working_directory=REPO_ROOT)


@pytest.fixture
def children() -> Iterator[list[KillableWorkerProcess]]:
    started: list[KillableWorkerProcess] = []
    yield started
    for child in started:
        child.kill()


def test_kill_sigkills_the_whole_group(tmp_path: Path, children: list[KillableWorkerProcess]) -> None:
    child = start_child(tmp_path, "grandchild")
    children.append(child)
    log = child.log_path.read_text()
    assert "server address 127.0.0.1:1\n" in log and "extra passed\n" in log
    assert WORKER_READY_LINE in log
    grandchild = int(log.split("grandchild ")[1].split()[0])
    status_while_running = child.returncode
    assert status_while_running is None
    child.kill()
    assert child.returncode == -9
    assert is_gone(child.pid)
    poll_until(lambda: True if is_gone(grandchild) else None, timeout=CHILD_SECONDS,
               description="the grandchild to be gone")
    child.kill()  # idempotent


def test_stop_lets_the_child_exit_gracefully(tmp_path: Path, children: list[KillableWorkerProcess]) -> None:
    child = start_child(tmp_path, "ready")
    children.append(child)
    child.stop()
    assert child.returncode == 0
    assert "stopping on SIGTERM" in child.log_path.read_text()
    assert is_gone(child.pid)


def test_stop_sigkills_a_child_that_ignores_sigterm(tmp_path: Path, children: list[KillableWorkerProcess]) -> None:
    child = start_child(tmp_path, "ignore-sigterm")
    children.append(child)
    child.stop(grace=0.05)
    assert child.returncode == -9


def test_start_fails_with_the_log_tail_when_the_child_exits_early(tmp_path: Path) -> None:
    with pytest.raises(WorkerStartError, match=r"(?s)exited with status 3 before it was ready.*exiting before ready"):
        start_child(tmp_path, "exit-early")


def test_start_waits_for_a_new_ready_line(tmp_path: Path, children: list[KillableWorkerProcess]) -> None:
    first = start_child(tmp_path, "ready")
    children.append(first)
    first.kill()
    with pytest.raises(WorkerStartError, match="printed no ready line within 0 s") as caught:
        start_child(tmp_path, "silent", ready_timeout=0.0)  # the log's earlier ready line does not count
    pid = int(str(caught.value).split("Worker child ")[1].split()[0])
    assert is_gone(pid)


# read_step_history


class Only(Step[int]):
    def __init__(self, flow: NamedFlow[int]) -> None:
        self.flow = flow

    def execute(self, context: Context, input: int) -> StepDecision:
        return graceful_complete(input)


def test_read_step_history_lists_a_one_step_flow(tmp_path: Path) -> None:
    with PrivateDexEngine.start(tmp_path / "engine") as engine:
        flow = SingleStepFlow(unique_name("history"), Only)
        cache_dir = tmp_path / "cache"
        cache_dir.mkdir()
        harness = open_harness([flow], address=engine.server_address, cache_dir=cache_dir)
        try:
            flow_id = unique_name("flow")
            harness.client.start_flow(flow, flow_id, 5, StartFlowOptions())
            harness.result(flow_id)
        finally:
            harness.close()
        entries = read_step_history(engine.server_address, flow_id)
        assert read_step_history(engine.server_address, flow_id, page_size=1) == entries
    assert (tmp_path / "engine").is_dir()  # a caller's state directory is kept
    assert completed_step_types(entries) == ["Only"]
    [completed] = [entry for entry in entries if entry.event_type == EXECUTE_COMPLETED]
    assert (completed.step_type, completed.step_execution_id, completed.attempt) == ("Only", "Only-1", 1)
    kinds = [entry.event_type for entry in entries]
    assert kinds[0] == "flow_started_or_continued" and kinds[-1] == "flow_closed"
    assert [entry.event_id for entry in entries] == sorted(entry.event_id for entry in entries)


def test_history_entry_flattens_rpcs_failures_and_other_events() -> None:
    rpc = history_entry(pb.FlowHistoryEvent(event_id=4, rpc_execution_completed=pb.RpcExecutionCompletedEvent(
        rpc_name="resolve_interrupt")))
    assert (rpc.event_type, rpc.rpc_name, rpc.step_type, rpc.event_id) == (RPC_COMPLETED, "resolve_interrupt", "", 4)
    failed = history_entry(pb.FlowHistoryEvent(step_execute_failed=pb.StepExecuteFailedEvent(
        context=pb.StepMethodEventContext(step_type="CallTool", step_execution_id="CallTool-2"),
        output=pb.StepMethodFailedOutput(failure=pb.StepMethodFailure(attempt=3)))))
    assert (failed.event_type, failed.step_type, failed.step_execution_id, failed.attempt, failed.rpc_name) == (
        EXECUTE_FAILED, "CallTool", "CallTool-2", 3, None)
    closed = history_entry(pb.FlowHistoryEvent(flow_closed=pb.FlowClosedHistoryEvent()))
    assert (closed.event_type, closed.step_type, closed.attempt) == ("flow_closed", "", 0)
    assert history_entry(pb.FlowHistoryEvent()).event_type == "unknown"
    assert completed_step_types([rpc, failed, closed]) == []
