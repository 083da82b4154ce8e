"""Hard-delete Attributes (protocol 3): handlers read the value inline, setting ``None`` or
deleting removes it (it then reads as absent), a start-time initial value works, and the secret
never appears in the Flow's history."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from dex import (
    Attribute,
    Context,
    PersistenceSchema,
    RPCResult,
    StartFlowOptions,
    Step,
    StepDecision,
    StepList,
    dead_end,
    rpc,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow, eventually

ABSENT = "<absent>"
secret = Attribute("ApiKey", str, hard_delete_on_null=True)


def read_secret(context: Context) -> str:
    value = cast(str | None, secret.get(context))
    return ABSENT if value is None else value


class Store(Step[str]):
    def __init__(self, flow: SecretFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("initial", read_secret(context))
        secret.set(context, f"sk-live-{input}-7c1f")
        return dead_end()


class SecretFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Store(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(secret)

    @rpc
    def reveal(self, context: Context) -> RPCResult[str]:
        return RPCResult(read_secret(context))

    @rpc
    def clear(self, context: Context, input: bool) -> RPCResult[bool]:
        if input:
            secret.set(context, cast(str, None))
        else:
            secret.delete(context)
        return RPCResult(True)


def test_hard_delete_attribute_lifecycle_and_history(dex: DexFixture) -> None:
    flow = SecretFlow(dex.flow_type())
    harness = dex.start(flow)
    first, second = dex.flow_id("set-none"), dex.flow_id("delete")
    harness.client.start_flow(flow, first, "first")
    harness.client.start_flow(flow, second, "second", StartFlowOptions().with_attribute(
        secret, "sk-initial-0a0a"))
    assert sorted(str(v) for v in flow.probe.wait("initial", 2)) == [ABSENT, "sk-initial-0a0a"]
    def reveals(flow_id: str, value: str) -> Callable[[], bool]:
        return lambda: harness.client.invoke_rpc(flow.reveal, flow_id) == value

    for flow_id, value in ((first, "sk-live-first-7c1f"), (second, "sk-live-second-7c1f")):
        eventually(reveals(flow_id, value), what="the secret stored")
    assert harness.client.invoke_rpc(flow.clear, first, True) is True
    assert harness.client.invoke_rpc(flow.clear, second, False) is True
    for flow_id in (first, second):
        assert harness.client.invoke_rpc(flow.reveal, flow_id) == ABSENT
        recorded = b"".join(event.SerializeToString() for event in harness.history(flow_id))
        for leaked in (b"sk-live-", b"sk-initial-0a0a"):
            assert leaked not in recorded, f"{leaked!r} is in the history of {flow_id}"
