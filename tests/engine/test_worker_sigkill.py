"""Worker loss: a pull Worker process is SIGKILLed while its handler runs. A task that sent no
output frame is re-delivered to the next Worker with the same attempt number; a task that had
sent an output frame (a heartbeat) counts as a failed attempt and is retried by policy; the Step's
lock is held while it runs and does not outlive the loss (no deadlock, the next run commits). Two Workers
may serve one Flow type, and one may leave (graceful stop) while the other finishes the work."""

from __future__ import annotations

from pathlib import Path

import pytest
from dex import FlowStatus, RpcLockConflictError

from tests.engine.conftest import DexFixture
from tests.engine.harness import FLOW_WAIT, eventually
from tests.engine.kill_flow import RELEASE, KillFlow, logged_attempts, reached_marker
from tests.engine.test_basic_flow import ChainFlow


@pytest.mark.parametrize(("mode", "second_attempt"), [("silent", 1), ("frame", 2)],
                         ids=["no-output-frame-redelivers-same-attempt", "output-frame-retries-next-attempt"])
def test_worker_sigkill_during_a_task(dex: DexFixture, tmp_path: Path, mode: str, second_attempt: int) -> None:
    gate_dir = tmp_path / "gate"
    gate_dir.mkdir()
    flow_type = dex.flow_type(mode)
    flow = KillFlow(flow_type, gate_dir)
    client = dex.client(flow)
    first = dex.worker_process(flow_type=flow_type, gate_dir=gate_dir)
    flow_id = dex.flow_id(mode)
    client.start_flow(flow, flow_id, mode)
    eventually(lambda: reached_marker(gate_dir, first.pid).exists(), what="the first worker's handler at the gate")
    with pytest.raises(RpcLockConflictError):
        client.invoke_rpc(flow.locked_read, flow_id)
    first.kill()
    (gate_dir / RELEASE).touch()
    second = dex.worker_process(flow_type=flow_type, gate_dir=gate_dir)
    result = client.wait_for_flow(flow_id, timeout=FLOW_WAIT)
    assert result.status is FlowStatus.COMPLETED
    assert result.single_output(int) == second_attempt
    assert logged_attempts(gate_dir) == [(1, first.pid), (second_attempt, second.pid)]
    assert client.invoke_rpc(flow.read_holder, flow_id) == f"pid {second.pid}", "the lock did not outlive the loss"


def test_two_workers_share_a_flow_type_and_one_can_leave(dex: DexFixture) -> None:
    flow = ChainFlow(dex.flow_type())
    leaving = dex.start(flow)
    staying = dex.start(flow, async_worker=True)
    flow_ids = [dex.flow_id(f"w{n}") for n in range(8)]
    for n, flow_id in enumerate(flow_ids):
        staying.client.start_flow(flow, flow_id, n)
    leaving.stop_worker()
    for n, flow_id in enumerate(flow_ids):
        result = staying.result(flow_id)
        assert (result.status, result.single_output(int)) == (FlowStatus.COMPLETED, 2 * n)
