"""Engine core, a publish and the Waits it satisfies commit together: an RPC's publish and a Step
result's publish each complete the Waits they satisfy in their own transaction (one commit, one fsync),
as the history's transaction numbers show."""

from __future__ import annotations

from pathlib import Path

from dex import (
    AsyncContext,
    Channel,
    Context,
    PersistenceSchema,
    RPCResult,
    Step,
    StepDecision,
    StepList,
    StepMovement,
    Wait,
    dead_end,
    go_to_many,
    graceful_complete,
    rpc,
)
from dex.dexpb import dex_pb2 as pb

from dex_agents.engine.server import EngineServer
from tests.engine.harness import NamedFlow, open_harness, unique_name
from tests.engine.probes import eventually

INBOX = Channel("Inbox", str)
DONE = Channel("Done", str)


class AwaitInbox(Step[None]):
    async def wait_for(self, context: AsyncContext, input: None) -> Wait:  # type: ignore[override]
        return Wait.until(INBOX.for_one())

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        return go_to_many(StepMovement.of(Publisher, None), StepMovement.of(AwaitDone, None))


class Publisher(Step[None]):
    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        DONE.publish(context, "done")
        return dead_end()


class AwaitDone(Step[None]):
    async def wait_for(self, context: AsyncContext, input: None) -> Wait:  # type: ignore[override]
        return Wait.until(DONE.for_one())

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        return graceful_complete("finished")


class InboxFlow(NamedFlow[None]):
    def get_steps(self) -> StepList[None]:
        return StepList.start_step(AwaitInbox()).other_steps(Publisher(), AwaitDone())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(INBOX, DONE)

    @rpc
    def post(self, context: Context, input: str) -> RPCResult[bool]:
        INBOX.publish(context, input)
        return RPCResult(True)


def _events(server: EngineServer, flow_id: str) -> list[tuple[str, str, int]]:
    """(event kind, Step execution id, transaction) of the run's history, in order."""
    with server.engine.lock:
        rows = server.engine.store.db.execute(
            "SELECT h.event, h.txn FROM history h JOIN flows f ON f.uid = h.uid WHERE f.flow_id=? "
            "ORDER BY h.event_id", (flow_id,)).fetchall()
    out: list[tuple[str, str, int]] = []
    for blob, txn in rows:
        event = pb.FlowHistoryEvent()
        event.ParseFromString(blob)
        kind = event.WhichOneof("payload") or "?"
        inner = getattr(event, kind)
        context = getattr(inner, "context", None)
        seid = getattr(context, "step_execution_id", "") if context is not None else ""
        out.append((kind, seid, int(txn)))
    return out


def test_a_publish_and_the_waits_it_satisfies_are_one_commit(tmp_path: Path) -> None:
    server = EngineServer(tmp_path / "engine.db")
    server.start()
    try:
        flow = InboxFlow(unique_name("one-commit"))
        harness = open_harness([flow], address=server.address, cache_dir=tmp_path / "cache", async_worker=True)
        try:
            flow_id = unique_name("flow")
            harness.client.start_flow(flow, flow_id, None)

            def parked() -> bool:
                return any(kind == "step_wait_for_completed" and seid.startswith("AwaitInbox")
                           for kind, seid, _ in _events(server, flow_id))

            eventually(parked, what="AwaitInbox waiting", timeout=10)
            assert harness.client.invoke_rpc(flow.post, flow_id, "hello") is True
            assert harness.result(flow_id).single_output(str) == "finished"
        finally:
            harness.close()
        events = _events(server, flow_id)
    finally:
        server.stop(grace=0)
    rpc_txn = next(txn for kind, _, txn in events if kind == "rpc_execution_completed")
    inbox_pending = next(txn for kind, seid, txn in events
                         if kind == "step_execute_pending" and seid.startswith("AwaitInbox"))
    assert inbox_pending == rpc_txn, "the RPC's publish and the Wait it satisfied are one transaction"
    published_txn = next(txn for kind, seid, txn in events
                         if kind == "step_execute_completed" and seid.startswith("Publisher"))
    done_pending = [txn for kind, seid, txn in events
                    if kind == "step_execute_pending" and seid.startswith("AwaitDone")]
    assert done_pending, events
    done_wait_stored = next(txn for kind, seid, txn in events
                            if kind == "step_wait_for_completed" and seid.startswith("AwaitDone"))
    assert done_pending[0] in (published_txn, done_wait_stored), (
        "the Wait completes in the commit that satisfied it: the publish's, or its own storing if the "
        "message came first")
